// ValueReader (src/inbox/value_reader.h): what a handler is given of a
// value with Confluent's wire header, and which values wait or are dead
// letters, against a registry in memory and a fake clock.
#include "inbox/value_reader.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fakes/fake_clock.h"
#include "fakes/fake_registry.h"
#include "inbox/consumer_metrics.h"
#include "schema/avro_schema.h"
#include "schema/wire_format.h"
#include "support/metrics_text.h"

using namespace outbox::inbox;
using nlohmann::json;
using outbox::testing::FakeClock;
using outbox::testing::FakeSchemaRegistry;

namespace {

constexpr const char* kPaid = R"({"type": "record", "name": "OrderPaid", "namespace": "com.acme",
  "fields": [{"name": "order_id", "type": "long"},
             {"name": "note", "type": ["null", "string"], "default": null}]})";

// The library's metrics hear what the reader reports.
double Metric(const ConsumerMetrics& metrics, const std::string& name, const std::string& labels) {
  return outbox::testing::MetricValue(metrics.Serialize(), name + "{consumer=\"c\"" + labels + "}");
}

// A registry with kPaid registered (id 1) and a JSON Schema (id 2), a
// reader on it, and an event whose payload the case sets.
struct Rig {
  explicit Rig(ValueDecode decode)
      : registry(std::make_shared<FakeSchemaRegistry>()), clock(std::make_shared<FakeClock>()) {
    avro_id = registry->Register("outbox.event.Order-value", kPaid);
    json_id = registry->Register("outbox.event.Note-value", R"({"type": "object"})", "JSON");
    reader = std::make_unique<ValueReader>(decode, registry, clock, &observer);
  }
  // The relay's value for `payload` under kPaid.
  std::string AvroValue(const std::string& payload) {
    outbox::AvroSchemaPtr schema;
    REQUIRE(outbox::AvroSchema::Parse(kPaid, &schema).ok());
    std::string binary;
    outbox::ConversionError e;
    REQUIRE(schema->Encode(payload, &binary, &e));
    return outbox::WithWireHeader(avro_id, binary);
  }
  ValueRead Read(const std::string& value) {
    value_ = value;
    event.payload = value_;
    return reader->Read(&event);
  }

  std::shared_ptr<FakeSchemaRegistry> registry;
  std::shared_ptr<FakeClock> clock;
  ConsumerMetrics observer{"c"};
  std::unique_ptr<ValueReader> reader;
  int avro_id = 0, json_id = 0;
  Event event;

 private:
  std::string value_;
};

}  // namespace

TEST_CASE("an avro value gives the handler its schema id and the row's JSON", "[value-reader]") {
  Rig rig(ValueDecode::kJson);
  const std::string value = rig.AvroValue(R"({"order_id": 42})");
  const ValueRead r = rig.Read(value);
  REQUIRE(r.kind == ValueRead::Kind::kOk);
  CHECK(rig.event.schema_id == rig.avro_id);
  CHECK(rig.event.schema_type == "AVRO");
  CHECK(rig.event.payload == value);
  CHECK(rig.event.body == std::string_view(value).substr(5));
  CHECK(json::parse(rig.event.json) == json{{"order_id", 42}, {"note", nullptr}});
  CHECK(Metric(rig.observer, "outbox_consumer_schema_lookups_total", ",result=\"ok\"") == 1);
}

TEST_CASE("decode raw gives the body and no JSON and a schema is read once", "[value-reader]") {
  Rig rig(ValueDecode::kRaw);
  const std::string value = rig.AvroValue(R"({"order_id": 7, "note": "x"})");
  for (int i = 0; i < 3; ++i) {
    REQUIRE(rig.Read(value).kind == ValueRead::Kind::kOk);
    CHECK(rig.event.schema_id == rig.avro_id);
    CHECK(rig.event.body == std::string_view(value).substr(5));
    CHECK(rig.event.json.empty());
  }
  CHECK(rig.registry->requests() == 1);
}

TEST_CASE("a value without the wire header is passed as it is", "[value-reader]") {
  Rig rig(ValueDecode::kJson);
  const std::string value =
      GENERATE(std::string(R"({"order_id": 1})"), std::string(), std::string("\0\0\0", 3));
  REQUIRE(rig.Read(value).kind == ValueRead::Kind::kOk);
  CHECK(rig.event.schema_id == 0);
  CHECK(rig.event.body == value);
  CHECK(rig.event.json.empty());
  CHECK(rig.event.schema_type.empty());
  CHECK(rig.registry->requests() == 0);
}

