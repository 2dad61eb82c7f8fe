// Fault scenarios: relays as separate processes against the test
// MariaDB and librdkafka's mock cluster, faults injected on purpose, and each
// scenario ends with the verdict of outbox-check, an independent reader of
// the table and the topics. Figures are printed as "FIGURES {json}" lines
// (and appended to $OUTBOX_FAULTS_FIGURES) for docs/RELIABILITY.md.
//
// Sizes scale with OUTBOX_FAULTS_SCALE and the workload seed is
// OUTBOX_FAULTS_SEED, so the same scenarios can be rerun with other values.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "support/metrics_text.h"
#include "support/scenario.h"
#include "support/test_broker.h"
#include "support/test_env.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

int64_t Scaled(int64_t n) { return std::max<int64_t>(1, std::llround(n * ScenarioScale())); }

// Partitions per topic grow with OUTBOX_FAULTS_SCALE: librdkafka's mock
// cluster keeps only a few MB per partition and deletes the oldest messages
// beyond that, which outbox-check would report as lost (at scale 2 the
// three-relay scenario "lost" 563 of 198,772 events to it).
int ScaledPartitions() { return std::max(4, static_cast<int>(std::ceil(4 * ScenarioScale()))); }

// The per-scenario world: a database, a mock Kafka cluster with the two
// topics outbox-load writes to, a scratch directory, and the workload's seed
// (ScenarioSeed).
struct World {
  World(const std::string& name, uint64_t seed, int brokers = 1,
        int partitions = ScaledPartitions())
      : seed(seed),
        dir(ScratchDir(name)),
        cluster(brokers),
        db("faults_" + name),
        mysql(db.mysql()) {
    cluster.CreateTopic("outbox.event.Order", partitions);
    cluster.CreateTopic("outbox.event.Payment", partitions);
    std::cout << "scenario " << name << ": logs in " << dir << std::endl;
  }
  RelaySpec Spec(int64_t lease_ms = RelaySpec{}.lease_ms) const {
    RelaySpec s;
    s.mysql = mysql;
    s.bootstrap = cluster.bootstrap();
    s.lease_ms = lease_ms;
    return s;
  }
  // Writes the workload; returns the number of events written.
  int64_t Load(const std::vector<std::string>& args, const std::string& tag) {
    std::string json = dir + "/load-" + tag + ".json";
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--json", json, "--aggregate-types", "Order,Payment", "--quiet"});
    int rc = RunLoad(mysql, a, dir + "/load-" + tag + ".log", 10min);
    REQUIRE(rc == 0);
    auto j = nlohmann::json::parse(ReadFile(json));
    return j["events"].get<int64_t>();
  }
  // Writes `aggregates` aggregates of 2 to 20 events each in bulk before the
  // relays start; returns the number of events written.
  int64_t Preload(int64_t aggregates) {
    return Load({"--aggregates", std::to_string(aggregates), "--events", "2..20", "--bulk",
                 "--seed", std::to_string(seed)},
                "preload");
  }
  // Starts writing about `rate` events/s for about `seconds` (scaled) in the
  // background, the way services do while the relays run.
  void StartSteady(double rate, double seconds, uint64_t load_seed, const std::string& tag) {
    int64_t aggregates = std::max<int64_t>(1, std::llround(rate * seconds * ScenarioScale() / 11));
    steady_json = dir + "/load-" + tag + ".json";
    REQUIRE(StartLoad(&steady, mysql,
                      {"--aggregates", std::to_string(aggregates), "--events", "2..20", "--rate",
                       std::to_string(rate), "--writers", "4", "--seed", std::to_string(load_seed),
                       "--aggregate-types", "Order,Payment", "--json", steady_json, "--quiet"},
                      dir + "/load-" + tag + ".log"));
  }
  // Waits for the background load; returns the events it wrote.
  // Starts `relays`, then the services' writes: about 1500 events/s for
  // about `seconds` (StartSteady, the seed after the preload's).
  void StartUnderLoad(std::initializer_list<RelayProcess*> relays, double seconds = 20) {
    for (RelayProcess* r : relays) REQUIRE(r->Start());
    StartSteady(1500, seconds, seed + 1, "steady");
  }
  int64_t FinishSteady() {
    auto st = steady.Wait(10min);
    REQUIRE(st);
    REQUIRE(WIFEXITED(*st));
    REQUIRE(WEXITSTATUS(*st) == 0);
    return nlohmann::json::parse(ReadFile(steady_json))["events"].get<int64_t>();
  }
  bool WaitDrained(std::chrono::milliseconds timeout) {
    return WaitFor([&] { return UnsentRows(mysql) == 0; }, timeout);
  }
  // Waits for the background load, then for the table to drain; returns the
  // events the load wrote.
  int64_t FinishSteadyAndDrain() {
    const int64_t written = FinishSteady();
    REQUIRE(WaitDrained(5min));
    return written;
  }
  // How the scenario ends (FinishScenario) against this world.
  CheckResult Finish(std::vector<std::string> args, const std::string& name,
                     const nlohmann::json& extra, bool ordered = true);

