// A fleet of relay processes sharing thirty outbox databases through Kafka's
// group protocol (SPEC §3 "Fleet", docs/DEPLOY.md "A fleet"): one mock
// cluster, several `outbox-relay run` processes with the same file, a steady
// load, and what the group does to them (a member joins, one is killed,
// one stops, the coordinator goes away, a reload adds a service). Ownership
// is read from each relay's outbox_service_owned; what reached Kafka is
// judged by outbox-check per database.
#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include "support/metrics_text.h"
#include "support/scenario.h"
#include "support/test_broker.h"
#include "support/test_env.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

constexpr int kServices = 30;
constexpr int kShards = 12;
constexpr int kSessionMs = 6000;
constexpr const char* kGroup = "relay-fleet";
constexpr const char* kShardTopic = "relay-shards";
// A loaded CI machine's allowance beyond the product's bound, for the
// waits; the measured times are printed as figures.
constexpr auto kSlack = 15s;
// The product's bound after a member dies or the coordinator returns: the
// 2.0.2 mock elects a leader a session timeout after a membership change.
constexpr auto kTakeover = std::chrono::milliseconds(2 * kSessionMs) + 5s;

std::string Name(int i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "svc%02d", i);
  return buf;
}

// One services[] entry of the file: database fleet_svcNN, topic fleet.svcNN.
std::string ServiceYaml(int i, const std::string& wakeup) {
  return "  - name: " + Name(i) +
         "\n    topic: \"fleet.{service}\"\n    mysql: {host: " + TestMysql("").host +
         ", port: " + std::to_string(TestMysql("").port) + ", user: " + RelayMysql("").user +
         RelayPasswordYaml() + ", database: fleet_" + Name(i) +
         ", tls: {mode: disabled}, connect_timeout_ms: 1000, read_timeout_ms: 5000}\n"
         "    batch_size: 50\n    poll_interval_ms: 50\n    lease_ms: 4000\n"
         "    gauge_interval_ms: 300\n    wakeup: " +
         wakeup + "\n";
}

// A steady writer: one event at a time, round-robin over the databases,
// about `per_second` in all; aggregates 1..20 of each database.
class Writer {
 public:
  Writer(int databases, int per_second) : databases_(databases), per_second_(per_second) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Writer() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int64_t written() const { return written_; }

 private:
  void Run() {
    std::vector<std::unique_ptr<SqlClient>> clients;
    for (int i = 0; i < databases_; ++i)
      clients.push_back(std::make_unique<SqlClient>("fleet_" + Name(i)));
    const auto gap = std::chrono::microseconds(1000000 / per_second_);
    for (int64_t n = 0; !stop_; ++n) {
      const int db = static_cast<int>(n % databases_);
      const int64_t round = n / databases_;
      const std::string agg = std::to_string(1 + round % 20);
      clients[db]->Exec(
          "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, "
          "status, next_retry_at, created_at, updated_at) VALUES (" +
          std::to_string(round + 1) + ", 'Order', " + agg + ", 'OrderTick', 'tick-" +
          std::to_string(n) + "', '{\"n\":" + std::to_string(n) +
          "}', 'NEW', NOW(), NOW(), NOW())");
      ++written_;
      std::this_thread::sleep_for(gap);
    }
  }
  const int databases_;
  const int per_second_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> written_{0};
  std::thread thread_;
};

struct Bed {
  Bed(const std::string& name, const std::string& wakeup_mode, int brokers = 1)
      : dir(ScratchDir(name)), broker(brokers), wakeup(wakeup_mode) {
    std::cout << "scenario " << name << ": logs in " << dir << std::endl;
    for (int i = 0; i < kServices; ++i) {
      databases.push_back(std::make_unique<TestDatabase>("fleet_" + Name(i)));
      REQUIRE(broker.CreateTopic("fleet." + Name(i), 2));
    }
    REQUIRE(broker.CreateTopic(kShardTopic, kShards));
  }

  RelaySpec Spec(int services = kServices) const {
    RelaySpec s;
    s.service = Name(0);
    s.mysql = RelayMysql("fleet_" + Name(0));
    s.bootstrap = broker.bootstrap();
    s.wakeup = wakeup;
    s.batch_size = 50;
    s.topic = "fleet.{service}";
    s.top_yaml = std::string("fleet: {group_id: ") + kGroup + ", topic: " + kShardTopic +
                 ", session_timeout_ms: " + std::to_string(kSessionMs) + "}\n";
    for (int i = 1; i < services; ++i) s.extra_services_yaml += ServiceYaml(i, wakeup);
    return s;
  }

