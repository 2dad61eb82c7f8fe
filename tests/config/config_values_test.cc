// kafka.schema_registry and the value formats of a service (docs/CONFIG.md
// "value_format"): what they read into, and each mistake's one line.

#include <catch2/catch.hpp>

#include "config/config_loader.h"

using namespace outbox;

namespace {

LoadOptions WithEnv() {
  LoadOptions o;
  o.env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "SR_USER") return "relay";
    if (name == "SR_PASSWORD") return "s3cret";
    return std::nullopt;
  };
  return o;
}

std::string Yaml(const std::string& registry, const std::string& service) {
  return "kafka:\n  bootstrap_servers: k:9092\n" + registry +
         "services:\n  - name: a\n    mysql: {user: u, database: d}\n" + service;
}

const char* const kRegistry =
    "  schema_registry: {url: \"https://sr:8081\", username_env: SR_USER, password_env: "
    "SR_PASSWORD}\n";

// The one problem `yaml` has, as the loader words it.
std::string Problem(const std::string& yaml) {
  try {
    (void)LoadConfigText(yaml, "c.yaml", WithEnv());
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("value formats and the schema registry read into the service's config", "[config]") {
  const LoadedConfig loaded = LoadConfigText(
      Yaml(kRegistry,
           "    value_format: avro\n"
           "    schema: {subject_strategy: topic_record_name, record: \"com.acme.{event_type}\", "
           "version: \"3\"}\n"
           "    values:\n"
           "      Ping: {value_format: json_schema, schema: {subject: \"{service}-{topic}\"}}\n"
           "      Raw: {value_format: bytes}\n"),
      "c.yaml", WithEnv());
  const ServiceConfig& s = loaded.config.services.at(0);
  REQUIRE(s.kafka.schema_registry);
  CHECK(s.kafka.schema_registry->url == "https://sr:8081");
  CHECK(s.kafka.schema_registry->username == "relay");
  CHECK(s.kafka.schema_registry->password == "s3cret");
  CHECK(s.kafka.schema_registry->password_source == "env:SR_PASSWORD");
  CHECK(s.value.format == ValueFormat::kAvro);
  CHECK(s.value.strategy == SubjectStrategy::kTopicRecordName);
  CHECK(s.value.record == "com.acme.{event_type}");
  CHECK(s.value.version == "3");
  const ValueConfig& ping = s.values.at("Ping");
  CHECK(ping.format == ValueFormat::kJsonSchema);
  CHECK(ping.strategy == SubjectStrategy::kTemplate);
  CHECK(ping.subject == "{service}-{topic}");
  CHECK(ping.version == "3");  // the service's, where the event type says nothing
  CHECK(s.values.at("Raw").format == ValueFormat::kBytes);
}

TEST_CASE("value format mistakes are refused with one line naming the key", "[config][bad]") {
  struct Case {
    std::string registry, service, message;
  };
  const std::vector<Case> cases = {
      {"", "    value_format: avro\n",
       "c.yaml:6:19: services[0].value_format: needs a schema registry: set "
       "kafka.schema_registry (here or in the top-level kafka block)"},
      {kRegistry, "    value_format: json_schema\n    payload_encoding: avro\n",
       "c.yaml:8:23: services[0].payload_encoding: avro needs value_format: avro"},
      {kRegistry, "    value_format: avro\n    schema: {subject_strategy: record_name}\n",
       "c.yaml:8:13: services[0].schema.record: is required with subject_strategy record_name or "
       "topic_record_name"},
      {kRegistry, "    value_format: avro\n    schema: {version: v2}\n",
       "c.yaml:8:23: services[0].schema.version: must be latest or a version number (got \"v2\")"},
      {kRegistry, "    value_format: avro\n    schema: {subject: \"{topics}-value\"}\n",
       "c.yaml:8:23: services[0].schema.subject: unknown placeholder {topics} (known: {topic}, "
       "{aggregate_type}, {event_type}, {service})"},
      {"  schema_registry: {url: \"sr:8081\"}\n", "",
       "c.yaml:3:26: kafka.schema_registry.url: schema registry url \"sr:8081\": must start with "
       "http:// or https://"},
      {"  schema_registry: {url: \"http://u:pw@sr:8081\"}\n", "",
       "c.yaml:3:26: kafka.schema_registry.url: schema registry url \"http://u:pw@sr:8081\": "
       "credentials go in username and password, not in the url"},
      {"  schema_registry: {url: \"http://sr:port\"}\n", "",
       "c.yaml:3:26: kafka.schema_registry.url: schema registry url \"http://sr:port\": expected "
       "host, host:port or [v6-address]:port after the scheme"},
      {"  schema_registry: {url: \"http://sr\", password_env: SR_PASSWORD}\n", "",
       "c.yaml:3:20: kafka.schema_registry.username: is required with a password (HTTP basic "
       "auth)"},
  };
  for (const Case& c : cases) {
    const std::string yaml = Yaml(c.registry, c.service);
    INFO(yaml);
    CHECK(Problem(yaml) == c.message);
  }
}
