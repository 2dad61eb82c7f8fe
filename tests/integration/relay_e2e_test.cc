#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "kafka/kafka_config.h"
#include "kafka/kafka_publisher.h"
#include "metrics/metrics.h"
#include "outbox/mysql_store.h"
#include "outbox/outbox_admin.h"
#include "outbox_check.h"
#include "relay/relay.h"
#include "support/http_probe.h"
#include "support/kafka_reader.h"
#include "support/metrics_text.h"
#include "support/process.h"
#include "support/relay_harness.h"
#include "support/test_broker.h"
#include "support/test_env.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

// Within each aggregate, the first occurrences in Kafka must be in id order.
int OrderViolations(const std::vector<ConsumedMessage>& msgs) {
  std::map<std::string, int64_t> last;
  std::set<int64_t> seen;
  int violations = 0;
  for (const auto& m : msgs) {
    int64_t id = std::stoll(m.headers.at("outbox_id"));
    if (!seen.insert(id).second) continue;
    std::string agg = m.headers.at("aggregate_type") + "/" + m.key;
    auto it = last.find(agg);
    if (it != last.end() && it->second > id) ++violations;
    last[agg] = std::max(id, it == last.end() ? id : it->second);
  }
  return violations;
}

std::vector<ConsumedMessage> SortedByPartitionOffset(std::vector<ConsumedMessage> msgs) {
  // Per partition the offsets are the broker's order; aggregates live in one
  // partition, so per-aggregate order is read partition by partition.
  std::stable_sort(msgs.begin(), msgs.end(), [](const auto& a, const auto& b) {
    return std::tie(a.topic, a.partition, a.offset) < std::tie(b.topic, b.partition, b.offset);
  });
  return msgs;
}

}  // namespace

TEST_CASE(
    "10000 events drain to SENT and each is in Kafka once with its topic and key and headers and "
    "partition",
    "[e2e]") {
  for (Ordering ordering : kBothOrderings) {
    TestBroker cluster(1, "outbox.event.Order", 4);
    OrderingRun run("e2e_drain", ordering, cluster.bootstrap(), 2500, 4);
    auto& [db, s] = run;
    RelayHarness h(s);
    h.relay->Start();
    REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 120s));
    auto counts = db.CountByStatus();
    CHECK(counts["SENT"] == 10000);
    auto msgs = ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"});
    REQUIRE(msgs.size() == 10000);
    std::set<int64_t> ids;
    for (const auto& m : msgs) {
      int64_t id = std::stoll(m.headers.at("outbox_id"));
      ids.insert(id);
      int64_t aggregate = (id - 1) % 2500 + 1;
      int version = static_cast<int>((id - 1) / 2500);
      CHECK(m.key == std::to_string(aggregate));
      CHECK(m.headers.at("aggregate_type") == "Order");
      CHECK(m.headers.at("event_key") == "Order-" + m.headers.at("event_type") + "-" +
                                             std::to_string(aggregate) + "-" +
                                             std::to_string(version));
      CHECK(m.headers.at("created_at").size() == 20);
      CHECK(m.headers.at("created_at").back() == 'Z');
      CHECK(m.value.find("\"aggregate\":" + std::to_string(aggregate) + ",") != std::string::npos);
      CHECK(m.partition == check::JavaPartition(m.key, 4));
    }
    CHECK(ids.size() == 10000);
    if (ordering == Ordering::kPerAggregate)
      CHECK(OrderViolations(SortedByPartitionOffset(msgs)) == 0);
    // The counter moves just after the settle that the table shows. (Not
    // RefreshGauges(): the running relay's housekeeping thread owns that
    // connection, and a second thread on it broke the protocol and crashed.)
    CHECK(WaitFor(
        [&] {
          return h.Metric("outbox_events_published_total", "topic=\"outbox.event.Order\"") == 10000;
        },
        10s));
  }
}

TEST_CASE("injected produce errors cause retries and then every event is delivered in order",
          "[e2e][mock-faults]") {
  TestBroker cluster(1, "outbox.event.Order", 3);
  TestDatabase db("e2e_produce_errors");
  db.InsertEvents(200, 5);
  ServiceConfig s = TestService(db, cluster.bootstrap());
  s.batch_size = 100;
  s.retry.max_attempts = 50;
  // Non-retriable for librdkafka's idempotent producer, so they reach the relay.
  cluster.PushProduceErrors(RD_KAFKA_RESP_ERR_INVALID_REQUIRED_ACKS, 6);
  RelayHarness h(s);
  h.relay->Start();
  REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 120s));
  CHECK(db.CountByStatus()["SENT"] == 1000);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE retry_count > 0") > 0);
  auto msgs = ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"});
  std::set<int64_t> ids;
  for (const auto& m : msgs) ids.insert(std::stoll(m.headers.at("outbox_id")));
  CHECK(ids.size() == 1000);
  CHECK(OrderViolations(SortedByPartitionOffset(msgs)) == 0);
  CHECK(h.Metric("outbox_publish_failures_total", "reason=\"broker_error\"") > 0);
}

