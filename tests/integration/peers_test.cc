// Faulty peers: a database that kills the relay's connections, holds locks,
// answers slowly, loses the table or a column, or refuses UPDATE; a broker
// that accepts connections and never answers. Each must be reported (logs,
// /readyz, metrics) and recovered from, with nothing lost and no hang.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <set>
#include <sstream>
#include <thread>

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

// A TCP listener on 127.0.0.1 that accepts connections and reads whatever
// arrives, but never writes a byte: a broker that hangs.
class BlackHoleBroker {
 public:
  BlackHoleBroker() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 64) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~BlackHoleBroker() {
    stop_ = true;
    thread_.join();
    for (int c : clients_) ::close(c);
    ::close(fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_.load(); }

 private:
  void Loop() {
    while (!stop_) {
      std::vector<pollfd> fds{{fd_, POLLIN, 0}};
      for (int c : clients_) fds.push_back({c, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c >= 0) {
          clients_.push_back(c);
          ++accepted_;
        }
      }
      char buf[4096];
      for (size_t i = 1; i < fds.size(); ++i)
        if (fds[i].revents & (POLLIN | POLLHUP)) (void)!::read(fds[i].fd, buf, sizeof buf);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::vector<int> clients_;  // loop thread only
  std::thread thread_;
};

// The relay binary with a config written to a temp dir.
struct RelayProcess {
  RelayProcess(const std::string& yaml, const std::vector<std::string>& env = RelayChildEnv())
      : proc({OUTBOX_BINARY, "run", "--config", dir.Write("relay.yaml", yaml)}, ChildEnv(env)) {}
  TempDir dir;
  ChildProcess proc;
};

std::string ServiceYaml(const std::string& name, const MysqlConfig& m, const std::string& extra) {
  std::ostringstream y;
  y << "  - name: " << name << "\n    mysql: {host: " << m.host << ", port: " << m.port
    << ", user: " << m.user << ", database: " << m.database << RelayPasswordYaml()
    << ", tls: {mode: disabled}, connect_timeout_ms: 1000}\n    poll_interval_ms: 50\n"
    << "    gauge_interval_ms: 200\n"
    << extra;
  return y.str();
}

// The relay's sessions on `db` (not the test's own).
std::vector<int64_t> RelaySessions(TestDatabase& db) {
  std::vector<int64_t> ids;
  int64_t n = db.QueryInt("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = " +
                          SqlQuote(db.name()) + " AND ID <> CONNECTION_ID()");
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = db.QueryInt(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = " + SqlQuote(db.name()) +
        " AND ID <> CONNECTION_ID() ORDER BY ID LIMIT " + std::to_string(i) + ", 1");
    if (id) ids.push_back(id);
  }
  return ids;
}

// A relay on a table of its own (`extra_columns` added) that has sent the
// first ten events (aggregates 1..10), for a change to the table while it
// runs.
struct RunningRelay {
  RunningRelay(const std::string& db_name, const std::string& extra_columns)
      : db(db_name, extra_columns), h(TestService(db, cluster.bootstrap())) {
    db.InsertEvents(10, 1);
    h.relay->Start();
    REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 30s));
  }
  TestBroker cluster{1, "outbox.event.Order", 1};
  TestDatabase db;
  RelayHarness h;
};

}  // namespace

TEST_CASE("KILL CONNECTION on the relay's sessions mid-drain loses nothing and is recovered",
          "[peers]") {
  TestBroker cluster(1, "outbox.event.Order", 2);
  for (Ordering ordering : kBothOrderings) {
    OrderingRun run("peers_kill", ordering, cluster.bootstrap(), 2000, 3);
    auto& [db, s] = run;
    s.batch_size = 100;
    RelayHarness h(s);
    h.relay->Start();
    int kills = 0;
    for (int round = 0; round < 20 && Unsent(db) > 0; ++round) {
      for (int64_t id : RelaySessions(db)) {
        try {
          db.Exec("KILL CONNECTION " + std::to_string(id));
          ++kills;
        } catch (...) {
          // Already gone.
        }
      }
      std::this_thread::sleep_for(150ms);
    }
    CHECK(kills >= 5);
    REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 120s));
    CHECK(db.CountByStatus()["SENT"] == 6000);
    CHECK(WaitFor([&] { return h.relay->DatabaseReady(); }, 10s));
    CHECK(h.Metric("outbox_database_up") == 1);
  }
  std::set<int64_t> ids;
  for (const auto& m : ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"}))
    ids.insert(std::stoll(m.headers.at("outbox_id")));
  CHECK(ids.size() == 6000);
}

