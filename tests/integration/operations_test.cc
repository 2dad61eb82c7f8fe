// What an operator does on the day something goes wrong: DEAD rows
// driven by a real failure, listed and replayed with the real binary while
// relays run; retention while the relay drains; the blocked-aggregates gauge;
// `check --connect` and the grants.

#include <pwd.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "support/http_probe.h"
#include "support/kafka_reader.h"
#include "support/outbox_writer.h"
#include "support/process.h"
#include "support/relay_harness.h"
#include "support/test_broker.h"
#include "support/test_env.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

// A payload the producer refuses with its default message.max.bytes (1 MB):
// the row goes DEAD at once with reason message_too_large.
const char* kOversizedPayload = "JSON_OBJECT('blob', REPEAT('x', 1200000))";

// `outbox-relay ARGS... --config CONFIG`, with the relay account's password
// in the environment the config names.
ProcessResult Cli(const std::string& config, std::vector<std::string> args,
                  const std::vector<std::string>& env = RelayChildEnv()) {
  std::vector<std::string> argv = {OUTBOX_BINARY};
  for (auto& a : args) argv.push_back(std::move(a));
  argv.push_back("--config");
  argv.push_back(config);
  return RunProcess(argv, ChildEnv(env));
}

std::string RowStatus(TestDatabase& db, int64_t id) {
  return db.QueryString("SELECT status FROM t_outbox WHERE id = " + std::to_string(id));
}

// The value of a per-service gauge of a harness' relay (-1 if absent).
double Gauge(RelayHarness& h, const std::string& metric) { return h.Metric(metric); }

// outbox_id of every message with key `key`, in partition order (one
// aggregate lives in one partition, so this is the order consumers see).
std::vector<int64_t> IdsForKey(const std::vector<ConsumedMessage>& msgs, const std::string& key) {
  std::vector<const ConsumedMessage*> sorted;
  for (const auto& m : msgs)
    if (m.key == key) sorted.push_back(&m);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return std::tie(a->topic, a->partition, a->offset) <
           std::tie(b->topic, b->partition, b->offset);
  });
  std::vector<int64_t> ids;
  for (const auto* m : sorted) ids.push_back(std::stoll(m->headers.at("outbox_id")));
  return ids;
}

// Rows from..to in one INSERT: aggregate Order/<id>, event type E, event
// key <key_prefix><id>, with the given status and SQL expressions for
// next_retry_at and created_at.
void InsertRows(TestDatabase& db, int from, int to, const std::string& status,
                const std::string& next_retry_at, const std::string& created_at,
                const std::string& key_prefix) {
  std::string v;
  for (int i = from; i <= to; ++i)
    v += std::string(v.empty() ? "" : ",") + "(" + std::to_string(i) + ",'Order'," +
         std::to_string(i) + ",'E','" + key_prefix + std::to_string(i) + "','{}','" + status +
         "'," + next_retry_at + "," + created_at + ",NOW())";
  db.Exec(
      "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload,"
      " status, next_retry_at, created_at, updated_at) VALUES " +
      v);
}

// Two replicas with the producer's default message.max.bytes drive the
// oversized rows DEAD; dead_policy block holds back their later events.
void DriveOversizedRowsDead(TestDatabase& db, const ServiceConfig& s) {
  RelayHarness a(s), b(s);
  a.relay->Start();
  b.relay->Start();
  std::map<std::string, int64_t> c;
  bool settled = WaitFor(
      [&] {
        c = db.CountByStatus();
        return c["DEAD"] == 4 && c["SENT"] == 10;
      },
      60s);
  INFO("DEAD " << c["DEAD"] << ", SENT " << c["SENT"] << ", NEW " << c["NEW"] << ", SENDING "
               << c["SENDING"]);
  REQUIRE(settled);
  // dead_policy block: Order/2's 8 and 14, Order/3's 15 and Order/4's 16 wait.
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'NEW' AND id IN (8, 14, 15, "
                    "16)") == 4);
  // The running relays refresh their gauges themselves (gauge_interval_ms).
  CHECK(WaitFor([&] { return Gauge(a, "outbox_dead_events") == 4; }, 10s));
  CHECK(WaitFor([&] { return Gauge(b, "outbox_blocked_aggregates") == 3; }, 10s));
}

