// Values with a schema, the relay's half and the inbox library's together
// (docs/CONSUMERS.md "Values with a schema"): the relay binary sends rows as
// Avro or JSON Schema values through a Schema Registry of the tests' own
// (tests/support/test_registry.py), and a consumer in this process hands a
// handler the schema id and the row's JSON, field by field, or the raw
// bytes; a value the registry has no schema for, or bytes that do not
// decode, are dead letters with the reason; a registry outage makes the
// events wait, none lost. Verdicts: SQL on the inbox, the dead-letter
// topic's content and the consumer's /metrics.
#include <atomic>
#include <catch2/catch.hpp>
#include <csignal>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/mutex.h"
#include "counter_handler.h"
#include "outbox/inbox/consumer.h"
#include "schema/avro_schema.h"
#include "schema/wire_format.h"
#include "support/consumer_harness.h"
#include "support/http_probe.h"
#include "support/inbox_rig.h"
#include "support/kafka_reader.h"
#include "support/metrics_text.h"
#include "support/relay_harness.h"
#include "support/test_registry.h"
#include "support/wait.h"

using namespace outbox::testing;
using namespace std::chrono_literals;
using nlohmann::json;
using outbox::inbox::ValueDecode;

namespace {

// The types docs/FORMATS.md lists: a nested record, unions with null, an
// array of records, a map, an enum, timestamp-millis, decimal on bytes, uuid.
constexpr const char* kOrderSchema = R"({"type": "record", "name": "OrderEvent",
  "namespace": "com.acme", "fields": [
    {"name": "order_id", "type": "long"},
    {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
      {"name": "name", "type": "string"},
      {"name": "address", "type": ["null", {"type": "record", "name": "Address", "fields": [
        {"name": "street", "type": "string"}, {"name": "zip", "type": "string"}]}]}]}},
    {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item",
      "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
    {"name": "attributes", "type": {"type": "map", "values": "string"}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
    {"name": "paid_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "total", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10,
                               "scale": 2}},
    {"name": "payment_id", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "note", "type": ["null", "string"], "default": null}]})";

// Row `id`'s payload: every field set but `note` on odd ids.
json OrderPayload(int id) {
  json p = {
      {"order_id", 1000 + id},
      {"customer",
       {{"name", "Ada " + std::to_string(id)},
        {"address", id % 3 == 0 ? json(nullptr) : json{{"street", "1 Loop Rd"}, {"zip", "123"}}}}},
      {"items", {{{"sku", "A-" + std::to_string(id)}, {"qty", id}}, {{"sku", "B"}, {"qty", 1}}}},
      {"attributes", {{"color", id % 2 ? "red" : "blue"}}},
      {"status", id % 2 ? "NEW" : "PAID"},
      {"paid_at", 1714566600123 + id},
      {"total", std::to_string(id) + ".50"},
      {"payment_id", "123e4567-e89b-12d3-a456-42661417400" + std::to_string(id % 10)}};
  if (id % 2 == 0) p["note"] = "note " + std::to_string(id);
  return p;
}

// Row `id`'s value as the library decodes it: note, when left out, with its default.
json DecodedOrder(int id) {
  json expected = OrderPayload(id);
  if (!expected.contains("note")) expected["note"] = nullptr;
  return expected;
}

// What a handler was given of one event.
struct Seen {
  int32_t schema_id = 0;
  std::string schema_type, json, body, payload;
};

