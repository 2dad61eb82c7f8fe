#include <catch2/catch.hpp>

#include "config/config_loader.h"
#include "support/process.h"

using namespace outbox;
using namespace outbox::testing;

namespace {

LoadOptions Env(std::map<std::string, std::string> vars) {
  LoadOptions o;
  o.env = [vars](const std::string& n) -> std::optional<std::string> {
    auto it = vars.find(n);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  o.read_file = [](const std::string& path) -> FileRead {
    if (path == "/secrets/ok") return {FileInfo{"s3cret\n", false}, ""};
    if (path == "/secrets/open") return {FileInfo{"s3cret", true}, ""};
    return {std::nullopt, "No such file or directory"};
  };
  return o;
}

const char* kValid = R"(instance_id: ${HOST:-relay-9}
http:
  listen: 127.0.0.1:9464
log: {level: debug, format: text}
kafka:
  bootstrap_servers: k1:9092
  properties:
    compression.type: lz4
services:
  - name: order
    mysql:
      host: db
      user: relay
      password_env: ORDER_PW
      database: order_db
    topics:
      OrderPaid: order.paid
    ordering: none
    retry: {max_attempts: 3}
    retention: {sent_days: 7}
    kafka:
      bootstrap_servers: k2:9092
)";

std::string ErrorOf(const std::string& yaml,
                    std::map<std::string, std::string> vars = {{"ORDER_PW", "pw"}}) {
  try {
    LoadConfigText(yaml, "c.yaml", Env(vars));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a valid config parses into structs with defaults and expanded variables", "[config]") {
  auto loaded = LoadConfigText(kValid, "c.yaml", Env({{"ORDER_PW", "pw"}}));
  const Config& c = loaded.config;
  CHECK(c.instance_id == "relay-9");
  CHECK(c.log_level == "debug");
  REQUIRE(c.services.size() == 1);
  const ServiceConfig& s = c.services[0];
  CHECK(s.mysql.password == "pw");
  CHECK(s.mysql.password_source == "env:ORDER_PW");
  CHECK(s.mysql.port == 3306);
  CHECK(s.mysql.table == "t_outbox");
  CHECK(s.ordering == Ordering::kNone);
  CHECK(s.dead_policy == DeadPolicy::kBlock);
  CHECK(s.retry.max_attempts == 3);
  CHECK(s.retry.initial_backoff_ms == 1000);
  CHECK(s.retention.sent_days == 7);
  CHECK(s.topic == "outbox.event.{aggregate_type}");
  CHECK(s.topics.at("OrderPaid") == "order.paid");
  CHECK(s.kafka.bootstrap_servers == "k2:9092");
  CHECK(s.kafka.properties.at("compression.type") == "lz4");
  CHECK(loaded.warnings.empty());
}

// The bad-config cases, each with its exact message, are one table in
// config_errors_test.cc.

TEST_CASE("a password file readable by others loads with a warning", "[config]") {
  auto loaded = LoadConfigText(
      "kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    mysql: {user: u, database: "
      "d, password_file: /secrets/open}\n",
      "c.yaml", Env({}));
  CHECK(loaded.config.services[0].mysql.password == "s3cret");
  REQUIRE(loaded.warnings.size() == 1);
  CHECK(loaded.warnings[0].find("chmod 600") != std::string::npos);
  auto ok = LoadConfigText(
      "kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    mysql: {user: u, database: "
      "d, password_file: /secrets/ok}\n",
      "c.yaml", Env({}));
  CHECK(ok.config.services[0].mysql.password == "s3cret");  // trailing newline stripped
}

TEST_CASE("environment expansion handles defaults and empty values and $$", "[config]") {
  std::string err;
  auto env = [](const std::string& n) -> std::optional<std::string> {
    if (n == "SET") return std::string("v");
    if (n == "EMPTY") return std::string("");
    return std::nullopt;
  };
  CHECK(ExpandEnv("a${SET}b", env, &err) == "avb");
  CHECK(ExpandEnv("${UNSET:-d}", env, &err) == "d");
  CHECK(ExpandEnv("${EMPTY:-d}", env, &err) == "d");
  CHECK(ExpandEnv("${EMPTY}", env, &err) == "");
  CHECK(ExpandEnv("$$5", env, &err) == "$5");
  CHECK(err.empty());
  ExpandEnv("${UNSET}", env, &err);
  CHECK(err.find("UNSET is not set") != std::string::npos);
}

TEST_CASE("huge values are rejected with a short message and never crash the loader",
          "[config][bad]") {
  // std::regex recursed once per character: a 100 kB time_zone overflowed the
  // stack (SIGSEGV) before the validators were written by hand.
  const std::string huge(300000, 'a');
  const std::string base =
      "kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    mysql:\n      user: u\n"
      "      database: d\n";
  struct Case {
    std::string yaml;
    std::string message;
  };
  std::vector<Case> cases = {
      {base + "      time_zone: Asia/" + huge + "\n",
       "c.yaml:7:18: services[0].mysql.time_zone: must be an offset like +08:00, SYSTEM or a zone "
       "name like Asia/Shanghai (got \"Asia/" +
           huge.substr(0, 195) + "\"... (300005 characters))"},
      {"http: {listen: \"" + huge + ":1\"}\n" + base,
       "c.yaml:1:16: http.listen: must be host:port, e.g. 127.0.0.1:9464 (got \"" +
           huge.substr(0, 200) + "\"... (300002 characters))"},
      {base + "      table: " + huge + "\n",
       "c.yaml:7:14: services[0].mysql.table: must be a plain identifier ([A-Za-z_][A-Za-z0-9_$]*, "
       "at most 64) (got \"" +
           huge.substr(0, 200) + "\"... (300000 characters))"},
      {"kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: " + huge +
           "\n    mysql: {user: u, database: d}\n",
       "c.yaml:3:11: services[0].name: must be 1-64 characters of [A-Za-z0-9_.-] (got \"" +
           huge.substr(0, 200) + "\"... (300000 characters))"},
  };
  TempDir dir;
  for (const auto& c : cases) {
    CHECK(ErrorOf(c.yaml) == c.message);
    std::string file = dir.Write("huge.yaml", c.yaml);
    ProcessResult r = RunProcess({OUTBOX_BINARY, "check", "--config", file}, ChildEnv());
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind(file + ":", 0) == 0);
  }
}

TEST_CASE(
    "check accepts a valid file with exit 0 and prints its warnings such as a world-readable "
    "password file",
    "[config]") {
  TempDir dir;
  std::string pw = dir.Write("pw", "s3cret\n", 0644);
  std::string key = dir.Write("client-key.pem", "not really a key\n", 0640);
  std::string cert = dir.Write("client-cert.pem", "not really a cert\n", 0644);
  std::string file =
      dir.Write("ok.yaml",
                "kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    mysql:\n"
                "      user: u\n      database: d\n      password_file: " +
                    pw + "\n      tls: {mode: required, cert: " + cert + ", key: " + key + "}\n");
  ProcessResult r = RunProcess({OUTBOX_BINARY, "check", "--config", file}, ChildEnv());
  CHECK(r.exit_code == 0);
  CHECK(r.out == "warning: services[0].mysql.password_file: \"" + pw +
                     "\" is readable by group or others; chmod 600 it\n"
                     "warning: services[0].mysql.tls.key: \"" +
                     key + "\" is readable by group or others; chmod 600 it\n" + file +
                     ": configuration is valid (1 service(s))\n");
  CHECK(r.err.empty());
  CHECK(r.out.find("s3cret") == std::string::npos);
}

TEST_CASE(
    "a config path that is a directory or missing or an endless device gets a clear error and "
    "exit code 2",
    "[config][bad]") {
  TempDir dir;
  struct Case {
    std::string path;
    std::string message;
  };
  // A directory used to read as "the file is empty", and /dev/zero was read
  // until the process died of std::bad_alloc.
  const std::vector<Case> cases = {
      {dir.path(), dir.path() + ": cannot read the config file: it is a directory"},
      {dir.path() + "/missing.yaml", dir.path() +
                                         "/missing.yaml: cannot open the config file: No such "
                                         "file or directory (missing or not readable)"},
      {"/dev/zero", "/dev/zero: the config file is larger than 4 MiB; is it the right file?"},
      {dir.Write("big.yaml", "instance_id: " + std::string(5 << 20, 'x') + "\n"),
       dir.path() + "/big.yaml: the config file is larger than 4 MiB; is it the right file?"},
  };
  for (const auto& c : cases) {
    INFO(c.path);
    std::string got = "no error";
    try {
      LoadConfigFile(c.path, LoadOptions{});
    } catch (const ConfigError& e) {
      got = e.what();
    }
    CHECK(got == c.message);
    ProcessResult r = RunProcess({OUTBOX_BINARY, "check", "--config", c.path}, ChildEnv());
    CHECK(r.exit_code == 2);
    CHECK(r.err == c.message + "\n");
  }
}

TEST_CASE("two services on the same table load with a warning that names both", "[config]") {
  TempDir dir;
  const std::string svc = "    mysql: {host: db1, user: u, database: orders}\n";
  std::string file =
      dir.Write("two.yaml", "kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n" + svc +
                                "  - name: b\n" + svc +
                                "  - name: c\n    mysql: {host: db1, user: u, database: "
                                "orders, table: t_outbox_2}\n");
  ProcessResult r = RunProcess({OUTBOX_BINARY, "check", "--config", file}, ChildEnv());
  CHECK(r.exit_code == 0);
  CHECK(r.out ==
        "warning: services[1].mysql: the same table as services[0] (orders.t_outbox on db1:3306): "
        "both drain it like two replicas; was another database meant?\n" +
            file + ": configuration is valid (3 service(s))\n");
}

TEST_CASE("dead replay refuses an id that does not fit a BIGINT as a usage error", "[cli]") {
  for (const char* id : {"99999999999999999999", "12abc", ""}) {
    INFO(id);
    ProcessResult r = RunProcess({OUTBOX_BINARY, "dead", "replay", "--config", "/nonexistent.yaml",
                                  "--service", "s", "--id", id},
                                 ChildEnv());
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--id") != std::string::npos);
  }
  // Any BIGINT is a row id, negative ones too: the config error comes next.
  ProcessResult r = RunProcess({OUTBOX_BINARY, "dead", "replay", "--config", "/nonexistent.yaml",
                                "--service", "s", "--id", "-9223372036854775808"},
                               ChildEnv());
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--id") == std::string::npos);
  CHECK(r.err.find("/nonexistent.yaml") != std::string::npos);
}

TEST_CASE("wakeup and binlog_server_id and the TLS mode parse into their enums and defaults",
          "[config]") {
  auto loaded = LoadConfigText(kValid, "c.yaml", Env({{"ORDER_PW", "pw"}}));
  const ServiceConfig& d = loaded.config.services.at(0);
  CHECK(d.wakeup == WakeupMode::kPoll);
  CHECK_FALSE(d.mysql.binlog_server_id.has_value());
  CHECK(d.mysql.tls.mode == TlsMode::kPreferred);
  const std::string two =
      "kafka: {bootstrap_servers: k:9092}\nservices:\n"
      "  - name: a\n    wakeup: binlog\n"
      "    mysql: {user: u, database: d, binlog_server_id: 4294967295, tls: {mode: disabled}}\n"
      "  - name: b\n    wakeup: binlog\n"
      "    mysql: {user: u, database: e, binlog_server_id: 4294967295}\n"
      // Polling services never open the stream: their id may differ.
      "  - name: c\n    mysql: {user: u, database: f, binlog_server_id: 9}\n";
  auto l2 = LoadConfigText(two, "c.yaml", Env({}));
  const auto& s = l2.config.services;
  REQUIRE(s.size() == 3);
  CHECK(s[0].wakeup == WakeupMode::kBinlog);
  CHECK(s[0].mysql.binlog_server_id == 4294967295u);
  CHECK(s[0].mysql.tls.mode == TlsMode::kDisabled);
  CHECK(s[1].mysql.binlog_server_id == 4294967295u);
  CHECK(s[2].wakeup == WakeupMode::kPoll);
  CHECK(s[2].mysql.binlog_server_id == 9u);
  CHECK(std::string(ToString(WakeupMode::kBinlog)) == "binlog");
  CHECK(std::string(ToString(TlsMode::kVerifyIdentity)) == "verify_identity");
}

TEST_CASE("LoadHttpListen reads http.listen alone and the default when the file has none",
          "[config]") {
  TempDir dir;
  auto env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "PORT") return std::string("9999");
    return std::nullopt;
  };
  // The rest of the file is neither read nor validated.
  CHECK(LoadHttpListen(dir.Write("a.yaml",
                                 "http: {listen: \"0.0.0.0:${PORT}\"}\nkafka: "
                                 "{bootstrap_servers: \"\"}\nnope: 1\n"),
                       env) == "0.0.0.0:9999");
  CHECK(LoadHttpListen(dir.Write("b.yaml", "services: []\n"), env) == "127.0.0.1:9464");
  const std::string bad = dir.Write("c.yaml", "http: {listen: nope}\n");
  try {
    LoadHttpListen(bad, env);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          bad + ":1:16: http.listen: must be host:port, e.g. 127.0.0.1:9464 (got \"nope\")");
  }
  CHECK_THROWS_AS(LoadHttpListen(dir.path() + "/missing.yaml", env), ConfigError);
  CHECK_THROWS_AS(LoadHttpListen(dir.Write("d.yaml", "http: {listen: \"x\n"), env), ConfigError);
}