  const uint64_t seed;
  std::string dir;
  TestBroker cluster;
  TestDatabase db;
  MysqlConfig mysql;
  LoggedProcess steady;
  std::string steady_json;
};

// The checker's JSON as figures for the report.
nlohmann::json Figures(const CheckResult& c) {
  const auto& r = c.report;
  int64_t unsent = 0;
  for (auto& [status, n] : r["rows_by_status"].items())
    if (status != "SENT") unsent += n.get<int64_t>();
  return {{"events", r["rows"]},
          {"lost", r["lost"]},
          {"duplicates", r["duplicate_copies"]},
          {"unsent", unsent},
          {"order_violations", r["order_violations"].get<int64_t>() +
                                   r["split_aggregates"].get<int64_t>() +
                                   r["overtaken"].get<int64_t>()},
          {"verdict", r["verdict"]}};
}

void RequireVerdictOk(const CheckResult& c, bool ordered) {
  INFO(c.output);
  REQUIRE(c.report.is_object());
  CHECK(c.report["lost"] == 0);
  if (ordered) {
    CHECK(c.report["order_violations"] == 0);
    CHECK(c.report["split_aggregates"] == 0);
    CHECK(c.report["overtaken"] == 0);
  }
  CHECK(c.report["mismatched_messages"] == 0);
  CHECK(c.report["unmatched_messages"] == 0);
  CHECK(c.report["verdict"] == "OK");
  CHECK(c.exit_code == 0);
}

// Stops each relay (SIGTERM, 60 s to finish) and requires a clean exit.
void StopAll(std::initializer_list<RelayProcess*> relays) {
  for (RelayProcess* r : relays) {
    auto st = r->Stop(60s);
    REQUIRE(st);
    CHECK(WIFEXITED(*st));
    CHECK(WEXITSTATUS(*st) == 0);
  }
}

// The checker's arguments for a drained table: `events` rows, all SENT, at
// most `max_duplicates` extra copies (unbounded if not given).
std::vector<std::string> AllSent(int64_t events, std::optional<int64_t> max_duplicates = {}) {
  std::vector<std::string> args = {"--expect-all-sent", "--expect-rows", std::to_string(events)};
  if (max_duplicates) {
    args.push_back("--max-duplicates");
    args.push_back(std::to_string(*max_duplicates));
  }
  return args;
}

// How every scenario ends: the checker reads the whole table and topic
// (`args` say what to expect), its verdict must be OK, and its figures, with
// the scenario's own in `extra`, are recorded under `name`. Unless
// `ordered`, per-aggregate order is not checked (ordering: none).
CheckResult FinishScenario(const MysqlConfig& mysql, const std::string& bootstrap,
                           const std::string& dir, std::vector<std::string> args,
                           const std::string& name, const nlohmann::json& extra,
                           bool ordered = true) {
  if (!ordered) args.push_back("--no-order");
  CheckResult c = RunCheck(mysql, bootstrap, args, dir, "final");
  RequireVerdictOk(c, ordered);
  nlohmann::json f = Figures(c);
  f.update(extra);
  f["wakeup"] = RelaySpec::DefaultWakeup();
  RecordFigures(name, f);
  return c;
}

CheckResult World::Finish(std::vector<std::string> args, const std::string& name,
                          const nlohmann::json& extra, bool ordered) {
  return FinishScenario(mysql, cluster.bootstrap(), dir, std::move(args), name, extra, ordered);
}

// The sum of a counter over relays.
double SumMetric(std::initializer_list<RelayProcess*> relays, const std::string& name) {
  double sum = 0;
  for (RelayProcess* r : relays) sum += r->Metric(name);
  return sum;
}

// What an outage showed, looked at every 200 ms: /readyz 503, and `gauge`
// (outbox_kafka_up, outbox_database_up) at 0.
struct OutageSeen {
  void Look(RelayProcess& relay, const std::string& gauge) {
    not_ready = not_ready || relay.ReadyzStatus() == 503;
    std::string m = relay.Metrics();
    gauge_down = gauge_down || (!m.empty() && MetricSum(m, gauge) == 0);
    std::this_thread::sleep_for(200ms);
  }
  bool not_ready = false;
  bool gauge_down = false;
};

}  // namespace