TEST_CASE(
    "rows handed to a producer whose every broker is down are taken back unsent: no attempt "
    "counted and none DEAD",
    "[e2e][mock-faults]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("e2e_broker_down", ", last_error varchar(255)");
  db.InsertEvents(3, 1);
  ServiceConfig s = TestService(db, cluster.bootstrap());
  s.lease_ms = 2000;  // message.timeout.ms = 1 s
  s.retry.max_attempts = 2;
  s.retry.initial_backoff_ms = 50;
  s.retry.max_backoff_ms = 50;
  RelayHarness h(s);
  cluster.SetAllBrokersDown(true);
  // The relay does not claim while it sees the broker down; claim anyway, as
  // a claim made just before the relay learnt it would: the producer takes
  // the messages back instead of holding them past their lease.
  int rounds = 0;
  while (h.Metric("outbox_publish_failures_total", "reason=\"purged\"") < 3 && rounds++ < 30) {
    h.steps().claim.ClaimOnce();
    h.steps().settle.SettleOrGroup(3000ms);
    std::this_thread::sleep_for(100ms);
  }
  CHECK(h.Metric("outbox_publish_failures_total", "reason=\"purged\"") >= 3);
  CHECK(db.CountByStatus()["DEAD"] == 0);
  CHECK(db.QueryInt("SELECT MAX(retry_count) FROM t_outbox") == 0);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENDING'") == 0);
}

TEST_CASE("an oversized payload goes DEAD at once with last_error while the others flow", "[e2e]") {
  TestBroker cluster(1, "outbox.event.Order", 2);
  TestDatabase db("e2e_oversized", ", last_error varchar(255)");
  db.InsertEvents(10, 1);
  std::string big(1200000, 'x');
  db.Exec(
      "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, "
      "status,"
      " next_retry_at, created_at, updated_at) VALUES (100, 'Order', 999, 'OrderCreated', 'big-1',"
      " JSON_OBJECT('blob', '" +
      big + "'), 'NEW', NOW(), NOW(), NOW())");
  ServiceConfig s = TestService(db, cluster.bootstrap());
  RelayHarness h(s);
  h.relay->Start();
  REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 60s));
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENT'") == 10);
  CHECK(db.QueryInt(
            "SELECT COUNT(*) FROM t_outbox WHERE id = 100 AND status = 'DEAD' AND retry_count = 1"
            " AND last_error LIKE '%MSG_SIZE_TOO_LARGE%'") == 1);
}

TEST_CASE("an expired SENDING row is reclaimed and delivered while a live lease is left alone",
          "[e2e]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  for (Ordering ordering : kBothOrderings) {
    TestDatabase db(OrderingDbName("e2e_reclaim", ordering));
    db.InsertEvents(2, 1);
    db.Exec(
        "UPDATE t_outbox SET status = 'SENDING', next_retry_at = NOW() - INTERVAL 1 SECOND WHERE "
        "id = 1");
    db.Exec(
        "UPDATE t_outbox SET status = 'SENDING', next_retry_at = NOW() + INTERVAL 1 HOUR WHERE id "
        "= 2");
    ServiceConfig s = TestService(db, cluster.bootstrap(), ordering);
    RelayHarness h(s);
    h.relay->Start();
    REQUIRE(WaitFor(
        [&] {
          return db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id = 1 AND status = 'SENT'") == 1;
        },
        30s));
    CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id = 2 AND status = 'SENDING'") == 1);
    CHECK(h.Metric("outbox_leases_reclaimed_total") == 1);
  }
}