TEST_CASE("envelope and the CloudEvents templates parse with their defaults", "[config]") {
  auto loaded = LoadConfigText(kValid, "c.yaml", Env({{"ORDER_PW", "pw"}}));
  const ServiceConfig& d = loaded.config.services.at(0);
  CHECK(d.envelope == Envelope::kPlain);
  CHECK(d.cloudevents.source == "/outbox/{service}/{aggregate_type}");
  CHECK(d.cloudevents.type == "{event_type}");
  auto ce = LoadConfigText(
      "kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    mysql: {user: u, database: "
      "d}\n    envelope: cloudevents\n    cloudevents:\n      source: "
      "\"https://shop.example/{service}/{aggregate_type}?v=1#x\"\n      type: "
      "\"com.example.{aggregate_type}.{event_type} v1\"\n",
      "c.yaml", Env({}));
  const ServiceConfig& s = ce.config.services.at(0);
  CHECK(s.envelope == Envelope::kCloudEvents);
  CHECK(s.cloudevents.source == "https://shop.example/{service}/{aggregate_type}?v=1#x");
  CHECK(s.cloudevents.type == "com.example.{aggregate_type}.{event_type} v1");
  CHECK(ce.warnings.empty());
  CHECK(std::string(ToString(Envelope::kCloudEvents)) == "cloudevents");
}

TEST_CASE("a cloudevents block under envelope plain loads with a warning that it has no effect",
          "[config]") {
  auto loaded = LoadConfigText(
      "kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    mysql: {user: u, database: "
      "d}\n    cloudevents: {type: \"com.example.{event_type}\"}\n",
      "c.yaml", Env({}));
  REQUIRE(loaded.warnings.size() == 1);
  CHECK(loaded.warnings[0] ==
        "services[0].cloudevents: has no effect with envelope plain (set envelope: cloudevents to "
        "send the CloudEvents attributes)");
}
