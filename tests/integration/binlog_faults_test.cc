// Every fallback of the binlog wake-up against a real MariaDB: the stream
// goes down with the reason and the fix, and comes back by itself
// (docs/BINLOG.md "Failure modes, fallback and recovery").
#include <cppconn/exception.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "binlog/binlog_check.h"
#include "binlog/binlog_stream.h"
#include "binlog/binlog_streams.h"
#include "support/binlog_test_support.h"
#include "support/tcp_proxy.h"
#include "support/test_env.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

bool Has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

auto Problem(StreamProblem p) {
  return [p](const StreamState& s) { return !s.up && s.problem == p; };
}

// A stream with a state log and a wake counter (through a hub of its own).
struct Watched {
  explicit Watched(binlog::BinlogOptions o)
      : stream(
            std::move(o),
            [this](const binlog::Commit&) { commit_wake(binlog::BinlogStreams::Notice::kInsert); },
            log.Callback()) {}
  StateLog log;
  Waker commits;
  binlog::BinlogStreams::NoticeFn commit_wake = commits.Callback();
  binlog::BinlogStream stream;
};

// A user with only the given global privileges; dropped on the way out.
class TestUser {
 public:
  TestUser(const std::string& name, const std::string& privileges) : name_(name) {
    SqlClient admin("mysql");
    admin.Exec("DROP USER IF EXISTS '" + name_ + "'@'%'");
    admin.Exec("CREATE USER '" + name_ + "'@'%' IDENTIFIED BY 'binlog-test-pw'");
    if (!privileges.empty()) admin.Exec("GRANT " + privileges + " ON *.* TO '" + name_ + "'@'%'");
  }
  ~TestUser() {
    try {
      SqlClient("mysql").Exec("DROP USER IF EXISTS '" + name_ + "'@'%'");
    } catch (...) {
    }
  }
  binlog::BinlogOptions Options() const {
    binlog::BinlogOptions o = TestBinlogOptions();
    o.mysql.user = name_;
    o.mysql.password = "binlog-test-pw";
    return o;
  }

 private:
  std::string name_;
};

}  // namespace

TEST_CASE("binlog: a server restart takes the stream down and it reconnects by itself",
          "[binlog][binlog-restart][local-db]") {
  RequireLogBin();
  REQUIRE(!TestMysqlDir().empty());
  TestDatabase db("binlog_restart");
  binlog::BinlogStreams hub;
  Waker w;
  auto sub = hub.Subscribe(TestBinlogOptions(), "binlog_restart", "t_outbox", w.Callback());
  REQUIRE(WaitFor([&] { return sub->up(); }, 10s, 10ms));
  const int before_stop = w.count();
  REQUIRE(StopMariaDb());
  CHECK(WaitFor([&] { return !sub->up(); }, 10s, 10ms));
  CHECK(w.count() > before_stop);  // the down transition woke the subscriber: it polls now
  CHECK(Has(sub->reason(), "MySQL error"));
  REQUIRE(RestartMariaDb());
  REQUIRE(WaitFor([&] { return sub->up(); }, 20s, 10ms));
  CHECK(sub->state().connects >= 2);
  const int seen = w.count();
  db.InsertEvents(1, 1);
  CHECK(w.WaitAbove(seen, 5s));
}

TEST_CASE(
    "binlog: RESET MASTER under a running stream is a purged position and it restarts at the end",
    "[binlog]") {
  RequireLogBin();
  TestDatabase db("binlog_purged");
  Watched s(TestBinlogOptions());
  s.stream.Start();
  REQUIRE(WaitFor([&] { return s.stream.up(); }, 10s, 10ms));
  db.Exec("FLUSH BINARY LOGS");
  try {
    db.Exec("RESET MASTER");
  } catch (const sql::SQLException&) {
    db.Exec("RESET BINARY LOGS AND GTIDS");  // MySQL 8.4 knows only this name (8.2+ both)
  }
  StreamState purged = s.log.WaitFor(Problem(StreamProblem::kPurged), 10s);
  CHECK(purged.problem == StreamProblem::kPurged);
  CHECK(Has(purged.reason, "PURGE BINARY LOGS or RESET MASTER"));
  REQUIRE(WaitFor([&] { return s.stream.up() && s.stream.state().connects >= 2; }, 10s, 10ms));
  const int seen = s.commits.count();
  db.InsertEvents(1, 1);
  CHECK(s.commits.WaitAbove(seen, 5s));
}