TEST_CASE(
    "three relays at once drain 100000 events with nothing lost or duplicated and share "
    "the work",
    "[faults][replicas][wakeup]") {
  World w("replicas", ScenarioSeed(101));
  const int64_t aggregates = Scaled(9100);  // 2..20 events each: ~100,000 events
  auto t0 = Clock::now();
  int64_t events = w.Load({"--aggregates", std::to_string(aggregates / 2), "--events", "2..20",
                           "--bulk", "--seed", std::to_string(w.seed)},
                          "preload");
  RelaySpec spec = w.Spec();
  std::vector<std::unique_ptr<RelayProcess>> relays;
  for (int i = 1; i <= 3; ++i) {
    relays.push_back(std::make_unique<RelayProcess>("relay" + std::to_string(i), w.dir, spec));
    REQUIRE(relays.back()->Start());
  }
  // The second half is written while the three drain, by 4 writers whose
  // commits interleave out of id order, as services' do.
  events += w.Load(
      {"--aggregates", std::to_string(aggregates - aggregates / 2), "--events", "2..20", "--bulk",
       "--bulk-rows", "50", "--writers", "4", "--seed", std::to_string(w.seed + 1)},
      "during");
  REQUIRE(w.WaitDrained(10min));
  double drain_s = Seconds(t0);
  // A relay counts an event published after its SENT commits: the last
  // settles' counts may still be on their way when the table is drained.
  std::vector<double> published;
  double total = 0;
  WaitFor(
      [&] {
        published.clear();
        total = 0;
        for (auto& r : relays) {
          published.push_back(r->Metric("outbox_events_published_total"));
          total += published.back();
        }
        return total == events;
      },
      30s, 50ms);
  StopAll({relays[0].get(), relays[1].get(), relays[2].get()});
  CheckResult c = w.Finish(AllSent(events, 0), "replicas",
                           {{"seed", w.seed},
                            {"relays", 3},
                            {"published_per_relay", published},
                            {"drain_seconds", drain_s},
                            {"events_per_second", events / drain_s}});
  CHECK(c.report["duplicate_copies"] == 0);
  // Every event was published by exactly one relay, and each did a share.
  CHECK(total == events);
  for (size_t i = 0; i < published.size(); ++i) {
    INFO("relay" << i + 1 << " published " << published[i] << " of " << total);
    CHECK(published[i] > 0.05 * total);
  }
}

namespace {

// The acknowledged rows a relay's SENT group holds at most
// (SentGrouping::kMaxRows, src/relay/settle_timing.h): a relay killed or
// stalled past its lease leaves them SENDING, and they go again.
constexpr int64_t kSentGroupRows = 32;

// What a relay holds at most, and so sends again at most after a crash or a
// stall past its lease: its in-flight window and its SENT group.
int64_t HeldAtMost(const RelaySpec& spec) {
  return int64_t{spec.batch_size} * spec.max_inflight_batches + kSentGroupRows;
}

int64_t SentRows(const MysqlConfig& mysql) {
  auto by = RowsByStatus(mysql);
  return by.count("SENT") ? by["SENT"] : 0;
}

// Waits until the SENT count grows past `from`; returns the seconds it took,
// or -1 on timeout.
double SecondsUntilProgress(const MysqlConfig& mysql, int64_t from,
                            std::chrono::milliseconds timeout) {
  auto t0 = Clock::now();
  if (!WaitFor([&] { return SentRows(mysql) > from; }, timeout)) return -1;
  return Seconds(t0);
}

// The database's clock now, unix seconds.
int64_t DbNow(TestDatabase& db) { return db.QueryInt("SELECT UNIX_TIMESTAMP(NOW())"); }

// Rows still SENDING under a claim made at or before `db_time` (updated_at
// is written by the claim; a reclaim or a settle rewrites it).
int64_t HeldSince(TestDatabase& db, int64_t db_time) {
  return db.QueryInt(
      "SELECT COUNT(*) FROM t_outbox WHERE status = 'SENDING' AND updated_at <= FROM_UNIXTIME(" +
      std::to_string(db_time) + ")");
}

// Stops `relay` at a moment it holds claimed rows. At a steady rate a relay
// settles each batch within milliseconds, so a SIGSTOP can land between two
// batches, and then there is nothing to take over. A row claimed before the
// stop and still SENDING a second later is the stopped relay's (the other
// relay settles its own long before its lease): if there is none, the relay
// goes on and is stopped again. Sets when it was stopped, by the test's clock
// and by the database's; returns how many stops it took (0: it never held any).
int FreezeHoldingRows(RelayProcess& relay, TestDatabase& db, Clock::time_point* stopped,
                      int64_t* stopped_db) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    relay.Signal(SIGSTOP);
    *stopped = Clock::now();
    *stopped_db = DbNow(db);
    std::this_thread::sleep_for(1s);
    if (HeldSince(db, *stopped_db) > 0) return attempt + 1;
    relay.Signal(SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + 37 * attempt));
  }
  return 0;
}

}  // namespace