// The example's counter (so that ConsumerDatabase::Applied counts), and
// what each event looked like, by outbox_id.
class RecordingHandler : public outbox::inbox::Handler {
 public:
  outbox::inbox::Status Apply(outbox::inbox::Transaction& tx,
                              const outbox::inbox::Event& e) override {
    outbox::inbox::Status s = counter_.Apply(tx, e);
    outbox::MutexLock lock(&mu_);
    seen_[e.outbox_id] = {e.schema_id, e.schema_type, e.json, std::string(e.body),
                          std::string(e.payload)};
    return s;
  }
  std::map<int64_t, Seen> seen() {
    outbox::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  example::CounterHandler counter_;
  outbox::Mutex mu_;
  std::map<int64_t, Seen> seen_ GUARDED_BY(mu_);
};

// The relay binary on `outbox` until every row is SENT, its values as
// `service_yaml` says, with the registry.
void RelayAll(TestDatabase& outbox, ConsumerRig& rig, const TestRegistry& registry,
              const std::string& service_yaml) {
  TempDir dir;
  const std::string config = dir.Write(
      "relay.yaml", RelayConfigYaml(outbox, "values", rig.cluster.bootstrap(),
                                    service_yaml + "poll_interval_ms: 50\n", "127.0.0.1:0",
                                    "  schema_registry: {url: \"" + registry.url() + "\"}\n"));
  ChildProcess relay({OUTBOX_BINARY, "run", "--config", config}, ChildEnv(RelayChildEnv()));
  REQUIRE(WaitFor([&] { return Unsent(outbox) == 0; }, 60s));
  relay.Signal(SIGTERM);
  relay.Wait(30s);
  CHECK(outbox.CountByStatus()["SENT"] == outbox.QueryInt("SELECT COUNT(*) FROM t_outbox"));
}

// The consumer's config on the rig: decode as asked, the registry, /metrics.
outbox::inbox::ConsumerConfig SchemaConfig(ConsumerRig& rig, const TestRegistry& registry,
                                           ValueDecode decode, int http_port) {
  outbox::inbox::ConsumerConfig config = InboxConfig(rig);
  config.decode = decode;
  config.schema_registry.url = registry.url();
  config.schema_registry.timeout_ms = 500;
  config.http_listen = "127.0.0.1:" + std::to_string(http_port);
  return config;
}

std::string AvroValue(int32_t id, const json& payload) {
  outbox::AvroSchemaPtr schema;
  REQUIRE(outbox::AvroSchema::Parse(kOrderSchema, &schema).ok());
  std::string binary;
  outbox::ConversionError e;
  REQUIRE(schema->Encode(payload.dump(), &binary, &e));
  return outbox::WithWireHeader(id, binary);
}

double Metric(int port, const std::string& sample) {
  return MetricValue(HttpGet(port, "/metrics").body, sample);
}

// A consumer's rig (the order topic and its dead letters) and the tests'
// registry with the order schema registered for the topic: `id`.
struct OrderBed {
  explicit OrderBed(const std::string& name, int partitions = 1)
      : rig(name, {{kOrderTopic, partitions}, {kOrderTopic + ".dlq", 1}}),
        id(registry.Register(kOrderTopic + "-value", kOrderSchema)) {}
  ConsumerRig rig;
  TestRegistry registry;
  int id;
};

// Rows 1..n with OrderPayload (JSON text, indented by `indent` when >= 0)
// sent by the relay binary as `service_yaml` says under a schema of `type`
// registered for the topic, then read by a consumer in this process as
// `decode` asks until all are applied: what its handler was given of each
// (every one checked to carry the schema's id), and the dead letters.
struct Relayed {
  int id = 0;
  std::map<int64_t, Seen> seen;
  size_t dead_letters = 0;
};
Relayed RelayAndConsume(const std::string& name, const std::string& schema, const std::string& type,
                        const std::string& service_yaml, int indent, ValueDecode decode, int rows) {
  ConsumerRig rig(name, {{kOrderTopic, 2}, {kOrderTopic + ".dlq", 1}});
  TestDatabase outbox(name + "_outbox");
  TestRegistry registry;
  Relayed r;
  r.id = registry.Register(kOrderTopic + "-value", schema, type);
  for (int i = 1; i <= rows; ++i)
    InsertRow(outbox, {.id = i,
                       .aggregate_id = 1 + i % 3,
                       .event_type = "OrderPaid",
                       .payload = OrderPayload(i).dump(indent)});
  RelayAll(outbox, rig, registry, service_yaml);
  RecordingHandler handler;
  const auto config = SchemaConfig(rig, registry, decode, FreeTcpPort());
  outbox::inbox::Consumer consumer(config, handler);
  bool settled = false;
  CHECK(RunUntil(
            consumer, [&] { return rig.db.Applied() == rows; }, &settled) == 0);
  REQUIRE(settled);
  r.seen = handler.seen();
  REQUIRE(r.seen.size() == static_cast<size_t>(rows));
  for (const auto& [row, event] : r.seen) CHECK(event.schema_id == r.id);
  r.dead_letters = ConsumeAll(rig.cluster.bootstrap(), {kOrderTopic + ".dlq"}).size();
  return r;
}

}  // namespace