// `dead list` prints a table of the four DEAD rows.
void CheckDeadListTable(const std::string& config, const std::string& service) {
  ProcessResult list = Cli(config, {"dead", "list", "--service", service});
  INFO(list.out << list.err);
  REQUIRE(list.exit_code == 0);
  CHECK(list.out.find("ID") == 0);
  for (const char* col : {"AGGREGATE", "EVENT_TYPE", "RETRIES", "AGE", "LAST_ERROR"})
    CHECK(list.out.find(col) != std::string::npos);
  // ID AGGREGATE EVENT_TYPE RETRIES AGE LAST_ERROR
  const std::regex row(R"((\d+) +(Order/\d+) +(\w+) +(\d+) +(\d+[smhd]) +(.*))");
  std::map<int64_t, std::vector<std::string>> parsed;
  std::istringstream in(list.out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, row)) {
      std::vector<std::string> cells;
      for (size_t i = 1; i < m.size(); ++i) cells.push_back(m[i]);
      parsed[std::stoll(m[1])] = cells;
    }
  }
  REQUIRE(parsed.size() == 4);
  CHECK(parsed[2][1] == "Order/2");
  CHECK(parsed[2][2] == "OrderCreated");
  CHECK(parsed[9][2] == "OrderPaid");
  CHECK(parsed[10][2] == "OrderPaid");
  CHECK(parsed[17][2] == "OrderShipped");
  for (auto& [id, cells] : parsed) {
    CHECK(cells[3] == "1");  // one attempt: a permanent failure
    CHECK(cells[5].find("MSG_SIZE_TOO_LARGE") != std::string::npos);
  }
  CHECK(list.out.find("4 DEAD row(s)\n") != std::string::npos);
}

// `dead list --json` gives every field of the four DEAD rows; --limit cuts.
void CheckDeadListJson(const std::string& config, const std::string& service) {
  ProcessResult json_list = Cli(config, {"dead", "list", "--service", service, "--json"});
  REQUIRE(json_list.exit_code == 0);
  auto j = nlohmann::json::parse(json_list.out);
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 4);
  std::vector<int64_t> json_ids;
  for (const auto& d : j) {
    json_ids.push_back(d.at("id").get<int64_t>());
    CHECK(d.at("aggregate_type") == "Order");
    CHECK(d.at("retry_count") == 1);
    CHECK(d.at("last_error").get<std::string>().find("MSG_SIZE_TOO_LARGE") != std::string::npos);
    CHECK(d.at("age_seconds").get<int64_t>() >= 0);
    CHECK(d.at("created_at").get<std::string>().back() == 'Z');
    CHECK(d.contains("event_key"));
  }
  CHECK(json_ids == std::vector<int64_t>{2, 9, 10, 17});
  CHECK(j[0].at("aggregate_id") == 2);
  CHECK(j[0].at("event_type") == "OrderCreated");
  ProcessResult limited = Cli(config, {"dead", "list", "--service", service, "--limit", "2"});
  CHECK(limited.out.find("2 DEAD row(s) (limit reached)") != std::string::npos);
}

// `dead replay --id 2`: --dry-run changes nothing; then the row and the
// events held back behind it are delivered, with an audit line.
void ReplayOneById(const std::string& config, const std::string& service, TestDatabase& db) {
  ProcessResult dry =
      Cli(config, {"dead", "replay", "--service", service, "--id", "2", "--dry-run"});
  INFO(dry.out << dry.err);
  CHECK(dry.exit_code == 0);
  CHECK(dry.out.find("would replay 1 DEAD row(s) -> NEW") != std::string::npos);
  CHECK(dry.err.find("audit:") == std::string::npos);
  std::this_thread::sleep_for(300ms);  // a few polls of both relays: nothing moves
  CHECK(RowStatus(db, 2) == "DEAD");

  ProcessResult one = Cli(config, {"dead", "replay", "--service", service, "--id", "2"});
  INFO(one.out << one.err);
  CHECK(one.exit_code == 0);
  CHECK(one.out.find("replayed 1 DEAD row(s) -> NEW") != std::string::npos);
  CHECK(std::regex_search(one.err, std::regex("audit: dead replay service=" + service +
                                              " outbox_id=2 aggregate_type=Order aggregate_id=2 "
                                              "event_type=OrderCreated user=")));
  REQUIRE(WaitFor([&] { return RowStatus(db, 14) == "SENT"; }, 30s));
  CHECK(RowStatus(db, 2) == "SENT");
  CHECK(RowStatus(db, 8) == "SENT");
}