  RelayProcess& Add(const std::string& name) {
    relays.push_back(std::make_unique<RelayProcess>(name, dir, Spec()));
    REQUIRE(relays.back()->Start());
    return *relays.back();
  }

  // service -> the running relays that export outbox_service_owned 1 for it.
  std::map<std::string, std::vector<std::string>> Owners() {
    std::map<std::string, std::vector<std::string>> owners;
    for (auto& r : relays) {
      if (!r->running()) continue;
      for (const auto& m : ParseMetricSamples(r->Metrics())) {
        if (m.name != "outbox_service_owned" || m.value != 1) continue;
        const size_t q = m.labels.find('"');
        owners[m.labels.substr(q + 1, m.labels.rfind('"') - q - 1)].push_back(r->name());
      }
    }
    return owners;
  }

  // True when each of the first `services` services has exactly one owner.
  bool OwnedOnce(int services = kServices) {
    const auto owners = Owners();
    for (int i = 0; i < services; ++i) {
      auto it = owners.find(Name(i));
      if (it == owners.end() || it->second.size() != 1) return false;
    }
    return true;
  }

  // The assignment changes the running relays have counted, all kinds.
  double Rebalances() {
    double sum = 0;
    for (auto& r : relays)
      if (r->running()) sum += MetricSum(r->Metrics(), "outbox_fleet_rebalances_total");
    return sum;
  }

  // Waits until no relay has counted an assignment change for a session
  // timeout (three heartbeats): the group is steady. Taken away 1 s after
  // a rebalance, on a loaded machine, the coordinator left two of three
  // relays holding their shards through a 20 s outage (librdkafka 2.0.2
  // ended only the session of the member that had heartbeated since), so a
  // test that takes the coordinator away first waits for this.
  void WaitSteady() {
    double last = Rebalances();
    auto since = std::chrono::steady_clock::now();
    REQUIRE(WaitFor(
        [&] {
          const double now = Rebalances();
          if (now != last) {
            last = now;
            since = std::chrono::steady_clock::now();
          }
          return std::chrono::steady_clock::now() - since >= std::chrono::milliseconds(kSessionMs);
        },
        kTakeover + kSlack, 200ms));
  }

  std::vector<std::string> OwnedBy(const std::string& relay) {
    std::vector<std::string> out;
    for (const auto& [service, who] : Owners())
      if (std::find(who.begin(), who.end(), relay) != who.end()) out.push_back(service);
    return out;
  }

  int64_t Unsent(int i) {
    return databases[i]->QueryInt(
        "SELECT COUNT(*) FROM t_outbox WHERE status IN ('NEW','SENDING')");
  }

  // outbox-check of one service's database against its topic.
  nlohmann::json Check(int i, const std::string& tag) {
    CheckResult c = RunCheck(RelayMysql("fleet_" + Name(i)), broker.bootstrap(),
                             {"--topic", "fleet." + Name(i), "--service", Name(i),
                              "--topic-template", "fleet.{service}"},
                             dir, tag + "-" + Name(i));
    INFO(c.output);
    REQUIRE(c.report.is_object());
    CHECK(c.report["lost"] == 0);
    CHECK(c.report["order_violations"] == 0);
    return c.report;
  }

  std::string dir;
  TestBroker broker;
  std::string wakeup;
  std::vector<std::unique_ptr<TestDatabase>> databases;
  std::vector<std::unique_ptr<RelayProcess>> relays;
};

int IndexOf(const std::string& service) { return std::stoi(service.substr(3)); }

// Sessions of the relays' account on the fleet's databases.
int64_t FleetConnections(TestDatabase& any) {
  return any.QueryInt(
      "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE db LIKE 'fleet\\_svc%' AND "
      "user = '" +
      RelayMysql("").user + "' AND id <> CONNECTION_ID()");
}