TEST_CASE("rows locked by another session are skipped and flow once the lock is released",
          "[peers]") {
  TestBroker cluster(1, "outbox.event.Order", 2);
  TestDatabase db("peers_locked_rows");
  db.InsertEvents(50, 2);                               // ids 1..50 first events, 51..100 second
  TestDatabase locker_handle("peers_locked_rows_aux");  // a second session
  locker_handle.Exec("START TRANSACTION");
  // Lock aggregate 1's first event and aggregate 2's second event.
  CHECK(locker_handle.QueryInt(
            "SELECT id FROM peers_locked_rows.t_outbox WHERE id = 1 FOR UPDATE") == 1);
  CHECK(locker_handle.QueryInt(
            "SELECT id FROM peers_locked_rows.t_outbox WHERE id = 52 FOR UPDATE") == 52);
  RelayHarness h(TestService(db, cluster.bootstrap()));
  h.relay->Start();
  // Everything but the locked rows and (ordering) aggregate 1's later event.
  REQUIRE(WaitFor([&] { return db.CountByStatus()["SENT"] == 97; }, 60s));
  std::this_thread::sleep_for(300ms);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id IN (1, 51, 52) AND status = 'NEW'") ==
        3);
  CHECK(h.relay->DatabaseReady());
  locker_handle.Exec("ROLLBACK");
  REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 30s));
}

TEST_CASE("a settle that waits on a lock past read_timeout is reported and then applied",
          "[peers]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("peers_slow_settle");
  db.InsertEvents(3, 1);
  ServiceConfig s = TestService(db, cluster.bootstrap());
  s.mysql.read_timeout_ms = 1000;
  s.lease_ms = 30000;
  RelayHarness h(s);
  REQUIRE(h.steps().claim.ClaimOnce() != ClaimRound::kFailed);
  REQUIRE(db.CountByStatus()["SENDING"] == 3);
  TestDatabase other("peers_slow_settle_aux");
  other.Exec("START TRANSACTION");
  REQUIRE(other.QueryInt("SELECT id FROM peers_slow_settle.t_outbox WHERE id = 2 FOR UPDATE") == 2);
  // The settle's UPDATE waits for the lock; the client gives up after the
  // read timeout, reports the database as not ready, and keeps the batch.
  CHECK(h.steps().settle.SettleOrGroup(5s).count == 0);
  CHECK_FALSE(h.steps().health.up());
  CHECK(h.steps().health.LastError().find("settle on peers_slow_settle.t_outbox: MySQL error 20") ==
        0);
  CHECK(h.Metric("outbox_database_up") == 0);
  other.Exec("ROLLBACK");
  int settled = 0;
  for (int i = 0; i < 50 && settled == 0; ++i)
    settled = h.steps().settle.SettleOrGroup(200ms).count;
  CHECK(settled == 1);
  CHECK(h.steps().health.up());
  // The abandoned UPDATE may have run on the server once the lock was
  // released; either way every row is SENT exactly as acknowledged.
  CHECK(WaitFor([&] { return db.CountByStatus()["SENT"] == 3; }, 10s));
}