// `dead replay --event-type OrderPaid` replays both OrderPaid rows, and only
// them.
void ReplayByEventType(const std::string& config, const std::string& service, TestDatabase& db) {
  ProcessResult by_type_dry = Cli(
      config, {"dead", "replay", "--service", service, "--event-type", "OrderPaid", "--dry-run"});
  CHECK(by_type_dry.out.find("would replay 2 DEAD row(s) -> NEW") != std::string::npos);
  ProcessResult by_type =
      Cli(config, {"dead", "replay", "--service", service, "--event-type", "OrderPaid", "--json"});
  INFO(by_type.out << by_type.err);
  REQUIRE(by_type.exit_code == 0);
  auto bt = nlohmann::json::parse(by_type.out);
  CHECK(bt.at("dry_run") == false);
  REQUIRE(bt.at("replayed").size() == 2);
  CHECK(bt.at("replayed")[0].at("id") == 9);
  CHECK(bt.at("replayed")[1].at("id") == 10);
  REQUIRE(WaitFor([&] { return RowStatus(db, 15) == "SENT" && RowStatus(db, 16) == "SENT"; }, 30s));
  CHECK(RowStatus(db, 17) == "DEAD");  // another event type: untouched
}

// Every one of the 18 events once, and each aggregate in id order.
void CheckEveryEventOnceInOrder(const std::string& bootstrap) {
  auto msgs = ConsumeAll(bootstrap, {"outbox.event.Order"});
  std::multiset<int64_t> ids;
  for (const auto& m : msgs) ids.insert(std::stoll(m.headers.at("outbox_id")));
  CHECK(ids.size() == 18);
  CHECK(std::set<int64_t>(ids.begin(), ids.end()).size() == 18);
  for (int agg = 1; agg <= 6; ++agg)
    CHECK(IdsForKey(msgs, std::to_string(agg)) == std::vector<int64_t>{agg, agg + 6, agg + 12});
}

// What was seen while a retention pass ran.
struct RetentionWatch {
  bool drained_during_retention = false;
  double deleted = 0;
  int64_t new_sent_during = 0;
  std::chrono::steady_clock::duration pass{};
};

// Samples until retention deleted `old_sent` rows (120 s at most): new
// events must become SENT while retention has deleted some but not all.
RetentionWatch WatchRetention(RelayHarness& h, TestDatabase& db, int old_sent) {
  RetentionWatch w;
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < 120s) {
    const double d = h.Metric("outbox_retention_deleted_total");
    w.deleted = std::isnan(d) ? 0 : d;
    int64_t new_sent =
        db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id > 100000 AND status = 'SENT'");
    if (w.deleted > 0 && w.deleted < old_sent && new_sent > 0) {
      w.drained_during_retention = true;
      w.new_sent_during = std::max(w.new_sent_during, new_sent);
    }
    if (w.deleted >= old_sent) break;
    std::this_thread::sleep_for(50ms);
  }
  w.pass = std::chrono::steady_clock::now() - t0;
  return w;
}

struct GrantCase {
  std::string user;
  std::string grants;
  bool retention;
  int exit_code;
  std::vector<std::string> expect;
  std::string absent;
};

// `check --connect` as users with these grants on `table`.
std::vector<GrantCase> GrantCases(const std::string& table) {
  return {
      {"ops_g_select",
       "SELECT",
       false,
       1,
       {"user 'ops_g_select'@'%' lacks UPDATE on ops_check_grants.t_outbox (needed to claim and "
        "settle rows, and for dead replay): GRANT UPDATE ON " +
        table + " TO 'ops_g_select'@'%';"},
       "database ok"},
      {"ops_g_update",
       "SELECT, UPDATE",
       true,
       1,
       {"user 'ops_g_update'@'%' lacks DELETE on ops_check_grants.t_outbox (needed by "
        "retention.sent_days): GRANT DELETE ON " +
        table + " TO 'ops_g_update'@'%'; or remove the service's retention block"},
       "database ok"},
      {"ops_g_update",
       "SELECT, UPDATE",
       false,
       0,
       {"database ok (ops_check_grants.t_outbox), optional columns: last_error, privileges: "
        "SELECT, UPDATE"},
       "lacks"},
      {"ops_g_delete",
       "SELECT, UPDATE, DELETE",
       true,
       0,
       {"privileges: SELECT, UPDATE, DELETE"},
       "lacks"},
      // Column-level UPDATE on exactly the columns the relay writes is enough.
      {"ops_g_columns",
       "SELECT, UPDATE (status, retry_count, next_retry_at, updated_at, last_error)",
       false,
       0,
       {"privileges: SELECT, UPDATE"},
       "lacks"},
      {"ops_g_fewcols",
       "SELECT, UPDATE (status, next_retry_at, updated_at)",
       false,
       1,
       {"lacks UPDATE on ops_check_grants.t_outbox"},
       "database ok"},
  };
}

}  // namespace