TEST_CASE("a relay's avro values reach the handler with their schema id and the row's JSON",
          "[inbox-schema][process]") {
  const Relayed r = RelayAndConsume("inbox_values_avro", kOrderSchema, "AVRO",
                                    "value_format: avro\n", -1, ValueDecode::kJson, 6);
  for (const auto& [row, event] : r.seen) {
    INFO("outbox_id " << row);
    CHECK(event.schema_type == "AVRO");
    CHECK(event.payload == outbox::WithWireHeader(r.id, event.body));
    const json decoded = json::parse(event.json);
    const json payload = OrderPayload(static_cast<int>(row));
    for (const auto& [field, value] : payload.items()) {
      INFO("field " << field);
      CHECK(decoded.at(field) == value);
    }
    CHECK(decoded == DecodedOrder(static_cast<int>(row)));  // and no other field
  }
  CHECK(r.dead_letters == 0);
}

TEST_CASE("a relay's json_schema values reach a raw handler as the row's bytes after the header",
          "[inbox-schema][process]") {
  // Indented: the spaces and newlines of the row's text are kept.
  const Relayed r = RelayAndConsume("inbox_values_json", R"({"type": "object"})", "JSON",
                                    "value_format: json_schema\n", 2, ValueDecode::kRaw, 4);
  for (const auto& [row, event] : r.seen) {
    INFO("outbox_id " << row);
    CHECK(event.schema_type == "JSON");
    CHECK(event.body == OrderPayload(static_cast<int>(row)).dump(2));
    CHECK(event.json.empty());
  }
  CHECK(r.dead_letters == 0);
}

TEST_CASE("an unknown schema id and bytes that do not decode are dead letters with the reason",
          "[inbox-schema]") {
  OrderBed bed("inbox_values_dead");
  auto& [rig, registry, id] = bed;
  const std::vector<TestEvent> events = MakeEvents(3, 1);
  std::vector<RawMessage> messages;
  for (const TestEvent& e : events) messages.push_back(ToMessage(e));
  messages[0].value = AvroValue(999, OrderPayload(1));         // no such schema
  messages[1].value = outbox::WithWireHeader(id, "\x02\x03");  // not an OrderEvent
  messages[2].value = AvroValue(id, OrderPayload(3));
  for (const RawMessage& m : messages) rig.producer.Send(kOrderTopic, m);
  RecordingHandler handler;
  const int http = FreeTcpPort();
  const auto config = SchemaConfig(rig, registry, ValueDecode::kJson, http);
  outbox::inbox::Consumer consumer(config, handler);
  bool settled = false;
  RunUntil(
      consumer,
      [&] {
        return rig.db.Applied() == 1 &&
               ConsumeAll(rig.cluster.bootstrap(), {kOrderTopic + ".dlq"}).size() == 2 &&
               Metric(http,
                      "outbox_consumer_messages_total{consumer=\"fulfillment\","
                      "outcome=\"dead_lettered\"}") == 2;
      },
      &settled);
  REQUIRE(settled);
  const auto dead = ConsumeAll(rig.cluster.bootstrap(), {kOrderTopic + ".dlq"});
  std::map<std::string, std::string> reasons;  // by message key
  for (const auto& m : dead) reasons[m.key] = m.headers.at("dlq_reason");
  INFO(reasons["1"] << " / " << reasons["2"]);
  CHECK(reasons["1"].rfind("value: schema id 999 is not in the schema registry: ", 0) == 0);
  CHECK(reasons["2"].rfind("value: the value's body is not one value of the schema in Avro binary",
                           0) == 0);
  CHECK(handler.seen().size() == 1);
  CHECK(rig.db.QueryInt("SELECT COUNT(*) FROM t_inbox") == 1);
  CHECK(Metric(http,
               "outbox_consumer_value_failures_total{consumer=\"fulfillment\","
               "reason=\"unknown_schema\"}") == 1);
  CHECK(Metric(http,
               "outbox_consumer_value_failures_total{consumer=\"fulfillment\","
               "reason=\"not_avro\"}") == 1);
}

