#include "support/test_env.h"

#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <mysql_driver.h>

#include <cstdlib>
#include <stdexcept>

#include "outbox/mysql_connection.h"
#include "outbox_ddl.h"

namespace outbox::testing {

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// The minimal-grants tier of tests/CMakeLists.txt sets only
// OUTBOX_TEST_RELAY_USER (a ctest property carries one variable); the
// password then gets a default here, before main and before any thread, so
// that the relay binaries the tests start inherit it too.
const bool kRelayPasswordDefaulted = [] {
  const char* user = std::getenv("OUTBOX_TEST_RELAY_USER");
  if (user && *user && !std::getenv("OUTBOX_TEST_RELAY_PASSWORD"))
    setenv("OUTBOX_TEST_RELAY_PASSWORD", "outbox-relay-minimal-grants", 0);
  return true;
}();

std::string TestMysqlDir() { return Env("OUTBOX_TEST_MYSQL_DIR", ""); }

namespace {
bool RunScript(const std::string& dir, const std::string& script) {
  if (dir.empty()) return false;
  return std::system(("'" + dir + "/" + script + "' >/dev/null 2>&1").c_str()) == 0;
}
}  // namespace

bool StopMariaDb(const std::string& dir) { return RunScript(dir, "stop.sh"); }
bool RestartMariaDb(const std::string& dir) { return RunScript(dir, "restart.sh"); }

bool DatabaseOutage::Begin() {
  down_ = StopMariaDb();
  return down_;
}

bool DatabaseOutage::End() {
  if (down_ && RestartMariaDb()) down_ = false;
  return !down_;
}

bool SeparateRelayUser() {
  const char* u = std::getenv("OUTBOX_TEST_RELAY_USER");
  return u && *u;
}

MysqlConfig RelayMysql(const std::string& database) {
  MysqlConfig m = TestMysql(database);
  if (SeparateRelayUser()) {
    m.user = Env("OUTBOX_TEST_RELAY_USER", "");
    m.password = Env("OUTBOX_TEST_RELAY_PASSWORD", "");
  }
  return m;
}

std::string RelayPasswordEnv() {
  if (RelayMysql("").password.empty()) return "";
  return SeparateRelayUser() ? "OUTBOX_TEST_RELAY_PASSWORD" : "OUTBOX_TEST_MYSQL_PASSWORD";
}

std::string RelayPasswordYaml() {
  const std::string name = RelayPasswordEnv();
  return name.empty() ? "" : ", password_env: " + name;
}

std::vector<std::string> RelayChildEnv() {
  const std::string name = RelayPasswordEnv();
  if (name.empty()) return {};
  return {name + "=" + RelayMysql("").password};
}

namespace {
// 'user'@'%': the relay account of the minimal-grants tier.
std::string RelayAccount() {
  std::string user = Env("OUTBOX_TEST_RELAY_USER", "");
  return "'" + user + "'@'%'";
}
std::string SqlString(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}
}  // namespace

MysqlConfig TestMysql(const std::string& database) {
  MysqlConfig m;
  m.host = Env("OUTBOX_TEST_MYSQL_HOST", "127.0.0.1");
  m.port = std::stoi(Env("OUTBOX_TEST_MYSQL_PORT", "3306"));
  m.user = Env("OUTBOX_TEST_MYSQL_USER", "root");
  m.password = Env("OUTBOX_TEST_MYSQL_PASSWORD", "");
  m.database = database;
  m.tls.mode = TlsMode::kDisabled;
  m.read_timeout_ms = 10000;
  m.connect_timeout_ms = 2000;
  return m;
}

namespace {
std::unique_ptr<sql::Connection> AdminConnect() {
  MysqlConfig m = TestMysql("mysql");
  sql::ConnectOptionsMap opts;
  opts["hostName"] = sql::SQLString(m.host);
  opts["port"] = m.port;
  opts["userName"] = sql::SQLString(m.user);
  opts["password"] = sql::SQLString(m.password);
  opts["OPT_SSL_MODE"] = sql::SSL_MODE_DISABLED;
  return std::unique_ptr<sql::Connection>(sql::mysql::get_mysql_driver_instance()->connect(opts));
}
}  // namespace

SqlClient::SqlClient(const std::string& database) : conn_(AdminConnect()) {
  conn_->setSchema(database);
}
SqlClient::~SqlClient() = default;
void SqlClient::Exec(const std::string& sql) {
  std::unique_ptr<sql::Statement> st(conn_->createStatement());
  st->execute(sql);
}
int64_t SqlClient::QueryInt(const std::string& sql) {
  std::unique_ptr<sql::Statement> st(conn_->createStatement());
  std::unique_ptr<sql::ResultSet> rs(st->executeQuery(sql));
  if (!rs->next() || rs->isNull(1)) return 0;
  return rs->getInt64(1);
}

TestDatabase::TestDatabase(const std::string& name, const std::string& extra_columns)
    : name_(name) {
  conn_ = AdminConnect();
  Exec("DROP DATABASE IF EXISTS `" + name_ + "`");
  Exec("CREATE DATABASE `" + name_ + "` CHARACTER SET utf8mb4");
  conn_->setSchema(name_);
  Exec(OutboxTableDdl("t_outbox", extra_columns));
  if (SeparateRelayUser()) {
    // The password of an account left by an earlier run may differ.
    const std::string password = SqlString(Env("OUTBOX_TEST_RELAY_PASSWORD", ""));
    Exec("CREATE USER IF NOT EXISTS " + RelayAccount() + " IDENTIFIED BY " + password);
    Exec("ALTER USER " + RelayAccount() + " IDENTIFIED BY " + password);
    Exec("GRANT SELECT, UPDATE ON `" + name_ + "`.`t_outbox` TO " + RelayAccount());
  }
}

void TestDatabase::GrantDelete() {
  if (SeparateRelayUser()) Exec("GRANT DELETE ON `" + name_ + "`.`t_outbox` TO " + RelayAccount());
}

TestDatabase::~TestDatabase() {
  try {
    // Table grants outlive DROP DATABASE; a later test starts from none.
    if (SeparateRelayUser())
      Exec("REVOKE ALL PRIVILEGES ON `" + name_ + "`.`t_outbox` FROM " + RelayAccount());
  } catch (...) {
  }
  try {
    Exec("DROP DATABASE IF EXISTS `" + name_ + "`");
  } catch (...) {
  }
}

template <typename F>
auto TestDatabase::Retrying(F f) {
  // The test's own connection survives a MariaDB restart (fault tests): one
  // reconnect and retry when the server went away.
  try {
    return f();
  } catch (const sql::SQLException& e) {
    if (!IsConnectionError(SqlErrorOf(e))) throw;
    conn_->reconnect();
    conn_->setSchema(name_);
    return f();
  }
}

void TestDatabase::Exec(const std::string& sql) {
  Retrying([&] {
    std::unique_ptr<sql::Statement> st(conn_->createStatement());
    st->execute(sql);
  });
}

int64_t TestDatabase::QueryInt(const std::string& sql) {
  return Retrying([&]() -> int64_t {
    std::unique_ptr<sql::Statement> st(conn_->createStatement());
    std::unique_ptr<sql::ResultSet> rs(st->executeQuery(sql));
    if (!rs->next() || rs->isNull(1)) return 0;
    return rs->getInt64(1);
  });
}

std::string TestDatabase::QueryString(const std::string& sql) {
  std::unique_ptr<sql::Statement> st(conn_->createStatement());
  std::unique_ptr<sql::ResultSet> rs(st->executeQuery(sql));
  if (!rs->next() || rs->isNull(1)) return "";
  return rs->getString(1);
}

std::map<std::string, int64_t> TestDatabase::CountByStatus() {
  return Retrying([&] {
    std::unique_ptr<sql::Statement> st(conn_->createStatement());
    std::unique_ptr<sql::ResultSet> rs(
        st->executeQuery("SELECT status, COUNT(*) FROM t_outbox GROUP BY status"));
    std::map<std::string, int64_t> out;
    while (rs->next()) out[rs->getString(1)] = rs->getInt64(2);
    return out;
  });
}

void TestDatabase::InsertEvents(int aggregates, int per_aggregate, int64_t first_id,
                                const std::string& aggregate_type) {
  static const char* kTypes[] = {"OrderCreated", "OrderPaid", "OrderShipped", "OrderDelivered"};
  int64_t id = first_id;
  Exec("START TRANSACTION");
  std::string values;
  int pending = 0;
  auto flush = [&] {
    if (values.empty()) return;
    Exec(
        "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload,"
        " status, next_retry_at, created_at, updated_at) VALUES " +
        values);
    values.clear();
    pending = 0;
  };
  for (int v = 0; v < per_aggregate; ++v) {
    for (int a = 1; a <= aggregates; ++a) {
      std::string et = kTypes[v % 4];
      std::string key =
          aggregate_type + "-" + et + "-" + std::to_string(a) + "-" + std::to_string(v);
      if (!values.empty()) values += ",";
      values += "(" + std::to_string(id) + ",'" + aggregate_type + "'," + std::to_string(a) + ",'" +
                et + "','" + key + "','{\"aggregate\":" + std::to_string(a) +
                ",\"version\":" + std::to_string(v) + "}','NEW',NOW(),NOW(),NOW())";
      ++id;
      if (++pending == 1000) flush();
    }
  }
  flush();
  Exec("COMMIT");
}

ServiceConfig TestService(const TestDatabase& db, const std::string& bootstrap, Ordering ordering) {
  ServiceConfig s;
  s.name = db.name();
  s.ordering = ordering;
  s.mysql = db.mysql();
  s.kafka.bootstrap_servers = bootstrap;
  s.poll_interval_ms = 20;
  s.lease_ms = 4000;
  s.retry.initial_backoff_ms = 100;
  s.retry.max_backoff_ms = 400;
  s.retry.max_attempts = 5;
  s.gauge_interval_ms = 200;
  return s;
}

std::string RelayConfigYaml(const TestDatabase& db, const std::string& service,
                            const std::string& bootstrap, const std::string& service_yaml,
                            const std::string& http_listen, const std::string& kafka_yaml) {
  MysqlConfig m = db.mysql();
  std::string y = "instance_id: test-" + service + "\nhttp: {listen: \"" + http_listen +
                  "\"}\nlog: {level: info, format: text}\nkafka:\n  bootstrap_servers: \"" +
                  bootstrap + "\"\n" + kafka_yaml + "services:\n  - name: " + service +
                  "\n    mysql:\n      host: \"" + m.host +
                  "\"\n      port: " + std::to_string(m.port) + "\n      user: \"" + m.user +
                  "\"\n      database: " + m.database + "\n      tls: {mode: disabled}\n";
  std::string pw = RelayPasswordEnv();
  if (!pw.empty()) y += "      password_env: " + pw + "\n";
  size_t start = 0;
  while (start < service_yaml.size()) {
    size_t end = service_yaml.find('\n', start);
    if (end == std::string::npos) end = service_yaml.size();
    y += "    " + service_yaml.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return y;
}

int64_t Unsent(TestDatabase& db) {
  return db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status IN ('NEW','SENDING')");
}

}  // namespace outbox::testing