// How often each service started on a relay: its log's "relaying" lines.
std::map<std::string, int> Starts(RelayProcess& r) {
  std::map<std::string, int> out;
  const std::string log = ReadFile(r.log_path());
  for (int i = 0; i < kServices; ++i) {
    const std::string needle = "relaying service=" + Name(i) + " ";
    for (size_t p = log.find(needle); p != std::string::npos; p = log.find(needle, p + 1))
      ++out[Name(i)];
  }
  return out;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Adds relay `name` and returns how many services kept their owner; each of
// them never stopped (its relay logs no second "relaying" line for it).
int JoinKeepsTheOthers(Bed& bed, const std::string& name) {
  std::map<std::string, std::vector<std::string>> owned_before;
  std::map<std::string, std::map<std::string, int>> starts_before;
  for (auto& r : bed.relays) {
    owned_before[r->name()] = bed.OwnedBy(r->name());
    starts_before[r->name()] = Starts(*r);
  }
  bed.Add(name);
  REQUIRE(WaitFor([&] { return !bed.OwnedBy(name).empty() && bed.OwnedOnce(); }, kTakeover + kSlack,
                  200ms));
  int kept = 0;
  for (auto& r : bed.relays) {
    if (r->name() == name) continue;
    const auto now_owned = bed.OwnedBy(r->name());
    const auto starts = Starts(*r);
    for (const auto& service : owned_before[r->name()]) {
      if (std::find(now_owned.begin(), now_owned.end(), service) == now_owned.end()) continue;
      INFO(r->name() << " kept " << service);
      CHECK(starts.at(service) == starts_before[r->name()].at(service));
      ++kept;
    }
  }
  return kept;
}

// Kills `relay` (kill -9), writes a fresh event into each of `orphaned`'s
// databases and returns the seconds until every one is SENT.
double KillAndServeAgain(Bed& bed, RelayProcess& relay, const std::vector<std::string>& orphaned) {
  relay.Kill();
  const auto killed = std::chrono::steady_clock::now();
  for (const auto& s : orphaned)
    bed.databases[IndexOf(s)]->Exec(
        "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, "
        "status, next_retry_at, created_at, updated_at) VALUES (90000001, 'Fresh', 1, "
        "'AfterKill', 'after-kill', '{}', 'NEW', NOW(), NOW(), NOW())");
  REQUIRE(WaitFor(
      [&] {
        for (const auto& s : orphaned)
          if (bed.databases[IndexOf(s)]->QueryInt("SELECT COUNT(*) FROM t_outbox WHERE "
                                                  "event_key = 'after-kill' AND status = 'SENT'") !=
              1)
            return false;
        return true;
      },
      kTakeover + kSlack, 100ms));
  return Seconds(killed);
}

}  // namespace

