// Secrets and TLS: passwords never reach a log line, an error or a metric;
// MySQL sessions are encrypted and verified against the configured CA.

#include <cppconn/statement.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <thread>

#include "outbox/mysql_connection.h"
#include "support/http_probe.h"
#include "support/process.h"
#include "support/relay_harness.h"
#include "support/test_broker.h"
#include "support/test_env.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

// The test secrets; scripts/test also greps the whole ctest output for them.
const char* kDbPassword = "Db-Pw-7f3K-secret";
const char* kKafkaPassword = "Kafka-Pw-Q9z-secret";

std::string TlsDir() {
  const char* d = std::getenv("OUTBOX_TEST_MYSQL_TLS_DIR");
  // scripts/test starts MariaDB with TLS and sets this (scripts/lib/mariadb.sh
  // mariadb_tls_files); run the suite through it.
  REQUIRE(d != nullptr);
  return d;
}

// The test account's connection with TLS `mode`, verified against `ca`.
MysqlConfig TlsMysql(TlsMode mode, const std::string& ca) {
  MysqlConfig m = TestMysql("mysql");
  m.tls.mode = mode;
  m.tls.ca = ca;
  return m;
}

std::string SessionCipher(MysqlConnection& conn) {
  std::unique_ptr<sql::Statement> st(conn.raw()->createStatement());
  std::unique_ptr<sql::ResultSet> rs(st->executeQuery("SHOW SESSION STATUS LIKE 'Ssl_cipher'"));
  return rs->next() ? std::string(rs->getString(2)) : "";
}

// A user with a password and only the grants the relay needs.
struct SecretUser : ScopedDbUser {
  SecretUser(TestDatabase& db, const std::string& name, const std::string& require = "")
      : ScopedDbUser(db, name, kDbPassword, "SELECT, UPDATE", require) {}
};

std::string Yaml(const std::string& instance, int http, const std::string& bootstrap,
                 const std::string& format, const std::string& mysql) {
  return "instance_id: " + instance + "\nhttp: {listen: 127.0.0.1:" + std::to_string(http) +
         "}\nlog: {level: debug, format: " + format +
         "}\nkafka:\n  bootstrap_servers: " + bootstrap +
         "\n  properties: {sasl.username: relay, sasl.password: \"${KAFKA_PW}\", debug: "
         "\"conf,security\"}\nservices:\n  - name: secret\n    mysql: " +
         mysql + "\n    poll_interval_ms: 50\n    gauge_interval_ms: 200\n";
}

}  // namespace

TEST_CASE("MySQL sessions are encrypted with verify_ca and verify_identity against the test CA",
          "[security][tls][local-db]") {
  const std::string tls = TlsDir();
  for (TlsMode mode : {TlsMode::kVerifyCa, TlsMode::kVerifyIdentity, TlsMode::kRequired}) {
    INFO(ToString(mode));
    MysqlConnection conn(TlsMysql(mode, tls + "/ca.pem"));
    REQUIRE(conn.Connect().ok());
    CHECK_FALSE(SessionCipher(conn).empty());
  }
  MysqlConfig plain = TestMysql("mysql");  // tls: disabled
  MysqlConnection conn(plain);
  REQUIRE(conn.Connect().ok());
  CHECK(SessionCipher(conn).empty());
}

TEST_CASE("a CA that did not sign the server's certificate fails clearly",
          "[security][tls][local-db]") {
  const std::string tls = TlsDir();
  for (TlsMode mode : {TlsMode::kVerifyCa, TlsMode::kVerifyIdentity}) {
    INFO(ToString(mode));
    const MysqlConfig m = TlsMysql(mode, tls + "/other-ca.pem");
    MysqlConnection conn(m);
    Status s = conn.Connect();
    REQUIRE_FALSE(s.ok());
    INFO(s.message());
    CHECK(s.message().rfind("cannot connect to " + m.user + "@127.0.0.1:", 0) == 0);
    CHECK((s.message().find("certificate") != std::string::npos ||
           s.message().find("SSL") != std::string::npos ||
           s.message().find("TLS") != std::string::npos));
  }
}