TEST_CASE(
    "a relay killed with SIGKILL every few seconds and restarted loses nothing and its "
    "duplicates stay within what it had in flight",
    "[faults][kill9][wakeup]") {
  World w("kill9", ScenarioSeed(202));
  int64_t events = w.Preload(Scaled(900));
  RelaySpec spec = w.Spec(3000);
  RelayProcess victim("victim", w.dir, spec);
  RelayProcess steady("steady", w.dir, spec);
  w.StartUnderLoad({&victim, &steady});
  std::mt19937_64 rng(w.seed);
  std::uniform_int_distribution<int> pause_ms(1500, 3000);
  int done = 0;
  double reclaimed_by_victim = 0;
  auto last_kill = Clock::now();
  int64_t last_kill_db = 0;
  while (done < 6 && w.steady.running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
    reclaimed_by_victim += victim.Metric("outbox_leases_reclaimed_total");
    victim.Signal(SIGKILL);
    last_kill = Clock::now();
    last_kill_db = DbNow(w.db);
    REQUIRE(victim.process().Wait(10s));
    ++done;
    REQUIRE(victim.Start());
  }
  // Recovered once no row is SENDING under a claim made before the last
  // kill: the killed relay's leases expired and another relay took them.
  REQUIRE(WaitFor([&] { return HeldSince(w.db, last_kill_db) == 0; }, 2min));
  double recover_s = Seconds(last_kill);
  REQUIRE(done >= 3);  // the workload must outlast several kills to mean anything
  events += w.FinishSteadyAndDrain();
  double reclaimed =
      SumMetric({&steady, &victim}, "outbox_leases_reclaimed_total") + reclaimed_by_victim;
  StopAll({&victim, &steady});
  // A killed relay had at most max_inflight_batches batches of batch_size
  // rows claimed, and up to kSentGroupRows acknowledged rows waiting in its
  // SENT group: only those can be published again after their lease.
  const int64_t bound = int64_t{done} * HeldAtMost(spec);
  CheckResult c = w.Finish(AllSent(events, bound), "kill9",
                           {{"seed", w.seed},
                            {"kills", done},
                            {"duplicate_bound", bound},
                            {"leases_reclaimed", reclaimed},
                            {"recover_seconds", recover_s}});
  CHECK(c.report["duplicate_copies"].get<int64_t>() <= bound);
  CHECK(reclaimed > 0);  // the kills did leave leases to take over
}

TEST_CASE(
    "a relay frozen past its lease while another takes over loses nothing and its late "
    "settles are counted as stale",
    "[faults][freeze]") {
  World w("freeze", ScenarioSeed(303));
  int64_t events = w.Preload(Scaled(900));
  RelaySpec spec = w.Spec(3000);
  RelayProcess frozen("frozen", w.dir, spec);
  RelayProcess other("other", w.dir, spec);
  w.StartUnderLoad({&frozen, &other}, 15);
  std::this_thread::sleep_for(3s);
  REQUIRE(frozen.Metric("outbox_events_published_total") > 0);
  auto stopped = Clock::now();
  int64_t stopped_db = 0;
  const int stops = FreezeHoldingRows(frozen, w.db, &stopped, &stopped_db);
  REQUIRE(stops > 0);
  // The other relay takes over what the frozen one had claimed once the
  // leases expire: then nothing is SENDING under a claim from before the stop.
  bool took_over = WaitFor(
      [&] {
        return other.Metric("outbox_leases_reclaimed_total") > 0 &&
               HeldSince(w.db, stopped_db) == 0;
      },
      60s);
  double recover_s = Seconds(stopped);
  // Frozen a while longer, so its producer's messages time out too.
  std::this_thread::sleep_for(2s);
  double frozen_s = Seconds(stopped);
  frozen.Signal(SIGCONT);
  REQUIRE(took_over);
  // Its late settles find the rows no longer theirs: counted, not applied.
  CHECK(WaitFor([&] { return frozen.Metric("outbox_stale_transitions_total") > 0; }, 60s));
  events += w.FinishSteadyAndDrain();
  double stale = frozen.Metric("outbox_stale_transitions_total");
  double reclaimed = other.Metric("outbox_leases_reclaimed_total");
  StopAll({&frozen, &other});
  const int64_t bound = HeldAtMost(spec);
  CheckResult c = w.Finish(AllSent(events, bound), "freeze",
                           {{"seed", w.seed},
                            {"stops", stops},
                            {"frozen_seconds", frozen_s},
                            {"stale_transitions", stale},
                            {"leases_reclaimed", reclaimed},
                            {"duplicate_bound", bound},
                            {"recover_seconds", recover_s}});
  CHECK(c.report["sending_rows"] == 0);
}