TEST_CASE(
    "outbox_blocked_aggregates counts the aggregates whose later events wait behind a DEAD one "
    "and is 0 under dead_policy skip",
    "[ops][gauges]") {
  TestBroker cluster(1);
  TestDatabase db("ops_blocked_gauge");
  // Order/3: DEAD, DEAD, then NEW            -> blocked (counted once)
  // Order/10: DEAD, nothing after it          -> not blocked
  // Order/12: NEW, then DEAD                  -> not blocked by the DEAD row
  // Order/14: DEAD, then SENDING              -> blocked
  // Payment/3: NEW, same aggregate_id as Order/3, other type -> not blocked
  // Order/20: SENT, then DEAD, then SENT      -> not blocked
  db.Exec(
      "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload,"
      " status, next_retry_at, created_at, updated_at) VALUES"
      " (3,'Order',3,'A','k3','{}','DEAD',NOW(),NOW(),NOW()),"
      " (4,'Order',3,'A','k4','{}','DEAD',NOW(),NOW(),NOW()),"
      " (7,'Order',3,'A','k7','{}','NEW',NOW() + INTERVAL 1 HOUR,NOW(),NOW()),"
      " (11,'Order',10,'A','k11','{}','DEAD',NOW(),NOW(),NOW()),"
      " (12,'Order',12,'A','k12','{}','NEW',NOW() + INTERVAL 1 HOUR,NOW(),NOW()),"
      " (13,'Order',12,'A','k13','{}','DEAD',NOW(),NOW(),NOW()),"
      " (14,'Order',14,'A','k14','{}','DEAD',NOW(),NOW(),NOW()),"
      " (15,'Order',14,'A','k15','{}','SENDING',NOW() + INTERVAL 1 HOUR,NOW(),NOW()),"
      " (17,'Payment',3,'A','k17','{}','NEW',NOW() + INTERVAL 1 HOUR,NOW(),NOW()),"
      " (20,'Order',20,'A','k20','{}','SENT',NOW(),NOW(),NOW()),"
      " (21,'Order',20,'A','k21','{}','DEAD',NOW(),NOW(),NOW()),"
      " (22,'Order',20,'A','k22','{}','SENT',NOW(),NOW(),NOW())");
  for (DeadPolicy policy : {DeadPolicy::kBlock, DeadPolicy::kSkip}) {
    ServiceConfig s = TestService(db, cluster.bootstrap());
    s.dead_policy = policy;
    RelayHarness h(s);
    REQUIRE(h.steps().housekeeping.RefreshGauges().ok());
    CHECK(h.Metric("outbox_dead_events") == 6);
    CHECK(h.Metric("outbox_blocked_aggregates") == (policy == DeadPolicy::kBlock ? 2 : 0));
  }
  // Replaying Order/14's DEAD row (as dead replay does) releases it: 1 left.
  db.Exec("UPDATE t_outbox SET status = 'NEW', retry_count = 0 WHERE id = 14");
  RelayHarness h(TestService(db, cluster.bootstrap()));
  REQUIRE(h.steps().housekeeping.RefreshGauges().ok());
  CHECK(h.Metric("outbox_blocked_aggregates") == 1);
}