TEST_CASE("events wait through a registry outage and are all applied once it answers",
          "[inbox-schema]") {
  OrderBed bed("inbox_values_outage", 2);
  auto& [rig, registry, id] = bed;
  registry.SetMode("down");
  const std::vector<TestEvent> events = MakeEvents(4, 2);
  for (const TestEvent& e : events) {
    RawMessage m = ToMessage(e);
    m.value = AvroValue(id, OrderPayload(static_cast<int>(e.outbox_id)));
    rig.producer.Send(kOrderTopic, m);
  }
  RecordingHandler handler;
  const int http = FreeTcpPort();
  const auto config = SchemaConfig(rig, registry, ValueDecode::kJson, http);
  outbox::inbox::Consumer consumer(config, handler);
  std::atomic<bool> stop{false};
  int exit_code = -1;
  std::thread loop([&] { exit_code = consumer.Run(stop); });
  const bool waited = WaitFor(
      [&] {
        return Metric(http, "outbox_consumer_schema_registry_up{consumer=\"fulfillment\"}") == 0 &&
               Metric(http, "outbox_consumer_stalls_total{consumer=\"fulfillment\"}") >= 2;
      },
      60s);
  const int64_t applied_while_down = rig.db.Applied();
  registry.SetMode("ok");
  const bool applied = WaitFor([&] { return rig.db.Applied() == 8; }, 60s);
  const double up = Metric(http, "outbox_consumer_schema_registry_up{consumer=\"fulfillment\"}");
  stop = true;
  loop.join();
  CHECK(waited);
  CHECK(applied_while_down == 0);
  CHECK(applied);
  CHECK(up == 1);
  CHECK(exit_code == 0);
  CHECK(ConsumeAll(rig.cluster.bootstrap(), {kOrderTopic + ".dlq"}).empty());
  CHECK(rig.db.CheckExactlyOnce(events) == "");
  const auto seen = handler.seen();
  REQUIRE(seen.size() == 8);
  for (const auto& [row, event] : seen)
    CHECK(json::parse(event.json) == DecodedOrder(static_cast<int>(row)));
}

TEST_CASE("the example consumer prints each event's schema id and its JSON or its bytes",
          "[inbox-schema][process]") {
  OrderBed bed("inbox_values_example");
  auto& [rig, registry, id] = bed;
  const std::vector<TestEvent> events = MakeEvents(2, 1);
  RawMessage avro = ToMessage(events[0]);
  avro.value = AvroValue(id, OrderPayload(1));
  RawMessage plain = ToMessage(events[1]);
  plain.value = R"({"plain": true})";
  rig.producer.Send(kOrderTopic, avro);
  rig.producer.Send(kOrderTopic, plain);
  ConsumerSpec spec;
  spec.extra_yaml = "values: {decode: json}\nschema_registry: {url: \"" + registry.url() + "\"}";
  ConsumerProcess consumer = rig.Consumer("printer", spec);
  REQUIRE(consumer.Start());
  REQUIRE(WaitFor([&] { return rig.db.Applied() == 2; }, 60s));
  CHECK(consumer.Stop() == 0);
  const std::string log = consumer.Log();
  INFO(log);
  const json decoded = DecodedOrder(1);
  CHECK(log.find("event " + events[0].Key() + ": schema id " + std::to_string(id) +
                 " (AVRO), JSON " + decoded.dump().substr(0, 150)) != std::string::npos);
  CHECK(log.find("event " + events[1].Key() + R"(: no schema id, payload {"plain": true})") !=
        std::string::npos);
}

TEST_CASE("a version parked by strict is decoded again when its gap fills", "[inbox-schema]") {
  OrderBed bed("inbox_values_strict");
  auto& [rig, registry, id] = bed;
  // Aggregate 1's versions 2 and 3 come before version 1: both are parked,
  // then applied after it in its transaction.
  for (int64_t v : {2, 3, 1}) {
    TestEvent e;
    e.outbox_id = v;
    e.aggregate_id = 1;
    e.version = v;
    RawMessage m = ToMessage(e);
    m.value = AvroValue(id, OrderPayload(static_cast<int>(v)));
    rig.producer.Send(kOrderTopic, m);
  }
  RecordingHandler handler;
  auto config = SchemaConfig(rig, registry, ValueDecode::kJson, FreeTcpPort());
  config.version_check = outbox::inbox::VersionCheck::kStrict;
  outbox::inbox::Consumer consumer(config, handler);
  bool settled = false;
  CHECK(RunUntil(
            consumer, [&] { return rig.db.Applied() == 3; }, &settled) == 0);
  REQUIRE(settled);
  CHECK(rig.db.OutOfOrder() == 0);
  const auto seen = handler.seen();
  REQUIRE(seen.size() == 3);
  for (const auto& [row, event] : seen) {
    INFO("outbox_id " << row);
    CHECK(event.schema_id == id);
    CHECK(event.schema_type == "AVRO");
    CHECK(event.payload == outbox::WithWireHeader(id, event.body));
    CHECK(json::parse(event.json) == DecodedOrder(static_cast<int>(row)));
  }
}