TEST_CASE(
    "every broker down for 10 s mid-drain: failures are counted and delivery resumes by "
    "itself with nothing lost or DEAD",
    "[faults][broker-outage][mock-faults]") {
  World w("broker_outage", ScenarioSeed(404));
  int64_t events = w.Preload(Scaled(900));
  RelaySpec spec =
      w.Spec(4000);  // message.timeout.ms 2 s: in-flight messages fail during the outage
  spec.max_attempts = 10;
  RelayProcess a("a", w.dir, spec);
  RelayProcess b("b", w.dir, spec);
  // Services keep writing through the outage.
  w.StartUnderLoad({&a, &b});
  std::this_thread::sleep_for(3s);
  w.cluster.SetAllBrokersDown(true);
  auto down = Clock::now();
  OutageSeen seen;
  while (Seconds(down) < 10) seen.Look(a, "outbox_kafka_up");
  int64_t sent_at_up = SentRows(w.mysql);
  w.cluster.SetAllBrokersDown(false);
  double recover_s = SecondsUntilProgress(w.mysql, sent_at_up, 2min);
  events += w.FinishSteadyAndDrain();
  double failures = SumMetric({&a, &b}, "outbox_publish_failures_total");
  CHECK(seen.not_ready);
  CHECK(seen.gauge_down);  // outbox_kafka_up
  CHECK(failures > 0);
  CHECK(a.ReadyzStatus() == 200);
  StopAll({&a, &b});
  CheckResult c = w.Finish(AllSent(events), "broker_outage",
                           {{"seed", w.seed},
                            {"outage_seconds", 10},
                            {"publish_failures", failures},
                            {"recover_seconds", recover_s}});
  CHECK(c.report["rows_by_status"].value("DEAD", 0) == 0);
}

namespace {

// outbox_duplicates_risk_total{cause} summed over `relays`.
double DuplicateRisk(std::initializer_list<RelayProcess*> relays, const std::string& cause) {
  double sum = 0;
  for (RelayProcess* r : relays)
    sum += MetricSum(r->Metrics(), "outbox_duplicates_risk_total", "cause=\"" + cause + "\"");
  return sum;
}

// The events `relay` took back from its producer's queue while their own
// batch's budget had not ended (its log's "events taken back ..." lines with
// budget_left_ms above 0): the price of taking back the whole queue at once.
int64_t PurgedWithBudgetLeft(const RelayProcess& relay) {
  std::istringstream log(ReadFile(relay.log_path()));
  int64_t n = 0;
  auto field = [](const std::string& line, const std::string& key) {
    const size_t at = line.find(" " + key + "=");
    return at == std::string::npos ? int64_t{0} : std::atoll(line.c_str() + at + key.size() + 2);
  };
  for (std::string line; std::getline(log, line);) {
    if (line.find("events taken back from the producer's queue") == std::string::npos) continue;
    if (field(line, "budget_left_ms") > 0) n += field(line, "count");
  }
  return n;
}

// How the events of a broker fault of twice the lease come: all before the
// relays start, or at a steady rate while they run.
enum class Arrival { kPreload, kSteady };

// Writes the scenario's events and starts `relays`; returns once the fault
// may begin: mid-drain with both relays' batches in the producer (30% of the
// preload SENT), or 4 s into a steady 1,000 events/s that goes on for about
// 25 s, through the fault and after it. Returns the preloaded events (the
// steady load's are counted when it ends).
int64_t StartBrokerFaultLoad(World& w, Arrival arrival,
                             std::initializer_list<RelayProcess*> relays) {
  const int64_t preload = arrival == Arrival::kPreload ? w.Preload(Scaled(5400))  // ~60,000
                                                       : 0;
  for (RelayProcess* r : relays) REQUIRE(r->Start());
  if (arrival == Arrival::kPreload) {
    REQUIRE(WaitFor([&] { return SentRows(w.mysql) >= preload * 3 / 10; }, 5min, 20ms));
    return preload;
  }
  w.StartSteady(1000, 25, w.seed + 1, "steady");
  std::this_thread::sleep_for(4s);
  REQUIRE(SentRows(w.mysql) > 0);
  return preload;
}

// Two relays with a 5 s lease relay events (StartBrokerFaultLoad); then
// `fault(true)` holds for twice the lease, then `fault(false)`. Nothing may
// be lost or reordered, and the duplicates are at most the rows whose
// attempt failed although its request was on the wire. The test counts
// those from the relays' delivery reports: librdkafka's message status
// "possibly persisted" on a failed delivery, which each relay counts in
// outbox_duplicates_risk_total{cause="maybe_written"} when it retries the
// row; the checker's duplicate count (every copy of an outbox_id in the
// topics beyond the first) must not exceed their sum. No lease may run out
// (cause="lease_expired" stays 0): every batch settled within its budget,
// and a message taken back from a producer's queue was never on the wire.
void BrokerFaultForTwiceTheLease(const std::string& name, uint64_t seed, Arrival arrival,
                                 const std::function<void(TestBroker&, bool)>& fault) {
  World w(name, ScenarioSeed(seed));
  const int64_t lease_ms = 5000;
  RelaySpec spec = w.Spec(lease_ms);
  spec.batch_size = 500;  // the default
  spec.max_attempts = 20;
  RelayProcess a("a", w.dir, spec);
  RelayProcess b("b", w.dir, spec);
  int64_t events = StartBrokerFaultLoad(w, arrival, {&a, &b});
  fault(w.cluster, true);
  auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(2 * lease_ms));
  fault(w.cluster, false);
  const double fault_s = Seconds(start);
  if (arrival == Arrival::kSteady) events += w.FinishSteady();
  REQUIRE(w.WaitDrained(5min));
  const double maybe_written = DuplicateRisk({&a, &b}, "maybe_written");
  const double lease_expired = DuplicateRisk({&a, &b}, "lease_expired");
  double purged = 0;
  for (RelayProcess* r : {&a, &b})
    purged += MetricSum(r->Metrics(), "outbox_publish_failures_total", "reason=\"purged\"");
  const double stale = SumMetric({&a, &b}, "outbox_stale_transitions_total");
  StopAll({&a, &b});
  const int64_t purged_early = PurgedWithBudgetLeft(a) + PurgedWithBudgetLeft(b);
  CheckResult c = w.Finish(AllSent(events), name,
                           {{"seed", w.seed},
                            {"lease_ms", lease_ms},
                            {"arrival", arrival == Arrival::kSteady ? "steady" : "preload"},
                            {"purged_with_budget_left", purged_early},
                            {"fault_seconds", fault_s},
                            {"risk_maybe_written", maybe_written},
                            {"risk_lease_expired", lease_expired},
                            {"duplicate_bound", maybe_written},
                            {"purged", purged},
                            {"stale_transitions", stale}});
  const int64_t duplicates = c.report["duplicate_copies"].get<int64_t>();
  INFO("duplicates " << duplicates << ", on the wire when the fault began " << maybe_written);
  CHECK(duplicates <= static_cast<int64_t>(maybe_written));
  CHECK(lease_expired == 0);
}