TEST_CASE(
    "rows driven DEAD by a real failure are listed and replayed with the binary while relays run "
    "and the held-back events follow in order",
    "[ops][dead][process]") {
  TestBroker cluster(1, "outbox.event.Order", 3);
  TestDatabase db("ops_dead_tooling", ", last_error varchar(255)");
  // Orders 1..6, three events each: ids 1-6 OrderCreated, 7-12 OrderPaid,
  // 13-18 OrderShipped (InsertEvents interleaves the aggregates).
  db.InsertEvents(6, 3);
  // Too large for the producer: 2 (Order/2 created), 9 and 10 (Order/3 and
  // Order/4 paid), 17 (Order/5 shipped, its last event).
  db.Exec(std::string("UPDATE t_outbox SET payload = ") + kOversizedPayload +
          " WHERE id IN (2, 9, 10, 17)");
  ServiceConfig s = TestService(db, cluster.bootstrap());
  const std::string service = s.name;
  DriveOversizedRowsDead(db, s);

  TempDir dir;
  const std::string config =
      dir.Write("relay.yaml", RelayConfigYaml(db, service, cluster.bootstrap()));
  CheckDeadListTable(config, service);
  CheckDeadListJson(config, service);

  // --- Fix the cause (the runbook's fix for message_too_large: a larger
  // message.max.bytes), restart the replicas, and replay while they run.
  s.kafka.properties["message.max.bytes"] = "2000000";
  RelayHarness a(s), b(s);
  a.relay->Start();
  b.relay->Start();

  ReplayOneById(config, service, db);
  ReplayByEventType(config, service, db);

  // An id that is not DEAD (any more) is reported, not an error.
  ProcessResult again = Cli(config, {"dead", "replay", "--service", service, "--id", "2"});
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("replayed 0 DEAD row(s) -> NEW") != std::string::npos);
  CHECK(again.err.find("1 of the given id(s) were not DEAD") != std::string::npos);

  ProcessResult all_dry =
      Cli(config, {"dead", "replay", "--service", service, "--all", "--dry-run"});
  CHECK(all_dry.out.find("would replay 1 DEAD row(s) -> NEW") != std::string::npos);
  ProcessResult all = Cli(config, {"dead", "replay", "--service", service, "--all"});
  CHECK(all.out.find("replayed 1 DEAD row(s) -> NEW") != std::string::npos);
  REQUIRE(WaitFor([&] { return db.CountByStatus()["SENT"] == 18; }, 30s));

  ProcessResult empty = Cli(config, {"dead", "list", "--service", service});
  CHECK(empty.out.find("0 DEAD row(s)") != std::string::npos);
  CHECK(WaitFor([&] { return Gauge(a, "outbox_dead_events") == 0; }, 10s));
  CHECK(WaitFor([&] { return Gauge(a, "outbox_blocked_aggregates") == 0; }, 10s));
  CheckEveryEventOnceInOrder(cluster.bootstrap());
}

TEST_CASE(
    "dead replay writes its audit lines even at log level error and names the user without "
    "$USER and the sudo user and counts a repeated id once",
    "[ops][dead][process]") {
  TestBroker cluster(1);
  TestDatabase db("ops_dead_audit");
  db.InsertEvents(3, 1);
  db.Exec("UPDATE t_outbox SET status = 'DEAD', retry_count = 3");
  TempDir dir;
  std::string yaml = RelayConfigYaml(db, "audit", cluster.bootstrap());
  const std::string info_level = "level: info";
  REQUIRE(yaml.find(info_level) != std::string::npos);
  yaml.replace(yaml.find(info_level), info_level.size(), "level: error");
  const std::string config = dir.Write("relay.yaml", yaml);

  // No $USER (as under kubectl exec): the name of the process' user.
  const struct passwd* pw = ::getpwuid(::geteuid());
  REQUIRE(pw != nullptr);
  ProcessResult one = Cli(config, {"dead", "replay", "--service", "audit", "--id", "1"});
  INFO(one.out << one.err);
  CHECK(one.exit_code == 0);
  CHECK(one.err.find("audit: dead replay service=audit outbox_id=1 aggregate_type=Order "
                     "aggregate_id=1 event_type=OrderCreated user=" +
                     std::string(pw->pw_name) + "\n") != std::string::npos);

  // Through sudo: $USER is root, SUDO_USER the operator.
  std::vector<std::string> env = RelayChildEnv();
  env.push_back("USER=root");
  env.push_back("SUDO_USER=alice");
  ProcessResult two = Cli(
      config, {"dead", "replay", "--service", "audit", "--id", "2", "--id", "2", "--id", "9"}, env);
  INFO(two.out << two.err);
  CHECK(two.exit_code == 0);
  CHECK(two.out.find("replayed 1 DEAD row(s) -> NEW") != std::string::npos);
  CHECK(two.err.find("outbox_id=2 aggregate_type=Order aggregate_id=2 event_type=OrderCreated "
                     "user=root sudo_user=alice") != std::string::npos);
  // 2 was DEAD (named twice), 9 does not exist: one id was not DEAD.
  CHECK(two.err.find("1 of the given id(s) were not DEAD") != std::string::npos);

  // A dry run names the ids that are not DEAD as well, and writes no audit line.
  ProcessResult dry =
      Cli(config, {"dead", "replay", "--service", "audit", "--id", "1", "--id", "3", "--dry-run"});
  INFO(dry.out << dry.err);
  CHECK(dry.out.find("would replay 1 DEAD row(s) -> NEW") != std::string::npos);
  CHECK(dry.err.find("1 of the given id(s) are not DEAD") != std::string::npos);
  CHECK(dry.err.find("audit:") == std::string::npos);
  CHECK(RowStatus(db, 3) == "DEAD");
}