TEST_CASE("a JSON Schema value's body is its JSON and a body that is not JSON is a dead letter",
          "[value-reader]") {
  Rig rig(ValueDecode::kJson);
  REQUIRE(rig.Read(outbox::WithWireHeader(rig.json_id, R"({"a": [1]})")).kind ==
          ValueRead::Kind::kOk);
  CHECK(rig.event.schema_type == "JSON");
  CHECK(rig.event.json == R"({"a": [1]})");
  const ValueRead bad = rig.Read(outbox::WithWireHeader(rig.json_id, "{not json"));
  CHECK(bad.kind == ValueRead::Kind::kDeadLetter);
  CHECK(bad.label == "invalid_json");
  CHECK(bad.reason == "value: the body is not JSON (schema id 2)");
}

TEST_CASE("a schema id the registry does not have is a dead letter that names it",
          "[value-reader]") {
  Rig rig(GENERATE(ValueDecode::kJson, ValueDecode::kRaw));
  const ValueRead r = rig.Read(outbox::WithWireHeader(999, "\x54"));
  CHECK(r.kind == ValueRead::Kind::kDeadLetter);
  CHECK(r.label == "unknown_schema");
  CHECK(r.reason.rfind("value: schema id 999 is not in the schema registry: ", 0) == 0);
  CHECK(Metric(rig.observer, "outbox_consumer_schema_lookups_total", ",result=\"not_found\"") == 1);
  CHECK(Metric(rig.observer, "outbox_consumer_schema_registry_up", "") == 1);  // it answered
}

TEST_CASE("bytes that do not decode by their schema are a not_avro dead letter", "[value-reader]") {
  Rig rig(ValueDecode::kJson);
  const std::string good = rig.AvroValue(R"({"order_id": 42})");
  const ValueRead r = rig.Read(
      GENERATE_COPY(good.substr(0, 5), good + "extra", outbox::WithWireHeader(1, "\x54\x09")));
  CHECK(r.kind == ValueRead::Kind::kDeadLetter);
  CHECK(r.label == "not_avro");
  CHECK(r.reason.find("(schema id 1)") != std::string::npos);
}

TEST_CASE("a registry that does not answer makes the value wait and it reads once it answers",
          "[value-reader]") {
  Rig rig(ValueDecode::kJson);
  const std::string value = rig.AvroValue(R"({"order_id": 5})");
  rig.registry->set_failure(outbox::Status::Unavailable("connection refused"));
  const ValueRead r = rig.Read(value);
  CHECK(r.kind == ValueRead::Kind::kWait);
  CHECK(r.reason == "connection refused");
  CHECK(Metric(rig.observer, "outbox_consumer_schema_registry_up", "") == 0);
  rig.registry->set_failure(outbox::Status::Error(outbox::StatusCode::kPermission, "HTTP 401"));
  rig.clock->Advance(std::chrono::seconds(2));  // past the failure's backoff
  CHECK(rig.Read(value).kind == ValueRead::Kind::kWait);
  rig.registry->set_failure(outbox::Status::Ok());
  rig.clock->Advance(std::chrono::seconds(2));
  REQUIRE(rig.Read(value).kind == ValueRead::Kind::kOk);
  CHECK(json::parse(rig.event.json)["order_id"] == 5);
  CHECK(Metric(rig.observer, "outbox_consumer_schema_registry_up", "") == 1);
  for (const char* result : {"unavailable", "denied", "ok"}) {
    INFO(result);
    CHECK(Metric(rig.observer, "outbox_consumer_schema_lookups_total",
                 ",result=\"" + std::string(result) + "\"") == 1);
  }
}

TEST_CASE("without a registry decode raw reads the header and asks nothing", "[value-reader]") {
  ValueReader reader(ValueDecode::kRaw, nullptr, std::make_shared<FakeClock>(), nullptr);
  const std::string value = outbox::WithWireHeader(77, "body");
  Event ev;
  ev.payload = value;
  REQUIRE(reader.Read(&ev).kind == ValueRead::Kind::kOk);
  CHECK(ev.schema_id == 77);
  CHECK(ev.body == "body");
  CHECK(ev.schema_type.empty());
}