TEST_CASE("a relay with verify_identity drains as a user that the server lets in only over TLS",
          "[security][tls][local-db]") {
  const std::string tls = TlsDir();
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("security_tls_relay");
  db.InsertEvents(50, 2);
  SecretUser user(db, "outbox_tls", "SSL");
  ServiceConfig s = TestService(db, cluster.bootstrap());
  s.mysql.user = "outbox_tls";
  s.mysql.password = kDbPassword;
  {
    // Without TLS the server refuses the user: the relay says so, not ready.
    RelayHarness h(s);
    h.relay->Start();
    REQUIRE(WaitFor([&] { return !h.relay->LastError().empty(); }, 10s));
    CHECK(h.relay->LastError().find("Access denied for user 'outbox_tls'") != std::string::npos);
    CHECK(h.relay->LastError().find(kDbPassword) == std::string::npos);
    CHECK(db.CountByStatus()["NEW"] == 100);
  }
  s.mysql.tls.mode = TlsMode::kVerifyIdentity;
  s.mysql.tls.ca = tls + "/ca.pem";
  RelayHarness h(s);
  h.relay->Start();
  REQUIRE(WaitFor([&] { return db.CountByStatus()["SENT"] == 100; }, 60s));
  CHECK(h.relay->DatabaseReady());
}

TEST_CASE("a client certificate is presented when the user requires X509",
          "[security][tls][local-db]") {
  const std::string tls = TlsDir();
  TestDatabase db("security_tls_x509");
  SecretUser user(db, "outbox_x509", "X509");
  MysqlConfig m = db.mysql();
  m.user = "outbox_x509";
  m.password = kDbPassword;
  m.tls.mode = TlsMode::kVerifyCa;
  m.tls.ca = tls + "/ca.pem";
  {
    MysqlConnection without(m);
    CHECK_FALSE(without.Connect().ok());
  }
  m.tls.cert = tls + "/client-cert.pem";
  m.tls.key = tls + "/client-key.pem";
  MysqlConnection with(m);
  REQUIRE(with.Connect().ok());
  CHECK_FALSE(SessionCipher(with).empty());
}

namespace {

// The no-leak test's setup: the account's connection settings, its password
// in a file (and a wrong one), the environment holding the secrets, and every
// output collected to be scanned for them.
struct LeakScan {
  LeakScan(TestDatabase& db, std::string bootstrap_servers)
      : mysql(db.mysql()),
        bootstrap(std::move(bootstrap_servers)),
        pw_file(dir.Write("db-password", std::string(kDbPassword) + "\n", 0600)),
        wrong_file(dir.Write("wrong-password", "not-the-password\n", 0600)) {}

  // A config file `name` for instance `instance` with the password given by
  // `secret` (password_env: X or password_file: F).
  std::string Config(const std::string& name, const std::string& instance, int http,
                     const std::string& format, const std::string& secret) {
    const std::string block = "{host: " + mysql.host + ", port: " + std::to_string(mysql.port) +
                              ", user: outbox_secret, database: " + mysql.database +
                              ", tls: {mode: disabled}, connect_timeout_ms: 1000, " + secret + "}";
    return dir.Write(name, Yaml(instance, http, bootstrap, format, block));
  }