TEST_CASE("dead list without a last_error column prints - and null", "[ops][dead][process]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("ops_dead_no_last_error");
  db.InsertEvents(2, 1);
  db.Exec(std::string("UPDATE t_outbox SET payload = ") + kOversizedPayload + " WHERE id = 1");
  {
    RelayHarness h(TestService(db, cluster.bootstrap()));
    h.relay->Start();
    REQUIRE(WaitFor([&] { return db.CountByStatus()["DEAD"] == 1; }, 30s));
  }
  TempDir dir;
  const std::string config =
      dir.Write("relay.yaml", RelayConfigYaml(db, "nolasterror", cluster.bootstrap()));
  ProcessResult list = Cli(config, {"dead", "list", "--service", "nolasterror"});
  INFO(list.out << list.err);
  CHECK(list.exit_code == 0);
  CHECK(std::regex_search(list.out, std::regex(R"(\n1 +Order/1 +OrderCreated +1 +\d+s +-\n)")));
  ProcessResult json = Cli(config, {"dead", "list", "--service", "nolasterror", "--json"});
  auto j = nlohmann::json::parse(json.out);
  REQUIRE(j.size() == 1);
  CHECK(j[0].at("last_error").is_null());
}

TEST_CASE(
    "dead list and replay show bytes that are not UTF-8 or are control characters without "
    "aborting or writing them raw",
    "[ops][dead][process]") {
  TestDatabase db("ops_dead_bytes", ", last_error varbinary(255)");
  db.Exec("ALTER TABLE t_outbox MODIFY event_type varbinary(64) NOT NULL");
  db.InsertEvents(1, 1);
  db.Exec(
      "UPDATE t_outbox SET status = 'DEAD', event_type = 0xC3FF41, "
      "last_error = CONCAT('a', CHAR(10), 'b', CHAR(27), '[31m', 0xFF)");
  TempDir dir;
  const std::string config = dir.Write("relay.yaml", RelayConfigYaml(db, "bytes", "127.0.0.1:9"));
  // --json threw nlohmann's type_error 316 (exit 134), for replay after the
  // rows were already NEW and before the audit lines.
  ProcessResult json = Cli(config, {"dead", "list", "--service", "bytes", "--json"});
  INFO(json.out << json.err);
  REQUIRE(json.exit_code == 0);
  auto j = nlohmann::json::parse(json.out);
  REQUIRE(j.size() == 1);
  CHECK(j[0].at("event_type").get<std::string>().find("A") != std::string::npos);
  CHECK(j[0].at("last_error").get<std::string>().rfind("a\nb\x1b[31m", 0) == 0);
  ProcessResult text = Cli(config, {"dead", "list", "--service", "bytes"});
  INFO(text.out);
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("a\\nb\\x1b[31m") != std::string::npos);
  CHECK(text.out.find('\x1b') == std::string::npos);
  ProcessResult replay = Cli(config, {"dead", "replay", "--service", "bytes", "--all", "--json"});
  INFO(replay.out << replay.err);
  CHECK(replay.exit_code == 0);
  CHECK(nlohmann::json::parse(replay.out).at("replayed").size() == 1);
  CHECK(replay.err.find("audit: dead replay service=bytes outbox_id=1") != std::string::npos);
  CHECK(db.CountByStatus()["NEW"] == 1);
}