void BrokersDown(TestBroker& cluster, bool on) { cluster.SetAllBrokersDown(on); }

// Every answer 1.5 s late: the broker is up (a metadata probe answers within
// its 2 s), but a message queued behind the requests in flight can pass its
// claim's budget (lease/2 = 2.5 s) before it is sent.
void BrokersSlow(TestBroker& cluster, bool on) { cluster.SetRtt(on ? 1500 : 0); }

// Requests unanswered for as long as the freeze (a response already delayed
// comes at most that late after it): the connections stay up, nothing is
// acknowledged.
void BrokersFrozen(TestBroker& cluster, bool on) { cluster.SetRtt(on ? 10000 : 0); }

}  // namespace

TEST_CASE(
    "every broker down for twice the lease under a preload: two relays lose nothing and keep "
    "order and republish only what was on the wire when the brokers went down",
    "[faults][broker-outage-lease][mock-faults]") {
  BrokerFaultForTwiceTheLease("broker_outage_lease", 414, Arrival::kPreload, BrokersDown);
}

TEST_CASE(
    "every broker frozen for twice the lease under a preload: two relays lose nothing and keep "
    "order and republish only what was on the wire when the brokers froze",
    "[faults][broker-frozen-lease][mock-faults]") {
  BrokerFaultForTwiceTheLease("broker_frozen_lease", 424, Arrival::kPreload, BrokersFrozen);
}

TEST_CASE(
    "every broker down for twice the lease at a steady rate: two relays lose nothing and keep "
    "order and republish only what was on the wire when the brokers went down",
    "[faults][broker-outage-lease-steady][mock-faults]") {
  BrokerFaultForTwiceTheLease("broker_outage_lease_steady", 434, Arrival::kSteady, BrokersDown);
}

TEST_CASE(
    "every broker frozen for twice the lease at a steady rate: two relays lose nothing and keep "
    "order and republish only what was on the wire when the brokers froze",
    "[faults][broker-frozen-lease-steady][mock-faults]") {
  BrokerFaultForTwiceTheLease("broker_frozen_lease_steady", 444, Arrival::kSteady, BrokersFrozen);
}

TEST_CASE(
    "every broker answering 1.5 s late for twice the lease at a steady rate: two relays lose "
    "nothing and keep order and republish only what was on the wire",
    "[faults][broker-slow-lease-steady][mock-faults]") {
  BrokerFaultForTwiceTheLease("broker_slow_lease_steady", 454, Arrival::kSteady, BrokersSlow);
}

