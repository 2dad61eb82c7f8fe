// The example consumer's config (src/inbox/consumer_config.h):
// the relay's conventions — file:line:col: key.path: what — and the rules
// that keep the inbox algorithm intact.
#include "inbox/consumer_config.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <functional>
#include <stdexcept>

#include "outbox/inbox/config.h"
#include "support/process.h"  // TempDir

using outbox::inbox::LoadConsumerConfigText;

namespace {

outbox::LoadOptions Env() {
  outbox::LoadOptions o;
  o.env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "INBOX_DB_PASSWORD") return "s3cret";
    if (name == "BROKERS") return "kafka-1:9092";
    if (name == "SR_PASSWORD") return "sr-secret";
    if (name == "SR_USER") return "sr-user";
    return std::nullopt;
  };
  return o;
}

const std::string kGood = R"(consumer: fulfillment
kafka:
  bootstrap_servers: ${BROKERS}
  topics: [outbox.event.Order]
mysql: {host: db, user: inbox, password_env: INBOX_DB_PASSWORD, database: order_db}
)";

std::string ErrorOf(const std::string& text) {
  try {
    (void)LoadConsumerConfigText(text, "c.yaml", Env());
  } catch (const outbox::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a minimal consumer config gets the documented defaults", "[consumer-config]") {
  const auto loaded = LoadConsumerConfigText(kGood, "c.yaml", Env());
  const auto& c = loaded.config;
  CHECK(c.consumer == "fulfillment");
  CHECK(c.kafka.bootstrap_servers == "kafka-1:9092");
  CHECK(c.kafka.group_id == "fulfillment");
  CHECK(c.kafka.auto_offset_reset == "earliest");
  CHECK(c.kafka.dead_letter_topic == "{topic}.dlq");
  CHECK(c.max_attempts == 5);
  CHECK(c.mysql.port == 3306);
  CHECK(c.mysql.password == "s3cret");
  CHECK(c.mysql.password_source == "env:INBOX_DB_PASSWORD");
  CHECK(loaded.log_format == "json");  // the example binary's
  CHECK(c.version_check == outbox::inbox::VersionCheck::kNewer);
  CHECK(c.max_gap_age_s == 300);
  CHECK(c.inbox_retention_days == 14);
  CHECK(c.http_listen.empty());  // no HTTP server unless asked
  CHECK(outbox::inbox::DeadLetterTopic(c.kafka.dead_letter_topic, "outbox.event.Order") ==
        "outbox.event.Order.dlq");
}

TEST_CASE("consumer config errors name the file line column and key path", "[consumer-config]") {
  CHECK(ErrorOf(kGood + "max_attemps: 3\n") ==
        "c.yaml:6:1: max_attemps: unknown key (did you mean \"max_attempts\"?)");
  CHECK(ErrorOf(kGood + "max_attempts: 0\n") ==
        "c.yaml:6:15: max_attempts: must be an integer between 1 and 1000 (got 0)");
  CHECK(ErrorOf(kGood + "log: {level: verbose}\n") ==
        "c.yaml:6:14: log.level: must be one of debug | info | warn | error (got \"verbose\")");
}

TEST_CASE("a consumer config sets exactly one of topics and topic_regex", "[consumer-config]") {
  std::string both = kGood;
  both.insert(both.find("mysql:"), "  topic_regex: '^outbox\\.event\\.[A-Za-z]+$'\n");
  CHECK(ErrorOf(both).find("kafka: set exactly one of topics (a list) and topic_regex") !=
        std::string::npos);
  std::string no_caret = kGood;
  no_caret.replace(no_caret.find("topics: [outbox.event.Order]"), 28, "topic_regex: 'outbox'");
  CHECK(ErrorOf(no_caret).find("kafka.topic_regex: must start with ^") != std::string::npos);
}

TEST_CASE("a consumer config refuses properties that would break the offset rule",
          "[consumer-config]") {
  for (const char* key : {"enable.auto.commit", "enable.auto.offset.store", "group.id"}) {
    std::string text = kGood;
    text.insert(text.find("mysql:"), std::string("  properties: {") + key + ": \"false\"}\n");
    INFO(key);
    CHECK(ErrorOf(text).find(std::string("kafka.properties.") + key + ":") != std::string::npos);
  }
  std::string unknown = kGood;
  unknown.insert(unknown.find("mysql:"), "  properties: {no.such.property: \"1\"}\n");
  CHECK(ErrorOf(unknown).find("No such configuration property") != std::string::npos);
}

TEST_CASE("a dead-letter topic the consumer subscribes to is a config error", "[consumer-config]") {
  std::string text = kGood;
  text.replace(text.find("[outbox.event.Order]"), 20, "[orders, orders.dlq]");
  CHECK(
      ErrorOf(text).find("kafka.dead_letter_topic: renders \"orders.dlq\" for topic \"orders\"") !=
      std::string::npos);
}

TEST_CASE("a consumer config names an unset password variable", "[consumer-config]") {
  std::string text = kGood;
  text.replace(text.find("INBOX_DB_PASSWORD"), 17, "MISSING_PW");
  CHECK(ErrorOf(text) ==
        "c.yaml:5:46: mysql.password_env: environment variable MISSING_PW is not set");
}

TEST_CASE("the version check and gap age and retention and http keys are parsed and checked",
          "[consumer-config]") {
  auto c = LoadConsumerConfigText(kGood +
                                      "version_check: strict\nmax_gap_age_s: 60\n"
                                      "inbox_retention_days: 0\nhttp: {listen: 127.0.0.1:9465}\n",
                                  "c.yaml", Env())
               .config;
  CHECK(c.version_check == outbox::inbox::VersionCheck::kStrict);
  CHECK(c.max_gap_age_s == 60);
  CHECK(c.inbox_retention_days == 0);
  CHECK(c.http_listen == "127.0.0.1:9465");
  CHECK(c.concurrency == 1);
  CHECK(LoadConsumerConfigText(kGood + "concurrency: 4\n", "c.yaml", Env()).config.concurrency ==
        4);
  CHECK(ErrorOf(kGood + "concurrency: 0\n") ==
        "c.yaml:6:14: concurrency: must be an integer between 1 and 64 (got 0)");
  CHECK(LoadConsumerConfigText(kGood + "version_check: none\n", "c.yaml", Env())
            .config.version_check == outbox::inbox::VersionCheck::kNone);
  CHECK(ErrorOf(kGood + "version_check: newest\n") ==
        "c.yaml:6:16: version_check: must be one of none | newer | strict (got \"newest\")");
  CHECK(ErrorOf(kGood + "inbox_retention_days: -1\n") ==
        "c.yaml:6:23: inbox_retention_days: must be an integer between 0 and 3650 (got \"-1\")");
  CHECK(ErrorOf(kGood + "http: {listen: 9465}\n")
            .find("http.listen: must be HOST:PORT, e.g. 127.0.0.1:9465") != std::string::npos);
  CHECK(
      ErrorOf(kGood + "http: {listen: \"h:\xd9\xa3\"}\n").find("http.listen: must be HOST:PORT") !=
      std::string::npos);
}

TEST_CASE("a service loads the consumer config through the public header from text or from a file",
          "[consumer-config]") {
  ::setenv("INBOX_PUBLIC_LOAD_PW", "s3cret", 1);
  const std::string yaml = R"(consumer: payments
kafka:
  bootstrap_servers: kafka-1:9092
  topics: [outbox.event.Order]
concurrency: 2
mysql: {host: db, user: inbox, password_env: INBOX_PUBLIC_LOAD_PW, database: order_db}
)";
  std::vector<std::string> warnings;
  const outbox::inbox::ConsumerConfig c =
      outbox::inbox::LoadConfigText(yaml, "payments.yaml", &warnings);
  CHECK(c.consumer == "payments");
  CHECK(c.concurrency == 2);
  CHECK(c.mysql.password == "s3cret");
  CHECK(warnings.empty());
  outbox::testing::TempDir dir;
  const std::string path = dir.Write("payments.yaml", yaml);
  CHECK(outbox::inbox::LoadConfigFile(path).kafka.topics ==
        std::vector<std::string>{"outbox.event.Order"});
  // A mistake is a std::runtime_error with the file, line, column and key.
  std::string error;
  try {
    (void)outbox::inbox::LoadConfigText("consumer: payments\nkafka: {}\n", "bad.yaml");
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  CHECK(error.rfind("bad.yaml:2:", 0) == 0);
  CHECK(error.find(": kafka.bootstrap_servers: is required") != std::string::npos);
  ::unsetenv("INBOX_PUBLIC_LOAD_PW");
}

namespace {

// The loader's message without its "file:line:col: ".
std::string WithoutMark(const std::string& message) {
  const size_t at = message.find(": ");
  return at == std::string::npos ? message : message.substr(at + 2);
}

}  // namespace

TEST_CASE("a config filled in code is refused by the loader's rules in the loader's words",
          "[consumer-config]") {
  using Change = std::function<void(outbox::inbox::ConsumerConfig&)>;
  const std::string mysql =
      "mysql: {host: db, user: inbox, password_env: INBOX_DB_PASSWORD, database: order_db}\n";
  const std::string head = "consumer: fulfillment\nkafka:\n  bootstrap_servers: k:9092\n";
  const std::vector<std::pair<std::string, Change>> cases = {
      {"consumer: fulfillment\nkafka:\n  bootstrap_servers: ''\n  topics: [a]\n" + mysql,
       [](auto& c) { c.kafka.bootstrap_servers.clear(); }},
      {"consumer: " + std::string(65, 'c') + "\nkafka:\n  bootstrap_servers: k\n  topics: [a]\n" +
           mysql,
       [](auto& c) { c.consumer = std::string(65, 'c'); }},
      {head + "  topics: ['^a']\n" + mysql, [](auto& c) { c.kafka.topics = {"^a"}; }},
      {head + "  topics: ['a b']\n" + mysql, [](auto& c) { c.kafka.topics = {"a b"}; }},
      {head + "  topic_regex: 'a'\n" + mysql,
       [](auto& c) { c.kafka.topics.clear(), c.kafka.topic_regex = "a"; }},
      {head + "  topics: [a, a.dlq]\n" + mysql,
       [](auto& c) {
         c.kafka.topics = {"a", "a.dlq"};
       }},
      {head + "  topics: [a]\n  auto_offset_reset: first\n" + mysql,
       [](auto& c) { c.kafka.auto_offset_reset = "first"; }},
      {head + "  topics: [a]\n  properties: {enable.auto.commit: 'false'}\n" + mysql,
       [](auto& c) { c.kafka.properties["enable.auto.commit"] = "false"; }},
      {head + "  topics: [a]\n  properties: {no.such.property: '1'}\n" + mysql,
       [](auto& c) { c.kafka.properties["no.such.property"] = "1"; }},
      {head + "  topics: [a]\nmax_attempts: 0\n" + mysql, [](auto& c) { c.max_attempts = 0; }},
      {head + "  topics: [a]\nconcurrency: 65\n" + mysql, [](auto& c) { c.concurrency = 65; }},
      {head + "  topics: [a]\nmysql: {user: u, password_env: INBOX_DB_PASSWORD, database: d, "
              "port: 0}\n",
       [](auto& c) { c.mysql.port = 0; }},
      {head + "  topics: [a]\nmysql: {user: u, password_env: INBOX_DB_PASSWORD, database: d, "
              "tls: {mode: verify_ca}}\n",
       [](auto& c) { c.mysql.tls_mode = "verify_ca"; }},
      {head + "  topics: [a]\nhttp: {listen: nope}\n" + mysql,
       [](auto& c) { c.http_listen = "nope"; }},
  };
  for (const auto& [yaml, change] : cases) {
    INFO(yaml);
    outbox::inbox::ConsumerConfig c =
        LoadConsumerConfigText(head + "  topics: [a]\n" + mysql, "c.yaml", Env()).config;
    CHECK(outbox::inbox::Validate(c).empty());
    change(c);
    const std::string loader = ErrorOf(yaml);
    REQUIRE(!loader.empty());
    CHECK(outbox::inbox::Validate(c) == WithoutMark(loader));
  }
}

TEST_CASE("the public loader refuses a log section: a service's logging is its own",
          "[consumer-config]") {
  const std::string yaml = kGood + "log: {level: debug, format: json}\n";
  // The example binary reads it (its ConfigureLogging arguments) ...
  const auto loaded = LoadConsumerConfigText(yaml, "c.yaml", Env());
  CHECK(loaded.log_level == "debug");
  // ... a library consumer does not: the section would do nothing there.
  ::setenv("INBOX_DB_PASSWORD", "s3cret", 1);
  ::setenv("BROKERS", "kafka-1:9092", 1);
  std::string error;
  try {
    (void)outbox::inbox::LoadConfigText(yaml, "c.yaml");
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  ::unsetenv("INBOX_DB_PASSWORD");
  ::unsetenv("BROKERS");
  CHECK(error.rfind("c.yaml:6:6: log: is the example binary's (outbox-inbox-consumer)", 0) == 0);
}

TEST_CASE("values and schema_registry read with the relay's keys and defaults",
          "[consumer-config]") {
  const auto plain = LoadConsumerConfigText(kGood, "c.yaml", Env()).config;
  CHECK(plain.decode == outbox::inbox::ValueDecode::kRaw);
  CHECK(plain.schema_registry.url.empty());
  const auto c = LoadConsumerConfigText(kGood + R"(values: {decode: json}
schema_registry:
  url: https://registry.example/apis/ccompat/v7
  username_env: SR_USER
  password_env: SR_PASSWORD
  timeout_ms: 2500
  latest_refresh_ms: 30000
)",
                                        "c.yaml", Env())
                     .config;
  CHECK(c.decode == outbox::inbox::ValueDecode::kJson);
  CHECK(c.schema_registry.url == "https://registry.example/apis/ccompat/v7");
  CHECK(c.schema_registry.username == "sr-user");
  CHECK(c.schema_registry.password == "sr-secret");
  CHECK(c.schema_registry.password_source == "env:SR_PASSWORD");
  CHECK(c.schema_registry.timeout_ms == 2500);
  CHECK(outbox::inbox::Validate(c).empty());
}

TEST_CASE("values and schema_registry mistakes name the key", "[consumer-config]") {
  CHECK(ErrorOf(kGood + "values: {decode: avro}\n") ==
        "c.yaml:6:18: values.decode: must be one of raw | json (got \"avro\")");
  CHECK(ErrorOf(kGood + "values: {decode: json}\n") ==
        "c.yaml:1:1: schema_registry: is required with values.decode: json (the schemas to "
        "decode with)");
  CHECK(ErrorOf(kGood + "schema_registry: {url: ftp://r:1}\n") ==
        "c.yaml:6:24: schema_registry.url: schema registry url \"ftp://r:1\": must start with "
        "http:// or https://");
  CHECK(ErrorOf(kGood + "schema_registry: {url: http://r:1, timeout_ms: 5}\n") ==
        "c.yaml:6:48: schema_registry.timeout_ms: must be an integer between 100 and 120000 "
        "(got 5)");
  CHECK(ErrorOf(kGood + "schema_registry: {url: http://r:1, password_env: SR_PASSWORD}\n") ==
        "c.yaml:6:18: schema_registry.username: is required with a password (HTTP basic auth)");
  CHECK(ErrorOf(kGood + "schema_registry: {url: http://r:1, usr: x}\n") ==
        "c.yaml:6:36: schema_registry.usr: unknown key (did you mean \"url\"?)");
}

TEST_CASE("Validate applies the schema_registry rules to a config filled in code",
          "[consumer-config]") {
  auto c = LoadConsumerConfigText(kGood, "c.yaml", Env()).config;
  c.decode = outbox::inbox::ValueDecode::kJson;
  CHECK(outbox::inbox::Validate(c) ==
        "schema_registry: is required with values.decode: json (the schemas to decode with)");
  c.schema_registry.url = "registry:8081";
  CHECK(outbox::inbox::Validate(c).rfind("schema_registry.url: ", 0) == 0);
  c.schema_registry.url = "http://registry:8081";
  CHECK(outbox::inbox::Validate(c).empty());
}