namespace {

// A user `name` with only the privilege `granted`: the stream goes down with
// kGrant, and it and the check the relay runs at startup (on `tables`) name
// the GRANT of the `missing` privilege. `stays_down`: the stream is still down
// after reporting it.
void ExpectMissingGrant(const std::string& name, const std::string& granted,
                        const std::string& missing, const std::vector<std::string>& tables,
                        bool stays_down) {
  RequireLogBin();
  TestUser user(name, granted);
  Watched s(user.Options());
  s.stream.Start();
  const std::string fix = "GRANT " + missing + " ON *.* TO '" + name + "'@'%';";
  StreamState st = s.log.WaitFor(Problem(StreamProblem::kGrant), 10s);
  CHECK(Has(st.reason, fix));
  if (stays_down) CHECK_FALSE(s.stream.up());
  binlog::BinlogCheck check;
  REQUIRE(binlog::CheckBinlog(user.Options(), tables, &check).ok());
  REQUIRE(check.problems.size() == 1);
  CHECK(Has(check.problems[0], fix));
}

}  // namespace

TEST_CASE("binlog: a user without REPLICATION SLAVE is reported with the GRANT that fixes it",
          "[binlog]") {
  ExpectMissingGrant("binlog_no_repl", "BINLOG MONITOR", "REPLICATION SLAVE", {"binlog_x"}, true);
}

TEST_CASE("binlog: a user without BINLOG MONITOR is reported with the GRANT that fixes it",
          "[binlog]") {
  ExpectMissingGrant("binlog_no_monitor", "REPLICATION SLAVE", "BINLOG MONITOR", {}, false);
}

TEST_CASE("binlog: the documented grants are enough and check --connect says the granularity",
          "[binlog]") {
  RequireLogBin();
  TestUser user("binlog_ok", "REPLICATION SLAVE, BINLOG MONITOR");
  binlog::BinlogCheck check;
  REQUIRE(binlog::CheckBinlog(user.Options(), {"binlog_x"}, &check).ok());
  CHECK(check.problems.empty());
  CHECK(Has(check.summary, "wake-ups per"));
  // Listing replicas is beyond those grants on MariaDB: said, not a problem.
  REQUIRE(check.notes.size() == 1);
  CHECK(Has(check.notes[0], "REPLICATION MASTER ADMIN"));
  Watched s(user.Options());
  s.stream.Start();
  CHECK(WaitFor([&] { return s.stream.up(); }, 10s, 10ms));
}

TEST_CASE("binlog: a stalled stream is detected by its missing heartbeats and reconnected",
          "[binlog]") {
  RequireLogBin();
  TcpProxy proxy(TestMysql("").port);
  binlog::BinlogOptions o = TestBinlogOptions();
  o.mysql.port = proxy.port();
  Watched s(o);
  s.stream.Start();
  REQUIRE(WaitFor([&] { return s.stream.up(); }, 10s, 10ms));
  const auto paused = std::chrono::steady_clock::now();
  proxy.Pause();
  StreamState st = s.log.WaitFor(Problem(StreamProblem::kStalled), 10s);
  CHECK(st.problem == StreamProblem::kStalled);
  const auto detected = std::chrono::steady_clock::now() - paused;
  CHECK(detected < 6s);  // stall_timeout_ms 2000 (rounded to whole seconds) plus slack
  proxy.Resume();
  CHECK(WaitFor([&] { return s.stream.up(); }, 15s, 10ms));
}

TEST_CASE("binlog: another replica with the same server_id is detected and reported", "[binlog]") {
  RequireLogBin();
  binlog::BinlogOptions o = TestBinlogOptions();
  o.server_id = 3999000001u;
  o.duplicate_backoff_ms = 5000;  // the dropped one waits this long before it tries again
  Watched first(o);
  first.stream.Start();
  REQUIRE(WaitFor([&] { return first.stream.up(); }, 10s, 10ms));
  Watched second(o);
  second.stream.Start();
  StreamState st = first.log.WaitFor(Problem(StreamProblem::kDuplicateId), 10s);
  CHECK(st.problem == StreamProblem::kDuplicateId);
  CHECK(Has(st.reason, "server_id 3999000001"));
  CHECK(Has(st.reason, "mysql.binlog_server_id"));
}