TEST_CASE("/metrics gauges report the backlog and oldest age and DEAD count of the table",
          "[e2e]") {
  TestBroker cluster(1);
  TestDatabase db("e2e_gauges");
  db.Exec(
      "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, "
      "status,"
      " next_retry_at, created_at, updated_at) VALUES"
      " (1,'Order',1,'A','k1','{}','NEW',NOW() + INTERVAL 1 HOUR, NOW() - INTERVAL 100 SECOND, "
      "NOW()),"
      " (2,'Order',2,'A','k2','{}','SENDING',NOW() + INTERVAL 1 HOUR, NOW() - INTERVAL 50 SECOND, "
      "NOW()),"
      " (3,'Order',3,'A','k3','{}','DEAD',NOW(), NOW() - INTERVAL 500 SECOND, NOW()),"
      " (4,'Order',3,'A','k4','{}','DEAD',NOW(), NOW() - INTERVAL 500 SECOND, NOW()),"
      " (5,'Order',5,'A','k5','{}','SENT',NOW(), NOW() - INTERVAL 900 SECOND, NOW()),"
      " (6,'Order',6,'A','k6','{}','WEIRD',NOW(), NOW() - INTERVAL 900 SECOND, NOW())");
  ServiceConfig s = TestService(db, cluster.bootstrap());
  RelayHarness h(s);
  REQUIRE(h.steps().housekeeping.RefreshGauges().ok());
  CHECK(h.Metric("outbox_backlog_events") == 2);
  CHECK(h.Metric("outbox_dead_events") == 2);
  // Order/3's DEAD rows hold nothing back: no later unsent event (the
  // blocked-aggregates cases are in operations_test.cc).
  CHECK(h.Metric("outbox_blocked_aggregates") == 0);
  CHECK(h.Metric("outbox_unknown_status_rows") == 1);
  CHECK(h.Metric("outbox_database_up") == 1);
  const double age = h.Metric("outbox_oldest_unsent_age_seconds");
  CHECK(age >= 100);
  CHECK(age < 110);
}

TEST_CASE("a DEAD event blocks exactly its aggregate and releases it in order after replay",
          "[e2e]") {
  TestBroker cluster(1, "outbox.event.Order", 2);
  TestDatabase db("e2e_dead_block");
  db.InsertEvents(5, 3);  // ids 1..5 first events, 6..10 second, 11..15 third
  db.Exec("UPDATE t_outbox SET status = 'DEAD', retry_count = 10 WHERE id = 2");  // aggregate 2,
                                                                                  // first event
  ServiceConfig s = TestService(db, cluster.bootstrap());
  RelayHarness h(s);
  h.relay->Start();
  REQUIRE(WaitFor(
      [&] { return db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENT'") == 12; },
      30s));
  std::this_thread::sleep_for(500ms);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE aggregate_id = 2 AND status = 'NEW'") ==
        2);
  // The housekeeping thread refreshes the gauges every gauge_interval_ms.
  CHECK(WaitFor([&] { return h.Metric("outbox_blocked_aggregates") == 1; }, 10s));
  std::vector<DeadRow> changed;
  REQUIRE(ReplayDead(db.mysql(), DeadSelector{{2}, std::nullopt, false}, false, &changed).ok());
  CHECK(changed.size() == 1);
  REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 30s));
  auto msgs = SortedByPartitionOffset(ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"}));
  std::vector<int64_t> agg2;
  for (const auto& m : msgs)
    if (m.key == "2") agg2.push_back(std::stoll(m.headers.at("outbox_id")));
  CHECK(agg2 == std::vector<int64_t>{2, 7, 12});
}

TEST_CASE("a missing table is reported and picked up when it appears", "[e2e]") {
  TestBroker cluster(1);
  TestDatabase db("e2e_late_table");
  db.Exec("RENAME TABLE t_outbox TO t_outbox_later");
  ServiceConfig s = TestService(db, cluster.bootstrap());
  RelayHarness h(s);
  h.relay->Start();
  REQUIRE(WaitFor([&] { return !h.relay->LastError().empty(); }, 10s));
  CHECK_FALSE(h.relay->DatabaseReady());
  CHECK(h.relay->LastError().find("does not exist") != std::string::npos);
  db.Exec("RENAME TABLE t_outbox_later TO t_outbox");
  db.InsertEvents(3, 1);
  REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 30s));
  CHECK(h.relay->DatabaseReady());
}

// The top of a relay config: text logs, HTTP on 127.0.0.1:`http_port` (0:
// ephemeral), up to the `services:` key.
std::string RelayYaml(const std::string& instance, const std::string& bootstrap,
                      int http_port = 0) {
  return "instance_id: " + instance + "\nhttp: {listen: 127.0.0.1:" + std::to_string(http_port) +
         "}\nlog: {format: text}\nkafka: {bootstrap_servers: " + bootstrap + "}\nservices:\n";
}

// One entry of `services:` on `m` (the relay user's own account) without
// TLS; `mysql_extra` goes into its mysql mapping (", connect_timeout_ms:
// 1000"), `service_extra` after it ("    batch_size: 200\n").
std::string ServiceYaml(const std::string& service, const MysqlConfig& m,
                        const std::string& mysql_extra = "",
                        const std::string& service_extra = "") {
  std::ostringstream yaml;
  yaml << "  - name: " << service << "\n    mysql: {host: " << m.host << ", port: " << m.port
       << ", user: " << m.user << ", database: " << m.database << RelayPasswordYaml()
       << ", tls: {mode: disabled}" << mysql_extra << "}\n"
       << service_extra;
  return yaml.str();
}

// Short polls and gauge refreshes, for a service entry.
const char* const kFastPoll = "    poll_interval_ms: 50\n    gauge_interval_ms: 200\n";