TEST_CASE(
    "a broker that accepts connections and never answers is reported and shutdown still completes",
    "[peers][process]") {
  BlackHoleBroker broker;
  TestDatabase db("peers_black_hole");
  db.InsertEvents(20, 1);
  const int http = FreeTcpPort();
  std::string yaml = "instance_id: black-hole\nhttp: {listen: 127.0.0.1:" + std::to_string(http) +
                     "}\nlog: {format: text}\nkafka: {bootstrap_servers: " + broker.address() +
                     "}\nservices:\n" + ServiceYaml("hole", db.mysql(), "    lease_ms: 6000\n");
  RelayProcess relay(yaml);
  REQUIRE(WaitFor([&] { return HttpGet(http, "/healthz").status == 200; }, 20s));
  CHECK(WaitFor([&] { return broker.accepted() > 0; }, 20s));
  // Not ready, kafka_up 0, the database fine; rows wait, none lost.
  // The service is "not ready" until its first connection; wait for both.
  HttpReply ready;
  CHECK(WaitFor(
      [&] {
        ready = HttpGet(http, "/readyz");
        return ready.status == 503 && ready.body.find("service hole: ok") != std::string::npos;
      },
      30s));
  CHECK(ready.body.find("kafka " + broker.address() + ": unreachable") != std::string::npos);
  // kafka_up is refreshed once a second.
  CHECK(WaitFor([&] { return MetricValue(HttpGet(http, "/metrics").body, "outbox_kafka_up") == 0; },
                5s));
  CHECK(MetricValue(HttpGet(http, "/metrics").body, "outbox_database_up{service=\"hole\"}") == 1);
  std::this_thread::sleep_for(4s);  // longer than message.timeout.ms (lease_ms / 2)
  // Nothing was claimed for a broker that never answered: no attempt burnt.
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'NEW' AND retry_count = 0") ==
        20);
  CHECK(relay.proc.err().find("kafka: no broker reachable") != std::string::npos);
  // SIGTERM: exits 0 without waiting on the silent broker forever.
  relay.proc.Signal(SIGTERM);
  CHECK(relay.proc.Wait(60s) == 0);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENDING'") == 0);

  // check --connect gives up on it too, with exit 1 and a clear line.
  ProcessResult r = RunProcess(
      {OUTBOX_BINARY, "check", "--connect", "--config", relay.dir.Write("check.yaml", yaml)},
      ChildEnv(RelayChildEnv()), 60s);
  CHECK(r.exit_code == 1);
  // librdkafka's own cause when it gave one (a timed-out request), else the
  // check's own words.
  INFO(r.out);
  CHECK((r.out.find("kafka " + broker.address() + ": no broker answered within 5 s") !=
             std::string::npos ||
         r.out.find("kafka " + broker.address() + ": broker_down: ") != std::string::npos));
}

TEST_CASE(
    "a broker that stops answering mid-drain delays rows but loses none and Stop does not hang",
    "[peers][mock-faults]") {
  TestBroker cluster(1, "outbox.event.Order", 2);
  TestDatabase db("peers_silent_broker");
  db.InsertEvents(20000, 1);
  ServiceConfig s = TestService(db, cluster.bootstrap());
  s.batch_size = 50;
  s.lease_ms = 4000;  // message.timeout.ms 2000
  s.retry.max_attempts = 100;
  {
    RelayHarness h(s);
    h.relay->Start();
    REQUIRE(WaitFor([&] { return db.CountByStatus()["SENT"] > 0; }, 30s));
    cluster.SetRtt(60000);  // answers nothing for a minute
    INFO("SENT when the broker went silent: " << db.CountByStatus()["SENT"]);
    REQUIRE(WaitFor(
        [&] { return db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE retry_count > 0") > 0; },
        30s));
    CHECK(WaitFor(
        [&] {
          return h.Metric("outbox_publish_failures_total", "reason=\"timeout\"") > 0 ||
                 h.Metric("outbox_publish_failures_total", "reason=\"broker_down\"") > 0;
        },
        10s));
    // Stop with batches in flight to the silent broker: returns, leaves
    // nothing it could settle in SENDING (the rest expires with its lease).
    h.relay->Stop(3s);
  }
  cluster.SetRtt(0);
  RelayHarness again(s);
  again.relay->Start();
  REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 90s));
  std::set<int64_t> ids;
  for (const auto& m : ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"}))
    ids.insert(std::stoll(m.headers.at("outbox_id")));
  CHECK(ids.size() == 20000);
}

TEST_CASE("a required column missing at startup is reported and picked up once added", "[peers]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("peers_missing_column");
  db.Exec("ALTER TABLE t_outbox DROP COLUMN retry_count");
  db.Exec(
      "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload,"
      " status, next_retry_at, created_at, updated_at) VALUES (1, 'Order', 1, 'A', 'k1', '{}',"
      " 'NEW', NOW(), NOW(), NOW())");
  RelayHarness h(TestService(db, cluster.bootstrap()));
  h.relay->Start();
  REQUIRE(WaitFor([&] { return !h.relay->LastError().empty(); }, 10s));
  CHECK_FALSE(h.relay->DatabaseReady());
  CHECK(h.relay->LastError() ==
        "table peers_missing_column.t_outbox is missing column(s): retry_count");
  db.Exec("ALTER TABLE t_outbox ADD COLUMN retry_count int NOT NULL DEFAULT 0");
  REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 30s));
  CHECK(WaitFor([&] { return h.relay->DatabaseReady(); }, 10s));
}