TEST_CASE("dead replay of rows another transaction holds locked exits 1 and names the likely cause",
          "[ops][dead][process]") {
  TestDatabase db("ops_dead_locked");
  db.InsertEvents(2, 1);
  db.Exec("UPDATE t_outbox SET status = 'DEAD'");
  TempDir dir;
  const std::string config = dir.Write(
      "relay.yaml", RelayConfigYaml(db, "locked", "127.0.0.1:9", "  read_timeout_ms: 1000\n"));
  TestDatabase other("ops_dead_locked_aux");
  other.Exec("START TRANSACTION");
  REQUIRE(other.QueryInt("SELECT id FROM ops_dead_locked.t_outbox WHERE id = 1 FOR UPDATE") == 1);
  // The UPDATE waits for the lock until read_timeout_ms; "Lost connection to
  // server during query" alone sent operators looking at the network.
  ProcessResult r = Cli(config, {"dead", "replay", "--service", "locked", "--all"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("dead replay: MySQL error 2013 (HY000): Lost connection to server during "
                   "query (no answer within mysql.read_timeout_ms, or the connection broke: rows "
                   "locked by another transaction, ") != std::string::npos);
  other.Exec("ROLLBACK");
  ProcessResult again = Cli(config, {"dead", "replay", "--service", "locked", "--all"});
  INFO(again.out << again.err);
  CHECK(again.exit_code == 0);
  CHECK(WaitFor([&] { return db.CountByStatus()["NEW"] == 2; }, 10s));
}

TEST_CASE(
    "retention deletes old SENT rows only and keeps recent SENT and all NEW SENDING and DEAD rows "
    "while the relay keeps draining",
    "[ops][retention]") {
  TestBroker cluster(1, "outbox.event.Order", 2);
  TestDatabase db("ops_retention_drain");
  db.GrantDelete();
  // ids 1..20000: SENT 10 days ago. 20001..20030: NEW backing off, SENDING
  // under a live lease and DEAD, all 10 days old. 20031..20100: SENT a day ago.
  const int kOldSent = 20000;
  const std::string old = "NOW() - INTERVAL 10 DAY";
  for (int first = 1; first <= kOldSent; first += 2000)
    InsertRows(db, first, first + 1999, "SENT", "NOW()", old, "old");
  InsertRows(db, 20001, 20010, "NEW", "NOW() + INTERVAL 1 HOUR", old, "k");
  InsertRows(db, 20011, 20020, "SENDING", "NOW() + INTERVAL 1 HOUR", old, "k");
  InsertRows(db, 20021, 20030, "DEAD", "NOW()", old, "k");
  InsertRows(db, 20031, 20100, "SENT", "NOW()", "NOW() - INTERVAL 1 DAY", "k");

  ServiceConfig s = TestService(db, cluster.bootstrap());
  s.retention.sent_days = 7;
  s.retention.batch_rows = 500;  // 40 chunks,
  s.retention.pause_ms = 200;    // about 8 s for the pass
  s.retention.interval_s = 3600;
  RelayHarness h(s);

  // A service keeps writing events while retention runs: at most 400, 10 ms
  // apart; ids from 100001, aggregates 1..50.
  OutboxWriter writer(db.name(), 10ms, 400, [](int64_t i) {
    const std::string id = std::to_string(100001 + i);
    return id + ",'Order'," + std::to_string(1 + i % 50) + ",'OrderPaid','new" + id + "','{}'";
  });
  h.relay->Start();
  const RetentionWatch w = WatchRetention(h, db, kOldSent);
  writer.Stop();
  REQUIRE(WaitFor(
      [&] {
        return db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id > 100000 AND status = 'SENT'") ==
               writer.written();
      },
      60s));
  WARN("retention pass of " << kOldSent << " old SENT rows took about "
                            << std::chrono::duration_cast<std::chrono::milliseconds>(w.pass).count()
                            << " ms; " << w.new_sent_during
                            << " new events were delivered while it ran (" << writer.written()
                            << " written in all)");

  CHECK(w.drained_during_retention);
  CHECK(w.deleted == kOldSent);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id <= 20000") == 0);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id BETWEEN 20001 AND 20010 AND status = "
                    "'NEW'") == 10);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id BETWEEN 20011 AND 20020 AND status = "
                    "'SENDING'") == 10);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id BETWEEN 20021 AND 20030 AND status = "
                    "'DEAD'") == 10);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id BETWEEN 20031 AND 20100 AND status = "
                    "'SENT'") == 70);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id > 100000 AND status = 'SENT'") ==
        writer.written());
}

TEST_CASE(
    "check --connect names the missing UPDATE or DELETE grant and passes with the minimal grants",
    "[ops][grants][process]") {
  TestBroker cluster(1);
  TestDatabase db("ops_check_grants", ", last_error varchar(255)");
  const std::string pw = "grant-test-pw";
  const std::string table = "`ops_check_grants`.`t_outbox`";
  for (const GrantCase& c : GrantCases(table)) {
    DYNAMIC_SECTION(c.user << " with " << c.grants << (c.retention ? " and retention" : "")) {
      db.Exec("DROP USER IF EXISTS '" + c.user + "'@'%'");
      db.Exec("CREATE USER '" + c.user + "'@'%' IDENTIFIED BY '" + pw + "'");
      db.Exec("GRANT " + c.grants + " ON " + table + " TO '" + c.user + "'@'%'");
      MysqlConfig m = db.mysql();
      std::string yaml =
          "kafka: {bootstrap_servers: \"" + cluster.bootstrap() +
          "\"}\nlog: {format: text}\nservices:\n  - name: order\n    mysql: {host: \"" + m.host +
          "\", port: " + std::to_string(m.port) + ", user: " + c.user +
          ", password_env: OPS_GRANT_TEST_PW, database: ops_check_grants, tls: "
          "{mode: disabled}}\n" +
          (c.retention ? "    retention: {sent_days: 7}\n" : "");
      TempDir dir;
      const std::string config = dir.Write("relay.yaml", yaml);
      ProcessResult r = Cli(config, {"check", "--connect"}, {"OPS_GRANT_TEST_PW=" + pw});
      INFO(r.out << r.err);
      CHECK(r.exit_code == c.exit_code);
      for (const auto& e : c.expect) CHECK(r.out.find(e) != std::string::npos);
      CHECK(r.out.find(c.absent) == std::string::npos);
      db.Exec("DROP USER '" + c.user + "'@'%'");
    }
  }
}