// A config with one service on the test database and an ephemeral HTTP port.
std::string OneServiceYaml(const std::string& instance, const std::string& bootstrap,
                           const MysqlConfig& m, const std::string& service,
                           const std::string& service_extra = "") {
  return RelayYaml(instance, bootstrap) + ServiceYaml(service, m, "", service_extra);
}

// `outbox-relay run` on a config written to a private temp dir.
struct RelayRun {
  explicit RelayRun(const std::string& yaml)
      : proc({OUTBOX_BINARY, "run", "--config", dir.Write("relay.yaml", yaml)},
             ChildEnv(RelayChildEnv())) {}
  void Signal(int sig) { proc.Signal(sig); }
  int Wait(std::chrono::milliseconds d) { return proc.Wait(d); }
  std::string err() const { return proc.err(); }

  TempDir dir;
  ChildProcess proc;
};

TEST_CASE("SIGTERM mid-drain leaves no row in SENDING and exits 0", "[e2e][process]") {
  TestBroker cluster(1, "outbox.event.Order", 2);
  TestDatabase db("e2e_sigterm");
  db.InsertEvents(20000, 1);
  RelayRun relay(
      OneServiceYaml("sigterm", cluster.bootstrap(), db.mysql(), "sig", "    batch_size: 200\n"));
  REQUIRE(WaitFor(
      [&] { return db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENT'") > 2000; },
      60s));
  relay.Signal(SIGTERM);
  CHECK(relay.Wait(60s) == 0);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENDING'") == 0);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'NEW'") > 0);
}

TEST_CASE("a database that is down at startup is picked up when it comes back",
          "[e2e][process][local-db]") {
  TestBroker cluster(1, "outbox.event.Order", 2);
  TestDatabase db("e2e_db_late");
  db.InsertEvents(500, 2);
  const int http = FreeTcpPort();
  const std::string yaml = RelayYaml("late-db", cluster.bootstrap(), http) +
                           ServiceYaml("late", db.mysql(), ", connect_timeout_ms: 1000", kFastPoll);
  std::string metrics;
  {
    DatabaseOutage outage;
    REQUIRE(outage.Begin());
    RelayRun relay(yaml);
    // While the database is down: alive, not ready, database_up 0.
    REQUIRE(WaitFor([&] { return HttpGet(http, "/healthz").status == 200; }, 20s));
    HttpReply ready = HttpGet(http, "/readyz");
    CHECK(ready.status == 503);
    CHECK(ready.body.find("service late: not ready") != std::string::npos);
    CHECK(MetricValue(HttpGet(http, "/metrics").body, "outbox_database_up{service=\"late\"}") == 0);
    std::this_thread::sleep_for(1s);  // a few failed reconnects
    CHECK(relay.Wait(0ms) == -1);     // still running

    REQUIRE(outage.End());
    REQUIRE(WaitFor([&] { return HttpGet(http, "/readyz").status == 200; }, 60s));
    REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 60s));
    metrics = HttpGet(http, "/metrics").body;
    CHECK(MetricValue(metrics, "outbox_database_up{service=\"late\"}") == 1);
    CHECK(relay.err().find("database reachable again") != std::string::npos);
    relay.Signal(SIGTERM);
    CHECK(relay.Wait(30s) == 0);
  }
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENT'") == 1000);
  auto msgs = ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"});
  CHECK(msgs.size() == 1000);
  CHECK(OrderViolations(msgs) == 0);
}

TEST_CASE("one service's broken database does not stop the others", "[e2e][process]") {
  TestBroker cluster(1, "outbox.event.Order", 2);
  TestDatabase good("e2e_two_good");
  good.InsertEvents(300, 2);
  MysqlConfig broken = good.mysql();
  broken.database = "e2e_no_such_db";
  const int http = FreeTcpPort();
  RelayRun relay(RelayYaml("two", cluster.bootstrap(), http) +
                 ServiceYaml("good", good.mysql(), "", kFastPoll) +
                 ServiceYaml("broken", broken, "", kFastPoll));
  REQUIRE(WaitFor([&] { return Unsent(good) == 0; }, 60s));
  HttpReply ready = HttpGet(http, "/readyz");
  CHECK(ready.status == 503);
  CHECK(ready.body.find("service good: ok") != std::string::npos);
  CHECK(ready.body.find("service broken: not ready") != std::string::npos);
  CHECK(ready.body.find("e2e_no_such_db") != std::string::npos);
  std::string metrics = HttpGet(http, "/metrics").body;
  CHECK(MetricValue(metrics, "outbox_database_up{service=\"good\"}") == 1);
  CHECK(MetricValue(metrics, "outbox_database_up{service=\"broken\"}") == 0);
  CHECK(ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"}).size() == 600);
  relay.Signal(SIGTERM);
  CHECK(relay.Wait(30s) == 0);
}
