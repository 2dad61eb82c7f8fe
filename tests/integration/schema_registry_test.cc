// The relay binary with value formats against MariaDB, the mock cluster and
// a Schema Registry of the tests' own (tests/support/test_registry.py): each
// message read back from the broker is decoded by Debian's python3-avro
// (tests/schema/decode_avro.py), field by field equal to its row's payload.

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "schema/wire_format.h"
#include "support/avro_decode.h"
#include "support/http_probe.h"
#include "support/kafka_reader.h"
#include "support/metrics_text.h"
#include "support/process.h"
#include "support/relay_harness.h"
#include "support/test_broker.h"
#include "support/test_env.h"
#include "support/test_registry.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

constexpr const char* kOrderSchema = R"({"type": "record", "name": "OrderEvent",
  "namespace": "com.acme", "fields": [
    {"name": "order_id", "type": "long"},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
    {"name": "total", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10,
                               "scale": 2}},
    {"name": "note", "type": ["null", "string"], "default": null}]})";

std::string Payload(int order_id, const char* status = "PAID") {
  return json{{"order_id", order_id}, {"status", status}, {"total", "12.50"}}.dump();
}

// `outbox-relay run` on `yaml`, with the registry's password in its environment.
struct RelayRun {
  explicit RelayRun(const std::string& yaml)
      : proc({OUTBOX_BINARY, "run", "--config", dir.Write("relay.yaml", yaml)}, ChildEnv(Env())) {}
  static std::vector<std::string> Env() {
    std::vector<std::string> env = RelayChildEnv();
    env.push_back("SR_PASSWORD=s3cret");
    return env;
  }
  TempDir dir;
  ChildProcess proc;
};

std::string RegistryYaml(const TestRegistry& registry) {
  return "  schema_registry: {url: \"" + registry.url() +
         "\", username: relay, password_env: SR_PASSWORD, timeout_ms: 1000}\n";
}

}  // namespace

TEST_CASE("avro rows reach the broker as python3-avro reads them and a misfit row goes DEAD alone",
          "[e2e][process][schema-registry]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("schema_avro", ", last_error varchar(255)");
  TestRegistry::Options ro;
  ro.user = "relay";
  ro.password = "s3cret";
  TestRegistry registry(ro);
  const int id = registry.Register("outbox.event.Order-value", kOrderSchema);
  InsertRow(db, {.id = 1, .aggregate_id = 1, .payload = Payload(1, "NEW")});
  InsertRow(db, {.id = 2, .aggregate_id = 2, .payload = R"({"order_id": 2, "status": "LOST",
                 "total": 1})"});
  InsertRow(db, {.id = 3, .aggregate_id = 1, .payload = Payload(1)});
  InsertRow(db, {.id = 4, .aggregate_id = 2, .payload = Payload(2)});  // behind the DEAD row
  const int http = FreeTcpPort();
  RelayRun relay(RelayConfigYaml(db, "avro", cluster.bootstrap(),
                                 "value_format: avro\npoll_interval_ms: 50\n",
                                 "127.0.0.1:" + std::to_string(http), RegistryYaml(registry)));
  REQUIRE(WaitFor([&] { return db.CountByStatus()["SENT"] == 2; }, 60s));
  CHECK(db.CountByStatus()["DEAD"] == 1);
  CHECK(db.QueryString("SELECT last_error FROM t_outbox WHERE id = 2") ==
        "field status: \"LOST\" is not a symbol of enum com.acme.Status (NEW, PAID) (schema id " +
            std::to_string(id) + ")");
  CHECK(db.QueryString("SELECT status FROM t_outbox WHERE id = 4") == "NEW");  // held, as today
  const auto messages = ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"});
  REQUIRE(messages.size() == 2);
  for (const ConsumedMessage& m : messages) {
    const int64_t row = std::stoll(m.headers.at("outbox_id"));
    const json decoded = DecodeAvroWithPython(kOrderSchema, m.value);
    CHECK(decoded["schema_id"] == id);
    json expected = json::parse(row == 1 ? Payload(1, "NEW") : Payload(1));
    expected["note"] = nullptr;
    CHECK(decoded["value"] == expected);
  }
  const std::string metrics = HttpGet(http, "/metrics").body;
  CHECK(MetricValue(metrics,
                    "outbox_schema_conversion_failures_total{reason=\"bad_value\","
                    "service=\"avro\"}") == 1);
  CHECK(MetricValue(metrics, "outbox_publish_failures_total{reason=\"schema\",service=\"avro\"}") ==
        1);
}