TEST_CASE(
    "the relay drains a table range-partitioned by created_at and an old partition drops whole",
    "[ops][retention]") {
  // docs/CONFIG.md "Very large tables": the README table ("The outbox table") with created_at
  // added to its unique keys (MySQL and MariaDB require the partitioning
  // column in every unique key), partitioned by created_at.
  TestBroker cluster(1, "outbox.event.Order", 2);
  TestDatabase db("ops_partitioned");
  const std::string today = db.QueryString("SELECT DATE_FORMAT(CURDATE(), '%Y-%m-%d')");
  const std::string last_month =
      db.QueryString("SELECT DATE_FORMAT(CURDATE() - INTERVAL 30 DAY, '%Y-%m-%d')");
  db.Exec("DROP TABLE t_outbox");
  db.Exec(
      "CREATE TABLE t_outbox (id bigint NOT NULL, aggregate_type varchar(32) NOT NULL,"
      " aggregate_id bigint NOT NULL, event_type varchar(64) NOT NULL,"
      " event_key varchar(128) NOT NULL, payload json NOT NULL, status varchar(16) NOT NULL,"
      " retry_count int NOT NULL DEFAULT 0, next_retry_at datetime NOT NULL,"
      " created_at datetime NOT NULL, updated_at datetime NOT NULL,"
      " PRIMARY KEY (id, created_at), UNIQUE KEY uk_event_key (event_key, created_at),"
      " KEY idx_status_retry (status, next_retry_at))"
      " PARTITION BY RANGE COLUMNS (created_at) ("
      " PARTITION p_before VALUES LESS THAN ('" +
      last_month + "'), PARTITION p_recent VALUES LESS THAN ('" + today +
      "'), PARTITION p_current VALUES LESS THAN (MAXVALUE))");
  // 500 SENT rows from 40 days ago; then new events, which the relay drains.
  InsertRows(db, 1, 500, "SENT", "NOW()", "NOW() - INTERVAL 40 DAY", "old");
  db.InsertEvents(100, 3, 1001);

  TempDir dir;
  const std::string config =
      dir.Write("relay.yaml", RelayConfigYaml(db, "partitioned", cluster.bootstrap()));
  ProcessResult check = Cli(config, {"check", "--connect"});
  INFO(check.out << check.err);
  CHECK(check.exit_code == 0);

  RelayHarness h(TestService(db, cluster.bootstrap()));
  h.relay->Start();
  REQUIRE(WaitFor([&] { return db.CountByStatus()["SENT"] == 800; }, 60s));

  // Before dropping a partition: nothing in it but SENT rows.
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox PARTITION (p_before) WHERE status <> 'SENT'") ==
        0);
  db.Exec("ALTER TABLE t_outbox DROP PARTITION p_before");
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox") == 300);
  // The relay goes on: more events, delivered.
  db.InsertEvents(50, 2, 2001, "Payment");
  REQUIRE(WaitFor([&] { return db.CountByStatus()["SENT"] == 400; }, 60s));
  auto orders = ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"});
  auto payments = ConsumeAll(cluster.bootstrap(), {"outbox.event.Payment"});
  std::set<int64_t> ids;
  for (const auto* msgs : {&orders, &payments})
    for (const auto& m : *msgs) ids.insert(std::stoll(m.headers.at("outbox_id")));
  CHECK(ids.size() == 400);
  CHECK(IdsForKey(orders, "7") == std::vector<int64_t>{1007, 1107, 1207});
  CHECK(IdsForKey(payments, "7") == std::vector<int64_t>{2007, 2057});
}