  MysqlConfig mysql;
  std::string bootstrap;
  TempDir dir;
  std::string pw_file;
  std::string wrong_file;
  const std::vector<std::string> env = {std::string("DB_PW=") + kDbPassword,
                                        std::string("KAFKA_PW=") + kKafkaPassword,
                                        "WRONG_PW=not-the-password"};
  std::vector<std::string> outputs;
};

// A relay at debug level with librdkafka's config dump on, the password from
// `secret`, drains the table; its sessions are killed once to provoke the
// reconnect logs. Collects its metrics, /readyz and logs.
void RunRelayWithPassword(LeakScan& scan, TestDatabase& db, const std::string& format,
                          const std::string& secret, const std::string& source) {
  const int http = FreeTcpPort();
  db.Exec("UPDATE t_outbox SET status = 'NEW'");
  ChildProcess relay({OUTBOX_BINARY, "run", "--config",
                      scan.Config("relay.yaml", "leak-" + format, http, format, secret)},
                     ChildEnv(scan.env));
  REQUIRE(WaitFor([&] { return db.CountByStatus()["SENT"] == 100; }, 60s));
  for (int i = 0; i < 3; ++i) {
    int64_t id = db.QueryInt(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = 'outbox_secret' LIMIT 1");
    try {
      if (id) db.Exec("KILL CONNECTION " + std::to_string(id));
    } catch (...) {
      // The session ended in between.
    }
  }
  REQUIRE(WaitFor([&] { return HttpGet(http, "/readyz").status == 200; }, 30s));
  scan.outputs.push_back(HttpGet(http, "/metrics").body);
  scan.outputs.push_back(HttpGet(http, "/readyz").body);
  relay.Signal(SIGTERM);
  CHECK(relay.Wait(60s) == 0);
  scan.outputs.push_back(relay.out());
  scan.outputs.push_back(relay.err());
  // The start line names where the password came from, never the password.
  CHECK((relay.err().find("password_from=" + source) != std::string::npos ||
         relay.err().find("\"password_from\":\"" + source) != std::string::npos));
}

// A wrong password: the relay keeps retrying and says why; check --connect
// fails with exit 1 (and passes with the right file). Collects their output.
void RunWithWrongPassword(LeakScan& scan) {
  const int http = FreeTcpPort();
  ChildProcess relay(
      {OUTBOX_BINARY, "run", "--config",
       scan.Config("wrong.yaml", "leak-wrong", http, "text", "password_env: WRONG_PW")},
      ChildEnv(scan.env));
  // Until the first connection attempt has failed, /readyz is 503 for
  // another reason (not connected yet); wait for the reason that matters.
  HttpReply ready;
  CHECK(WaitFor(
      [&] {
        ready = HttpGet(http, "/readyz");
        return ready.status == 503 &&
               ready.body.find("Access denied for user 'outbox_secret'") != std::string::npos;
      },
      30s));
  scan.outputs.push_back(ready.body);
  relay.Signal(SIGTERM);
  CHECK(relay.Wait(60s) == 0);
  scan.outputs.push_back(relay.err());
  CHECK(relay.err().find("Access denied") != std::string::npos);
  for (const std::string& file : {scan.wrong_file, scan.pw_file}) {
    const std::string config =
        scan.Config("check.yaml", "check", FreeTcpPort(), "text", "password_file: " + file);
    ProcessResult r =
        RunProcess({OUTBOX_BINARY, "check", "--connect", "--config", config}, ChildEnv(scan.env));
    CHECK(r.exit_code == (file == scan.pw_file ? 0 : 1));
    scan.outputs.push_back(r.out);
    scan.outputs.push_back(r.err);
  }
  const std::vector<std::string>& out = scan.outputs;
  CHECK(out[out.size() - 2].find("database ok") != std::string::npos);
  CHECK(out[out.size() - 4].find("Access denied for user 'outbox_secret'") != std::string::npos);
}

}  // namespace

TEST_CASE("no password appears in any log line or error or metric of the relay and check",
          "[security][process]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("security_no_leak");
  db.InsertEvents(100, 1);
  SecretUser user(db, "outbox_secret");
  LeakScan scan(db, cluster.bootstrap());

  // Two relays, the password from the environment (text logs) and from a
  // file (JSON logs).
  RunRelayWithPassword(scan, db, "text", "password_env: DB_PW", "env:DB_PW");
  RunRelayWithPassword(scan, db, "json", "password_file: " + scan.pw_file, "file:" + scan.pw_file);
  RunWithWrongPassword(scan);

  size_t lines = 0;
  for (const auto& out : scan.outputs) {
    lines += static_cast<size_t>(std::count(out.begin(), out.end(), '\n'));
    CHECK(out.find(kDbPassword) == std::string::npos);
    CHECK(out.find(kKafkaPassword) == std::string::npos);
    CHECK(out.find("not-the-password") == std::string::npos);
  }
  INFO(lines << " lines scanned");
  CHECK(lines > 100);
}