TEST_CASE(
    "fleet: three relays share thirty databases one owner each while a joining relay moves only "
    "its shards and a stopped one hands over without duplicates and a killed one's services are "
    "served again",
    "[fleet][mock-faults]") {
  Bed bed("fleet_lifecycle", "poll");
  // The writer first: the sessions before the relays are the test's own.
  Writer writer(kServices, 100);
  REQUIRE(WaitFor([&] { return writer.written() >= 60; }, 30s, 100ms));
  const int64_t own_sessions = FleetConnections(*bed.databases[0]);
  for (const char* n : {"r1", "r2", "r3"}) bed.Add(n);
  // (a) Every service owned by exactly one relay.
  REQUIRE(WaitFor([&] { return bed.OwnedOnce(); }, kTakeover + kSlack, 200ms));
  REQUIRE(WaitFor([&] { return writer.written() >= 300 + 60; }, 30s, 100ms));
  // One relay's sessions per database (up to four a service), not three
  // relays' as without a fleet.
  const int64_t connections = FleetConnections(*bed.databases[0]) - own_sessions;
  CHECK(connections <= 4 * kServices);

  // (c) A fourth relay joins: only the shards given to it stop anywhere.
  const int kept = JoinKeepsTheOthers(bed, "r4");
  CHECK(kept >= kServices / 2);

  // (d) SIGTERM of r2: its services move at once and settle without a duplicate.
  const std::vector<std::string> handed = bed.OwnedBy("r2");
  REQUIRE(bed.relays[1]->Stop(60s));
  REQUIRE(WaitFor([&] { return bed.OwnedOnce(); }, kTakeover + kSlack, 200ms));

  // (b) kill -9 of r3: its services are served again (a fresh event each).
  const std::vector<std::string> orphaned = bed.OwnedBy("r3");
  const double takeover_s = KillAndServeAgain(bed, *bed.relays[2], orphaned);
  writer.Stop();
  for (int i = 0; i < kServices; ++i)
    REQUIRE(WaitFor([&] { return bed.Unsent(i) == 0; }, 60s, 100ms));

  // A service that r2 handed over to r3, which was then killed, carries
  // the kill's duplicates: it is judged with the killed ones, and the
  // hand-over on the services that no kill touched (judged_handed_over).
  int64_t duplicates_handed = 0, duplicates_killed = 0, judged_handed = 0;
  for (int i = 0; i < kServices; ++i) {
    const nlohmann::json report = bed.Check(i, "end");
    const int64_t d = report["duplicate_copies"].get<int64_t>();
    const bool killed = std::count(orphaned.begin(), orphaned.end(), Name(i)) > 0;
    if (killed) duplicates_killed += d;
    if (!killed && std::count(handed.begin(), handed.end(), Name(i))) {
      duplicates_handed += d;
      ++judged_handed;
    }
  }
  // A graceful hand-over sends nothing twice; a kill at most the in-flight
  // window of each service it held (4 batches of 50).
  CHECK(duplicates_handed == 0);
  CHECK(duplicates_killed <= static_cast<int64_t>(orphaned.size()) * 4 * 50);
  RecordFigures("fleet_lifecycle", {{"events", writer.written()},
                                    {"connections_3_relays", connections},
                                    {"kept_through_join", kept},
                                    {"handed_over", handed.size()},
                                    {"judged_handed_over", judged_handed},
                                    {"duplicates_handed_over", duplicates_handed},
                                    {"killed_services", orphaned.size()},
                                    {"takeover_after_kill_s", takeover_s},
                                    {"duplicates_after_kill", duplicates_killed}});
}