TEST_CASE("binlog: check --connect reports a server_id another replica already uses", "[binlog]") {
  RequireLogBin();
  binlog::BinlogOptions other = TestBinlogOptions();
  other.server_id = 3999000002u;
  other.instance_id = "other-relay";
  binlog::BinlogOptions mine = other;
  mine.instance_id = "this-relay";
  binlog::BinlogCheck check;
  REQUIRE(binlog::CheckBinlog(mine, {"binlog_x"}, &check).ok());
  CHECK(check.problems.empty());  // nobody follows the server as 3999000002 yet
  Watched running(other);
  running.stream.Start();
  REQUIRE(WaitFor([&] { return running.stream.up(); }, 10s, 10ms));
  REQUIRE(binlog::CheckBinlog(mine, {"binlog_x"}, &check).ok());
  REQUIRE(check.problems.size() == 1);
  CHECK(Has(check.problems[0], "server_id 3999000002"));
  CHECK(Has(check.problems[0], "'outbox-relay other-relay'"));
  CHECK(Has(check.problems[0], "mysql.binlog_server_id"));
  // The same instance_id registered: most likely this relay's own daemon.
  REQUIRE(binlog::CheckBinlog(other, {"binlog_x"}, &check).ok());
  CHECK(check.problems.empty());
  REQUIRE(check.notes.size() == 1);
  CHECK(Has(check.notes[0], "this relay's stream if it runs"));
  CHECK(running.stream.up());  // checking did not disturb the stream
}

TEST_CASE("binlog: log_bin off is reported by the stream and by the check", "[binlog]") {
  // A server of its own: log_bin cannot be switched off at run time.
  const std::string dir = "/tmp/outbox-binlog-off-" + std::to_string(::getpid());
  const std::string start = "bash -c 'set -e; . \"" OUTBOX_SOURCE_DIR
                            "/scripts/lib/mariadb.sh\"; mariadb_start \"" +
                            dir + "\" --innodb-buffer-pool-size=64M' >\"" + dir + ".log\" 2>&1";
  REQUIRE(std::system(start.c_str()) == 0);
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      if (std::system(
              ("'" + dir + "/stop.sh' >/dev/null 2>&1; rm -rf '" + dir + "' '" + dir + ".log'")
                  .c_str()) != 0) {
      }
    }
  } cleanup{dir};
  std::ifstream env(dir + "/env.sh");
  std::stringstream text;
  text << env.rdbuf();
  const std::string& e = text.str();
  const size_t at = e.find("OUTBOX_TEST_MYSQL_PORT=");
  REQUIRE(at != std::string::npos);
  binlog::BinlogOptions o = TestBinlogOptions();
  // mariadb_start's account, whatever server the other tests use.
  o.mysql.host = "127.0.0.1";
  o.mysql.port = std::atoi(e.c_str() + at + 23);
  o.mysql.user = "root";
  o.mysql.password = "";
  Watched s(o);
  s.stream.Start();
  StreamState st = s.log.WaitFor(Problem(StreamProblem::kLogBinOff), 10s);
  CHECK(Has(st.reason, "--log-bin"));
  binlog::BinlogCheck check;
  REQUIRE(binlog::CheckBinlog(o, {"x"}, &check).ok());
  REQUIRE(check.problems.size() == 1);
  CHECK(Has(check.problems[0], "log_bin is OFF"));
}

TEST_CASE("binlog: a reopened stream connects again at once and wakes for the commits after it",
          "[binlog]") {
  RequireLogBin();
  TestDatabase db("binlog_reopen");
  binlog::BinlogStreams hub;
  Waker w;
  binlog::BinlogOptions o = TestBinlogOptions();
  o.initial_backoff_ms = 30000;  // a reopen does not wait for the backoff
  auto sub = hub.Subscribe(o, "binlog_reopen", "t_outbox", w.Callback());
  REQUIRE(WaitFor([&] { return sub->up(); }, 10s, 10ms));
  REQUIRE(sub->state().connects == 1);
  const int before = w.count();
  sub->Reopen();
  REQUIRE(WaitFor([&] { return sub->up() && sub->state().connects == 2; }, 10s, 10ms));
  CHECK(sub->state().reopens == 1);
  CHECK(w.count() > before);  // the down and up transitions woke the subscriber
  const int seen = w.count();
  db.InsertEvents(1, 1);
  CHECK(w.WaitAbove(seen, 5s));
}