TEST_CASE("rows wait through a registry outage and go out in order once it answers",
          "[e2e][process][schema-registry]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("schema_outage", ", last_error varchar(255)");
  TestRegistry registry;
  const int id = registry.Register("outbox.event.Order-value", R"({"type": "object"})", "JSON");
  const int http = FreeTcpPort();
  registry.SetMode("down");
  for (int i = 1; i <= 6; ++i)
    InsertRow(db, {.id = i, .aggregate_id = 1 + i % 2, .payload = Payload(i)});
  RelayRun relay(
      RelayConfigYaml(db, "js", cluster.bootstrap(),
                      "value_format: json_schema\npoll_interval_ms: 50\nlease_ms: 4000\n",
                      "127.0.0.1:" + std::to_string(http),
                      "  schema_registry: {url: \"" + registry.url() + "\", timeout_ms: 500}\n"));
  REQUIRE(WaitFor([&] { return HttpGet(http, "/readyz").status == 503; }, 20s));
  REQUIRE(WaitFor(
      [&] {
        return HttpGet(http, "/readyz").body.find("rows wait for the schema registry") !=
               std::string::npos;
      },
      20s));
  CHECK(MetricValue(HttpGet(http, "/metrics").body, "outbox_schema_registry_up{service=\"js\"}") ==
        0);
  std::this_thread::sleep_for(5s);  // more than a lease: the rows were released and claimed again
  CHECK(db.CountByStatus()["DEAD"] == 0);
  CHECK(db.CountByStatus()["SENT"] == 0);
  registry.SetMode("ok");
  REQUIRE(WaitFor([&] { return db.CountByStatus()["SENT"] == 6; }, 60s));
  CHECK(WaitFor([&] { return HttpGet(http, "/readyz").status == 200; }, 20s));
  const auto messages = ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"});
  REQUIRE(messages.size() == 6);
  std::map<std::string, int64_t> last;  // per key, the last outbox_id read
  for (const ConsumedMessage& m : messages) {
    const int64_t row = std::stoll(m.headers.at("outbox_id"));
    CHECK(row > last[m.key]);
    last[m.key] = row;
    CHECK(m.value == WithWireHeader(id, Payload(static_cast<int>(row))));
  }
}

TEST_CASE("check --connect resolves every subject known without a row",
          "[e2e][process][schema-registry]") {
  TestBroker cluster(1, "orders", 1);
  TestDatabase db("schema_check");
  TestRegistry registry;
  registry.Register("orders-value", kOrderSchema);
  const int id = registry.Register("orders-value", R"({"type": "record", "name": "OrderEvent",
    "namespace": "com.acme", "fields": [{"name": "order_id", "type": "long"}]})");
  TempDir dir;
  const std::string yaml = RelayConfigYaml(
      db, "chk", cluster.bootstrap(),
      "topic: orders\nvalue_format: avro\nvalues:\n  Ping: {value_format: json_schema}\n",
      "127.0.0.1:0", "  schema_registry: {url: \"" + registry.url() + "\"}\n");
  const ProcessResult r =
      RunProcess({OUTBOX_BINARY, "check", "--connect", "--config", dir.Write("relay.yaml", yaml)},
                 ChildEnv(RelayChildEnv()), 60s);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);  // Ping's subject orders-value holds Avro, not JSON Schema
  CHECK(r.out.find("service chk: schema registry " + registry.url() +
                   ": subject orders-value: id " + std::to_string(id) + ", version 2, AVRO\n") !=
        std::string::npos);
  CHECK(r.out.find("subject orders-value holds a AVRO schema where value_format is json_schema") !=
        std::string::npos);
}

TEST_CASE("a row's schema_id column names its schema over the subject's latest",
          "[e2e][process][schema-registry]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("schema_by_id", ", last_error varchar(255), schema_id int");
  TestRegistry registry;
  const int v1 = registry.Register("outbox.event.Order-value", kOrderSchema);
  const int v2 = registry.Register("outbox.event.Order-value", R"({"type": "record",
    "name": "OrderEvent", "namespace": "com.acme", "fields": [{"name": "order_id", "type": "long"}]})");
  InsertRow(db, {.id = 1, .aggregate_id = 1, .payload = Payload(1)});
  InsertRow(db, {.id = 2, .aggregate_id = 2, .payload = Payload(2), .schema_id = v1});
  InsertRow(db, {.id = 3, .aggregate_id = 3, .payload = Payload(3), .schema_id = 999});
  RelayRun relay(RelayConfigYaml(db, "byid", cluster.bootstrap(),
                                 "value_format: avro\npoll_interval_ms: 50\n", "127.0.0.1:0",
                                 "  schema_registry: {url: \"" + registry.url() + "\"}\n"));
  REQUIRE(WaitFor([&] { return db.CountByStatus()["SENT"] == 2; }, 60s));
  REQUIRE(WaitFor([&] { return db.CountByStatus()["DEAD"] == 1; }, 20s));
  CHECK(db.QueryString("SELECT last_error FROM t_outbox WHERE id = 3").find("schema id 999") !=
        std::string::npos);
  std::map<std::string, int32_t> ids;  // outbox_id -> schema id of its message
  for (const ConsumedMessage& m : ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"})) {
    int32_t id = 0;
    std::string_view body;
    REQUIRE(ParseWireHeader(m.value, &id, &body));
    ids[m.headers.at("outbox_id")] = id;
  }
  CHECK(ids == std::map<std::string, int32_t>{{"1", v2}, {"2", v1}});
}