TEST_CASE(
    "fleet: relays woken by the binlog stop serving while the group's coordinator is away and "
    "serve again after it returns losing nothing and a reload's new service starts on one relay",
    "[fleet][mock-faults]") {
  Bed bed("fleet_coordinator", "binlog", 3);
  // The group's coordinator alone on broker 3; every event topic led by 1 or 2.
  bed.broker.SetCoordinator(kGroup, 3);
  REQUIRE(bed.broker.CreateTopic("fleet." + Name(kServices), 2));  // for the reload below
  for (int i = 0; i <= kServices; ++i)
    for (int p = 0; p < 2; ++p) bed.broker.SetLeader("fleet." + Name(i), p, 1 + p);
  for (const char* n : {"r1", "r2", "r3"}) bed.Add(n);
  REQUIRE(WaitFor([&] { return bed.OwnedOnce(); }, kTakeover + kSlack, 200ms));
  Writer writer(kServices, 100);
  REQUIRE(WaitFor([&] { return writer.written() >= 300; }, 30s, 100ms));
  bed.WaitSteady();

  // (e) The coordinator away for 20 s: past the session timeout every relay
  // gives its shards up by itself.
  bed.broker.SetBrokerDown(3, true);
  const auto down = std::chrono::steady_clock::now();
  const bool let_go = WaitFor([&] { return bed.Owners().empty(); }, 20s, 200ms);
  std::this_thread::sleep_until(down + 20s);
  bed.broker.SetBrokerDown(3, false);
  const auto back = std::chrono::steady_clock::now();
  CHECK(let_go);
  for (int i = 0; i < kServices; ++i)
    bed.databases[i]->Exec(
        "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, "
        "status, next_retry_at, created_at, updated_at) VALUES (90000002, 'Fresh', 1, "
        "'AfterOutage', "
        "'after-outage', '{}', 'NEW', NOW(), NOW(), NOW())");
  REQUIRE(WaitFor(
      [&] {
        for (int i = 0; i < kServices; ++i)
          if (bed.databases[i]->QueryInt(
                  "SELECT COUNT(*) FROM t_outbox WHERE event_key = 'after-outage' AND status = "
                  "'SENT'") != 1)
            return false;
        return true;
      },
      kTakeover + kSlack, 100ms));
  const double served_again_s = Seconds(back);
  REQUIRE(WaitFor([&] { return bed.OwnedOnce(); }, kTakeover + kSlack, 200ms));

  // (f) A reload adds a service: exactly one relay starts it.
  TestDatabase added("fleet_" + Name(kServices));
  for (auto& r : bed.relays) {
    std::ofstream(r->config_path(), std::ios::app) << ServiceYaml(kServices, "binlog");
    r->Signal(SIGHUP);
  }
  REQUIRE(WaitFor([&] { return bed.OwnedOnce(kServices + 1); }, 30s, 200ms));
  added.InsertEvents(5, 2);
  REQUIRE(WaitFor(
      [&] { return added.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENT'") == 10; },
      30s, 100ms));

  writer.Stop();
  for (int i = 0; i < kServices; ++i)
    REQUIRE(WaitFor([&] { return bed.Unsent(i) == 0; }, 60s, 100ms));
  for (int i = 0; i < kServices; ++i) bed.Check(i, "end");
  RecordFigures("fleet_coordinator",
                {{"events", writer.written()}, {"served_again_after_return_s", served_again_s}});
}

TEST_CASE(
    "fleet: a shard beyond the topic's partitions and a missing topic are named by check and at "
    "start while the other services run",
    "[fleet][mock-faults]") {
  const std::string dir = ScratchDir("fleet_bad_input");
  TestDatabase a("fleet_" + Name(0)), b("fleet_" + Name(1));
  TestBroker broker;
  REQUIRE(broker.CreateTopic(kShardTopic, 2));
  REQUIRE(broker.CreateTopic("fleet." + Name(0), 1));
  REQUIRE(broker.CreateTopic("fleet." + Name(1), 1));
  auto spec = [&](const std::string& topic) {
    RelaySpec s;
    s.service = Name(0);
    s.mysql = RelayMysql("fleet_" + Name(0));
    s.bootstrap = broker.bootstrap();
    s.topic = "fleet.{service}";
    s.top_yaml = std::string("fleet: {group_id: ") + kGroup + ", topic: " + topic +
                 ", session_timeout_ms: " + std::to_string(kSessionMs) + "}\n";
    s.extra_services_yaml = ServiceYaml(1, "poll") + "    shard: 5\n";
    return s;
  };

  SECTION("a shard beyond the partitions") {
    RelayProcess relay("relay", dir, spec(kShardTopic));
    const ProcessResult check =
        RunProcess({OUTBOX_BINARY, "check", "--connect", "--config", relay.config_path()},
                   ChildEnv(RelayChildEnv()));
    INFO(check.out << check.err);
    CHECK(check.exit_code == 1);
    CHECK(check.out.find("services[1].shard: 5 is beyond the 2 partitions of fleet.topic " +
                         std::string(kShardTopic)) != std::string::npos);
    CHECK(check.out.find("service svc00 is in shard") != std::string::npos);
    REQUIRE(relay.Start());
    REQUIRE(WaitFor([&] { return relay.Metric("outbox_service_owned") == 1; }, kTakeover + kSlack,
                    200ms));
    a.InsertEvents(3, 2);
    REQUIRE(WaitFor(
        [&] { return a.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENT'") == 6; }, 30s,
        100ms));
    CHECK(ReadFile(relay.log_path()).find("fleet: a service no relay can serve") !=
          std::string::npos);
    CHECK(MetricValue(relay.Metrics(), "outbox_service_owned{service=\"svc01\"}") == 0);
    CHECK(relay.ReadyzStatus() == 200);
  }
  SECTION("a missing topic") {
    // The mock creates any topic it is asked about; a real cluster without
    // auto-creation answers this.
    broker.SetTopicError("no-such-topic", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    RelayProcess relay("relay", dir, spec("no-such-topic"));
    const ProcessResult check =
        RunProcess({OUTBOX_BINARY, "check", "--connect", "--config", relay.config_path()},
                   ChildEnv(RelayChildEnv()));
    INFO(check.out << check.err);
    CHECK(check.exit_code == 1);
    CHECK(check.out.find("topic no-such-topic does not exist") != std::string::npos);
    REQUIRE(relay.Start());
    REQUIRE(WaitFor([&] { return relay.ReadyzStatus() == 503; }, 20s, 200ms));
    CHECK(HttpGet(relay.port(), "/readyz").body.find("not a member") != std::string::npos);
  }
}