TEST_CASE("produce errors and added broker latency lose nothing and keep per-aggregate order",
          "[faults][broker-errors][mock-faults]") {
  World w("broker_errors", ScenarioSeed(505));
  int64_t events = w.Preload(Scaled(900));
  RelaySpec spec = w.Spec(6000);
  // One produce request in flight per connection, because of the mock: it
  // fails a pushed request without writing it, yet accepts the next request
  // of the same partition although its base sequence skips the failed one (a
  // real broker answers OUT_OF_ORDER_SEQUENCE_NUMBER); librdkafka then counts
  // the skipped batch as delivered. With pipelining that fakes losses no real
  // cluster produces (docs/RELIABILITY.md). One broker: no leader changes,
  // after which librdkafka 2.0.2 can resend out of order even so.
  spec.kafka_properties["max.in.flight.requests.per.connection"] = "1";
  RelayProcess a("a", w.dir, spec);
  RelayProcess b("b", w.dir, spec);
  w.StartUnderLoad({&a, &b});
  // Faults while services write: every 300 ms the next 1-3 produce requests
  // fail with an error picked at random (retriable ones that librdkafka
  // retries itself, and ones it hands back to the relay), and the round-trip
  // latency changes (0-120 ms). The injection stops with the writes: a
  // pushed error hits the next request whatever it carries, so injecting
  // into a trickle of retries would fail the same rows over and over.
  const std::vector<rd_kafka_resp_err_t> errors = {
      RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
      RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
      RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
      RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
      RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
      RD_KAFKA_RESP_ERR_INVALID_REQUIRED_ACKS,
      RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR};
  std::mt19937_64 rng(w.seed);
  int pushed = 0;
  auto t0 = Clock::now();
  while (w.steady.running()) {
    rd_kafka_resp_err_t err = errors[rng() % errors.size()];
    int count = 1 + static_cast<int>(rng() % 3);
    w.cluster.PushProduceErrors(err, count);
    pushed += count;
    w.cluster.SetRtt(static_cast<int>(rng() % 120));
    std::this_thread::sleep_for(300ms);
  }
  w.cluster.ClearProduceErrors();
  w.cluster.SetRtt(0);
  events += w.FinishSteadyAndDrain();
  double drain_s = Seconds(t0);
  double failures = SumMetric({&a, &b}, "outbox_publish_failures_total");
  StopAll({&a, &b});
  w.Finish(AllSent(events), "broker_errors",
           {{"seed", w.seed},
            {"failed_requests_injected", pushed},
            {"publish_failures", failures},
            {"drain_seconds", drain_s}});
  CHECK(failures > 0);  // some errors reached the relay and were retried
}

namespace {

// A MariaDB of its own (scripts/lib/mariadb.sh), so that stopping it does
// not disturb the other tests' server, with the binary log on (as scripts/test
// starts the shared one) for `wakeup: binlog`. Stopped and removed on
// destruction.
class OwnMariaDb {
 public:
  explicit OwnMariaDb(const std::string& dir) : dir_(dir + "/db") {
    std::string cmd = "bash -c 'set -e; . \"" OUTBOX_SOURCE_DIR
                      "/scripts/lib/common.sh\"; . \"" OUTBOX_SOURCE_DIR
                      "/scripts/lib/mariadb.sh\"; mariadb_start \"" +
                      dir_ + "\" $(mariadb_binlog_args)' >\"" + dir + "/mariadb-start.log\" 2>&1";
    ok_ = std::system(cmd.c_str()) == 0;
    std::string env = ReadFile(dir_ + "/env.sh");
    auto pos = env.find("OUTBOX_TEST_MYSQL_PORT=");
    if (ok_ && pos != std::string::npos) port_ = std::atoi(env.c_str() + pos + 23);
  }
  ~OwnMariaDb() {
    if (ok_ && !StopMariaDb(dir_)) std::cerr << "could not stop " << dir_ << "\n";
    std::string rm = "rm -rf '" + dir_ + "/data'";
    if (std::system(rm.c_str()) != 0) std::cerr << "could not remove " << dir_ << "\n";
  }
  bool ok() const { return ok_ && port_ > 0; }
  int port() const { return port_; }
  bool Stop() { return StopMariaDb(dir_); }
  bool Restart() { return RestartMariaDb(dir_); }

 private:
  std::string dir_;
  bool ok_ = false;
  int port_ = 0;
};

}  // namespace

TEST_CASE(
    "the database stopped and restarted mid-drain: readiness and outbox_database_up show "
    "the outage and the relay reconnects by itself",
    "[faults][db-restart][wakeup]") {
  std::string dir = ScratchDir("db_restart");
  OwnMariaDb server(dir);
  REQUIRE(server.ok());
  TestBroker cluster(1);
  cluster.CreateTopic("outbox.event.Order", ScaledPartitions());
  cluster.CreateTopic("outbox.event.Payment", ScaledPartitions());
  MysqlConfig mysql;
  mysql.host = "127.0.0.1";
  mysql.port = server.port();
  mysql.user = "root";
  mysql.database = "faults_db_restart";
  const uint64_t seed = ScenarioSeed(606);
  std::string load_json = dir + "/load-preload.json";
  REQUIRE(RunLoad(mysql,
                  {"--create-table", "--aggregates", std::to_string(Scaled(9000)), "--events",
                   "2..20", "--bulk", "--seed", std::to_string(seed), "--aggregate-types",
                   "Order,Payment", "--json", load_json, "--quiet"},
                  dir + "/load-preload.log", 5min) == 0);
  int64_t events = nlohmann::json::parse(ReadFile(load_json))["events"].get<int64_t>();
  RelaySpec spec;
  spec.mysql = mysql;
  spec.bootstrap = cluster.bootstrap();
  spec.lease_ms = 4000;
  spec.max_attempts = 10;
  RelayProcess relay("relay", dir, spec);
  REQUIRE(relay.Start());
  REQUIRE(WaitFor([&] { return SentRows(mysql) > events / 5; }, 2min));
  REQUIRE(server.Stop());
  auto down = Clock::now();
  OutageSeen seen;
  while (Seconds(down) < 6 || !(seen.not_ready && seen.gauge_down)) {
    if (Seconds(down) > 60) break;
    seen.Look(relay, "outbox_database_up");
  }
  double outage_s = Seconds(down);
  REQUIRE(server.Restart());
  auto up = Clock::now();
  CHECK(WaitFor([&] { return relay.ReadyzStatus() == 200; }, 60s));
  double ready_s = Seconds(up);
  CHECK(MetricSum(relay.Metrics(), "outbox_database_up") == 1);
  CHECK(relay.WaitWakeupsUp(60s));  // wakeup: binlog: the stream reconnected by itself
  REQUIRE(WaitFor([&] { return UnsentRows(mysql) == 0; }, 5min));
  double drained_s = Seconds(up);
  CHECK(seen.not_ready);
  CHECK(seen.gauge_down);  // outbox_database_up
  StopAll({&relay});
  FinishScenario(mysql, cluster.bootstrap(), dir, AllSent(events), "db_restart",
                 {{"seed", seed},
                  {"outage_seconds", outage_s},
                  {"ready_after_restart_seconds", ready_s},
                  {"recover_seconds", ready_s},
                  {"drained_after_restart_seconds", drained_s}});
}