TEST_CASE("a table dropped while running is reported and picked up when it is back", "[peers]") {
  RunningRelay running("peers_dropped_table", ", last_error varchar(255)");
  TestDatabase& db = running.db;
  RelayHarness& h = running.h;
  db.Exec("RENAME TABLE t_outbox TO t_outbox_moved");
  REQUIRE(WaitFor([&] { return !h.relay->DatabaseReady(); }, 10s));
  INFO(h.relay->LastError());
  CHECK(h.relay->LastError().find("t_outbox") != std::string::npos);
  CHECK((h.relay->LastError().find("does not exist") != std::string::npos ||
         h.relay->LastError().find("doesn't exist") != std::string::npos));
  CHECK(h.Metric("outbox_database_up") == 0);
  // Back, without the optional last_error column: the relay must re-read the
  // columns, not keep using the ones it saw first.
  db.Exec("CREATE TABLE t_outbox LIKE t_outbox_moved");
  db.Exec("ALTER TABLE t_outbox DROP COLUMN last_error");
  db.InsertEvents(10, 1, 100);
  REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 30s));
  CHECK(WaitFor([&] { return h.relay->DatabaseReady(); }, 10s));
  CHECK(db.CountByStatus()["SENT"] == 10);
}

TEST_CASE("an optional column dropped while running does not stall the relay", "[peers]") {
  RunningRelay running("peers_dropped_column", ", last_error varchar(255), headers json");
  TestDatabase& db = running.db;
  RelayHarness& h = running.h;
  db.Exec("ALTER TABLE t_outbox DROP COLUMN headers, DROP COLUMN last_error");
  db.InsertEvents(10, 1, 100, "Invoice");
  REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 30s));
  CHECK(db.CountByStatus()["SENT"] == 20);
  CHECK(WaitFor([&] { return h.relay->DatabaseReady(); }, 10s));
}

TEST_CASE("a relay user without UPDATE is reported clearly and recovers after GRANT UPDATE",
          "[peers]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("peers_grants");
  db.InsertEvents(20, 1);
  ScopedDbUser user(db, "outbox_ro", "ro-Secret-9", "SELECT");  // SELECT alone
  ServiceConfig s = TestService(db, cluster.bootstrap());
  s.mysql.user = "outbox_ro";
  s.mysql.password = "ro-Secret-9";
  RelayHarness h(s);
  h.relay->Start();
  REQUIRE(WaitFor([&] { return !h.relay->LastError().empty(); }, 10s));
  CHECK_FALSE(h.relay->DatabaseReady());
  CHECK(h.relay->LastError().find("command denied to user 'outbox_ro'@'127.0.0.1' for table") !=
        std::string::npos);
  CHECK(h.relay->LastError().find("needs SELECT and UPDATE on the table") != std::string::npos);
  CHECK(h.relay->LastError().find("ro-Secret-9") == std::string::npos);
  CHECK(db.CountByStatus()["NEW"] == 20);
  // The minimal grants: SELECT and UPDATE on the table, nothing else.
  db.Exec("GRANT UPDATE ON `peers_grants`.`t_outbox` TO 'outbox_ro'@'127.0.0.1'");
  REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 30s));
  CHECK(WaitFor([&] { return h.relay->DatabaseReady(); }, 10s));
  CHECK(db.CountByStatus()["SENT"] == 20);
}

TEST_CASE(
    "the rows a relay holds never exceed batch_size times max_inflight_batches and the SENT "
    "group's rows",
    "[peers][mock-faults]") {
  TestBroker cluster(1, "outbox.event.Order", 4);
  for (Ordering ordering : kBothOrderings) {
    OrderingRun run("peers_window", ordering, cluster.bootstrap(), 5000, 1);
    auto& [db, s] = run;
    s.batch_size = 40;
    s.max_inflight_batches = 3;
    s.lease_ms = 30000;
    cluster.SetRtt(400);  // a slow broker: batches pile up in flight
    RelayHarness h(s);
    h.relay->Start();
    int64_t max_sending = 0;
    for (int i = 0; i < 80; ++i) {  // ~4 s of samples
      max_sending = std::max(max_sending,
                             db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENDING'"));
      std::this_thread::sleep_for(50ms);
    }
    INFO("max SENDING " << max_sending);
    CHECK(max_sending > 0);
    // Acknowledged rows waiting in the SENT group (SentGrouping::kMaxRows,
    // src/relay/settle_timing.h) are held too, outside the in-flight window.
    CHECK(max_sending <= 40 * 3 + static_cast<int64_t>(SentGrouping::kMaxRows));
    CHECK(h.steps().queue->inflight() <= 3);
    cluster.SetRtt(0);
    REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 120s));
  }
}
