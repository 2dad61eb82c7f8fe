#pragma once

#include <cppconn/connection.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"

namespace outbox::testing {

// The environment variable `name`, or `fallback` when it is unset.
std::string Env(const char* name, const char* fallback);

// The MariaDB started by scripts/test (OUTBOX_TEST_MYSQL_* variables): the
// administrator account that sets tables up.
MysqlConfig TestMysql(const std::string& database);

// The account the relay's own connections use (stores, dead list/replay, the
// binary). The minimal-grants tier sets OUTBOX_TEST_RELAY_USER (and
// optionally OUTBOX_TEST_RELAY_PASSWORD, default "outbox-relay-minimal-grants"):
// the user is created without privileges and each TestDatabase grants it only
// SELECT, UPDATE on its t_outbox (and DELETE with GrantDelete()). Unset: the
// administrator account.
MysqlConfig RelayMysql(const std::string& database);
// The name of the environment variable that holds RelayMysql's password, for
// relay configs (`password_env`); empty when the password is empty.
std::string RelayPasswordEnv();
// "NAME=value" of that variable, for ChildEnv (empty when no password).
std::vector<std::string> RelayChildEnv();
// ", password_env: NAME" for a relay config's `mysql` flow mapping, or ""
// when the password is empty (an external server's account has one).
std::string RelayPasswordYaml();
bool SeparateRelayUser();

// A fresh database with t_outbox exactly as sql/t_outbox.sql (README "The outbox table") (plus
// `extra_columns` SQL appended to the column list, e.g. ", last_error varchar(255)").
class TestDatabase {
 public:
  explicit TestDatabase(const std::string& name, const std::string& extra_columns = "");
  ~TestDatabase();
  const std::string& name() const { return name_; }
  // The relay's account on this database (RelayMysql).
  MysqlConfig mysql() const { return RelayMysql(name_); }
  // The DELETE grant retention needs (SELECT, UPDATE are granted by the
  // constructor). A no-op without a separate relay user.
  void GrantDelete();
  void Exec(const std::string& sql);
  int64_t QueryInt(const std::string& sql);
  std::string QueryString(const std::string& sql);  // "" when no row or NULL
  std::map<std::string, int64_t> CountByStatus();
  // Inserts `aggregates` x `per_aggregate` events, interleaved in id order
  // (all first events, then all second events, ...), ids from `first_id`.
  void InsertEvents(int aggregates, int per_aggregate, int64_t first_id = 1,
                    const std::string& aggregate_type = "Order");

 private:
  template <typename F>
  auto Retrying(F f);

  std::string name_;
  std::unique_ptr<sql::Connection> conn_;
};

// An administrator connection of its own to `database`, for a test thread
// that writes beside the TestDatabase's (a connection is not thread-safe).
class SqlClient {
 public:
  explicit SqlClient(const std::string& database);
  ~SqlClient();
  void Exec(const std::string& sql);
  int64_t QueryInt(const std::string& sql);

 private:
  std::unique_ptr<sql::Connection> conn_;
};

// The directory of the test MariaDB (OUTBOX_TEST_MYSQL_DIR, exported by
// scripts/test), "" when unset. scripts/lib/mariadb.sh writes DIR/stop.sh and
// DIR/restart.sh there.
std::string TestMysqlDir();
// Runs the stop.sh or restart.sh of the MariaDB in `dir` (default: the test
// MariaDB); false when `dir` is empty or the script fails.
bool StopMariaDb(const std::string& dir = TestMysqlDir());
bool RestartMariaDb(const std::string& dir = TestMysqlDir());

// The test MariaDB stopped for a scope: Begin() stops it, End() or the
// destructor starts it again. Not thread-safe.
class DatabaseOutage {
 public:
  DatabaseOutage() = default;
  ~DatabaseOutage() { End(); }
  DatabaseOutage(const DatabaseOutage&) = delete;
  DatabaseOutage& operator=(const DatabaseOutage&) = delete;
  bool Begin();  // false when there is no test MariaDB to stop or it did not stop
  bool End();    // true once it runs again (or was never stopped)

 private:
  bool down_ = false;
};

// Rows of `db`.t_outbox in NEW or SENDING.
int64_t Unsent(TestDatabase& db);

// A service config pointing at `db` and `bootstrap` with test-friendly
// timings (short poll, short backoff) and `ordering`.
ServiceConfig TestService(const TestDatabase& db, const std::string& bootstrap,
                          Ordering ordering = Ordering::kPerAggregate);

// A relay config file for the binary: one service named `service` on `db`
// (the relay account, its password through password_env), text logs, the
// HTTP listener on `http_listen`. `service_yaml` is appended to the service's
// mapping, indented by 4 spaces per line (e.g. "retention: {sent_days: 7}\n").
// `kafka_yaml` goes into the top-level kafka mapping after bootstrap_servers.
std::string RelayConfigYaml(const TestDatabase& db, const std::string& service,
                            const std::string& bootstrap, const std::string& service_yaml = "",
                            const std::string& http_listen = "127.0.0.1:0",
                            const std::string& kafka_yaml = "");

}  // namespace outbox::testing