TEST_CASE(
    "SIGTERM hands over gracefully: the stopped relay leaves nothing in SENDING and "
    "causes no duplicate",
    "[faults][handover][mock-faults]") {
  World w("handover", ScenarioSeed(707));
  int64_t events = w.Preload(Scaled(900));
  // The leaving relay holds 60 s leases, the staying one 4 s: a SENDING row
  // whose lease ends more than 30 s from now can only be the leaving one's.
  RelayProcess leaving("leaving", w.dir, w.Spec(60000));
  RelayProcess staying("staying", w.dir, w.Spec(4000));
  REQUIRE(staying.Start());
  // 30 ms to the broker: the leaving relay has batches in flight when told
  // to stop, and must wait for them and settle them.
  w.cluster.SetRtt(30);
  w.StartSteady(1500, 20, w.seed + 1, "steady");
  int handovers = 0;
  int64_t left_sending = 0;
  double max_stop_s = 0;
  for (int round = 1; round <= 3; ++round) {
    REQUIRE(leaving.Start());
    std::this_thread::sleep_for(4s);
    REQUIRE(leaving.Metric("outbox_events_published_total") > 0);
    auto t0 = Clock::now();
    auto st = leaving.Stop(90s);
    REQUIRE(st);
    max_stop_s = std::max(max_stop_s, Seconds(t0));
    CHECK(WIFEXITED(*st));
    CHECK(WEXITSTATUS(*st) == 0);
    ++handovers;
    int64_t n = w.db.QueryInt(
        "SELECT COUNT(*) FROM t_outbox WHERE status = 'SENDING' AND next_retry_at > NOW() + "
        "INTERVAL 30 SECOND");
    left_sending += n;
    CHECK(n == 0);
  }
  CHECK(ReadFile(leaving.log_path()).find("still in flight") == std::string::npos);
  events += w.FinishSteadyAndDrain();
  StopAll({&staying});
  w.Finish(AllSent(events, 0), "handover",
           {{"seed", w.seed},
            {"handovers", handovers},
            {"left_in_sending", left_sending},
            {"longest_stop_seconds", max_stop_s},
            {"recover_seconds", max_stop_s}});
}

TEST_CASE("ordering none: three relays with one killed by SIGKILL and restarted lose nothing",
          "[faults][none]") {
  World w("none", ScenarioSeed(808));
  int64_t events = w.Preload(Scaled(1500));
  RelaySpec spec = w.Spec(3000);
  spec.ordering = "none";
  RelayProcess victim("victim", w.dir, spec);
  RelayProcess a("a", w.dir, spec);
  RelayProcess b("b", w.dir, spec);
  w.StartUnderLoad({&victim, &a, &b});
  std::mt19937_64 rng(w.seed);
  std::uniform_int_distribution<int> pause_ms(1500, 3000);
  int kills = 0;
  while (kills < 3 && w.steady.running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
    victim.Signal(SIGKILL);
    REQUIRE(victim.process().Wait(10s));
    ++kills;
    REQUIRE(victim.Start());
  }
  REQUIRE(kills >= 2);
  events += w.FinishSteadyAndDrain();
  StopAll({&victim, &a, &b});
  const int64_t bound = int64_t{kills} * HeldAtMost(spec);
  CheckResult c = w.Finish(AllSent(events, bound), "none",
                           {{"seed", w.seed}, {"kills", kills}, {"duplicate_bound", bound}},
                           /*ordered=*/false);
  CHECK(c.report["duplicate_copies"].get<int64_t>() <= bound);
}
