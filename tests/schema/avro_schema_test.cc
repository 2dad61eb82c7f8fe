#include "schema/avro_schema.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "schema/avro_logical.h"
#include "schema/wire_format.h"
#include "support/avro_decode.h"

using namespace outbox;
using nlohmann::json;
using outbox::testing::DecodeAvroWithPython;

namespace {

// Every kind of value the conversion knows, in one event.
constexpr const char* kOrderPaid = R"({
  "type": "record", "name": "OrderPaid", "namespace": "com.acme",
  "fields": [
    {"name": "order_id", "type": "long"},
    {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
      {"name": "name", "type": "string"},
      {"name": "address", "type": ["null", {"type": "record", "name": "Address", "fields": [
        {"name": "street", "type": "string"}, {"name": "zip", "type": "string"}]}]}]}},
    {"name": "note", "type": ["null", "string"], "default": null},
    {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item",
      "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"},
                 {"name": "price", "type": {"type": "bytes", "logicalType": "decimal",
                                            "precision": 10, "scale": 2}}]}}},
    {"name": "attributes", "type": {"type": "map", "values": "string"}},
    {"name": "status", "type": {"type": "enum", "name": "Status",
                                "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "paid_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "paid_on", "type": {"type": "int", "logicalType": "date"}},
    {"name": "payment_id", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "total", "type": "double"},
    {"name": "gift", "type": "boolean"},
    {"name": "channel", "type": "string", "default": "web"},
    {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
    {"name": "billing", "type": ["null", "Address"], "default": null},
    {"name": "ratio", "type": "float", "default": 0.5}
  ]})";

constexpr const char* kPayload = R"({
  "order_id": 9007199254740993,
  "customer": {"name": "Ada", "address": {"street": "1 Loop Rd", "zip": "12345"}},
  "items": [{"sku": "A-1", "qty": 2, "price": "19.99"}, {"sku": "B-2", "qty": 1, "price": 5}],
  "attributes": {"color": "red", "size": "L"},
  "status": "PAID",
  "paid_at": "2024-05-01T14:30:00.123+02:00",
  "paid_on": "2024-05-01",
  "payment_id": "123e4567-e89b-12d3-a456-426614174000",
  "total": 44.98,
  "gift": false,
  "unknown_to_the_schema": [1, 2, 3]
})";

AvroSchemaPtr MustParse(const std::string& text) {
  AvroSchemaPtr schema;
  const Status s = AvroSchema::Parse(text, &schema);
  INFO(s.message());
  REQUIRE(s.ok());
  return schema;
}

std::string MustEncode(const AvroSchema& schema, const json& payload) {
  std::string binary;
  ConversionError e;
  INFO(e.message);
  REQUIRE(schema.Encode(payload.dump(), &binary, &e));
  return binary;
}

// AvroSchema::Decode's JSON (the consumer's half).
json MustDecode(const AvroSchema& schema, const std::string& binary) {
  std::string text;
  ConversionError e;
  const bool ok = schema.Decode(binary, &text, &e);
  INFO(e.message);
  REQUIRE(ok);
  return json::parse(text);
}

ConversionError Misfit(const AvroSchema& schema, const std::string& payload) {
  std::string out;
  ConversionError e;
  CHECK_FALSE(schema.Encode(payload, &out, &e));
  return e;
}

}  // namespace

TEST_CASE("a payload of every supported kind decodes with python3-avro to the same values",
          "[schema][python-avro]") {
  const AvroSchemaPtr schema = MustParse(kOrderPaid);
  CHECK(schema->record_name() == "com.acme.OrderPaid");
  std::string avro;
  ConversionError e;
  REQUIRE(schema->Encode(kPayload, &avro, &e));
  const json decoded = DecodeAvroWithPython(kOrderPaid, WithWireHeader(77, avro));
  CHECK(decoded["schema_id"] == 77);
  const json expected = json::parse(R"({
    "order_id": 9007199254740993,
    "customer": {"name": "Ada", "address": {"street": "1 Loop Rd", "zip": "12345"}},
    "note": null,
    "items": [{"sku": "A-1", "qty": 2, "price": "19.99"}, {"sku": "B-2", "qty": 1, "price": "5.00"}],
    "attributes": {"color": "red", "size": "L"},
    "status": "PAID",
    "paid_at": "2024-05-01T12:30:00.123000Z",
    "paid_on": "2024-05-01",
    "payment_id": "123e4567-e89b-12d3-a456-426614174000",
    "total": 44.98,
    "gift": false,
    "channel": "web",
    "tags": [],
    "billing": null,
    "ratio": 0.5
  })");
  for (auto it = expected.begin(); it != expected.end(); ++it) {
    INFO("field " << it.key());
    CHECK(decoded.at("value").at(it.key()) == it.value());
  }
  CHECK(decoded["value"].size() == expected.size());
}

TEST_CASE("a payload that does not fit its schema names the field and the reason", "[schema]") {
  const AvroSchemaPtr schema = MustParse(kOrderPaid);
  json base = json::parse(kPayload);
  struct Case {
    const char* pointer;  // JSON pointer of the value changed
    json value;           // nullptr with erase: removed
    bool erase;
    ConversionFailure reason;
    const char* field;
  };
  const Case cases[] = {
      {"/customer/name", nullptr, true, ConversionFailure::kMissingField, "customer.name"},
      {"/items/1/qty", "one", false, ConversionFailure::kWrongType, "items[1].qty"},
      {"/items/0/qty", 3000000000LL, false, ConversionFailure::kBadValue, "items[0].qty"},
      {"/items/0/price", "1.999", false, ConversionFailure::kBadValue, "items[0].price"},
      {"/status", "LOST", false, ConversionFailure::kBadValue, "status"},
      {"/payment_id", "not-a-uuid", false, ConversionFailure::kBadValue, "payment_id"},
      {"/paid_at", "tomorrow", false, ConversionFailure::kBadValue, "paid_at"},
      {"/attributes/color", 7, false, ConversionFailure::kWrongType, "attributes[\"color\"]"},
      {"/customer/address/zip", nullptr, true, ConversionFailure::kMissingField,
       "customer.address.zip"},
      {"/order_id", nullptr, false, ConversionFailure::kWrongType, "order_id"},
      {"/gift", "no", false, ConversionFailure::kWrongType, "gift"},
  };
  for (const Case& c : cases) {
    json payload = base;
    const json::json_pointer p(c.pointer);
    if (c.erase)
      payload[p.parent_pointer()].erase(p.back());
    else
      payload[p] = c.value;
    const ConversionError e = Misfit(*schema, payload.dump());
    INFO(c.pointer << ": " << e.message);
    CHECK(e.reason == c.reason);
    CHECK(e.field == c.field);
    CHECK(e.message.find(std::string("field ") + c.field + ":") == 0);
  }
}

TEST_CASE("a payload that is not JSON or not an object is refused as such", "[schema]") {
  const AvroSchemaPtr schema = MustParse(kOrderPaid);
  CHECK(Misfit(*schema, "{\"order_id\": ").reason == ConversionFailure::kInvalidJson);
  const ConversionError e = Misfit(*schema, "[1]");
  CHECK(e.reason == ConversionFailure::kWrongType);
  CHECK(e.message == "the payload: expected an object (record com.acme.OrderPaid), got an array");
}

TEST_CASE("a union takes a plain value or Avro's wrapped form and says which branches it tried",
          "[schema]") {
  const std::string text = R"({"type": "record", "name": "R", "fields": [
    {"name": "v", "type": ["null", "int", "string"]},
    {"name": "m", "type": ["null", {"type": "map", "values": "long"}], "default": null}]})";
  const AvroSchemaPtr schema = MustParse(text);
  std::string plain, wrapped;
  ConversionError e;
  REQUIRE(schema->Encode(R"({"v": 5})", &plain, &e));
  REQUIRE(schema->Encode(R"({"v": {"int": 5}})", &wrapped, &e));
  CHECK(plain == wrapped);
  CHECK(DecodeAvroWithPython(text, WithWireHeader(1, plain))["value"]["v"] == 5);
  std::string map;
  REQUIRE(schema->Encode(R"({"v": "x", "m": {"a": 1, "b": 2}})", &map, &e));
  CHECK(DecodeAvroWithPython(text, WithWireHeader(1, map))["value"]["m"] ==
        json{{"a", 1}, {"b", 2}});
  const ConversionError misfit = Misfit(*schema, R"({"v": true})");
  CHECK(misfit.reason == ConversionFailure::kWrongType);
  CHECK(misfit.message == "field v: a boolean fits no branch of [null, int, string]");
}

TEST_CASE("a recursive record encodes to its depth", "[schema][python-avro]") {
  const std::string text = R"({"type": "record", "name": "Node", "namespace": "t", "fields": [
    {"name": "label", "type": "string"}, {"name": "next", "type": ["null", "Node"]}]})";
  const AvroSchemaPtr schema = MustParse(text);
  const std::string payload = R"({"label": "a", "next": {"label": "b", "next": null}})";
  std::string avro;
  ConversionError e;
  REQUIRE(schema->Encode(payload, &avro, &e));
  CHECK(DecodeAvroWithPython(text, WithWireHeader(3, avro))["value"] == json::parse(payload));
}

TEST_CASE("a payload stored as Avro already is checked to be exactly one value of the schema",
          "[schema]") {
  const AvroSchemaPtr schema = MustParse(kOrderPaid);
  std::string avro;
  ConversionError e;
  REQUIRE(schema->Encode(kPayload, &avro, &e));
  CHECK(schema->CheckBinary(avro, &e));
  CHECK_FALSE(schema->CheckBinary(avro + "x", &e));
  CHECK(e.reason == ConversionFailure::kNotAvro);
  CHECK_FALSE(schema->CheckBinary(avro.substr(0, avro.size() - 3), &e));
  CHECK(e.reason == ConversionFailure::kNotAvro);
}

TEST_CASE("a schema that avro-c or the reading of its types refuses is an error that says why",
          "[schema]") {
  AvroSchemaPtr schema;
  Status s = AvroSchema::Parse("{\"type\": \"record\"", &schema);
  CHECK(s.message() == "the Avro schema is not valid JSON");
  s = AvroSchema::Parse(R"({"type": "record", "name": "R", "fields": [
    {"name": "a", "type": "com.acme.Nowhere"}]})",
                        &schema);
  CHECK(s.code() == StatusCode::kInvalid);
  CHECK(s.message() == "Avro schema: unknown type \"com.acme.Nowhere\"");
  s = AvroSchema::Parse(R"({"type": "enum", "name": "E", "symbols": []})", &schema);
  CHECK_FALSE(s.ok());
  CHECK(schema == nullptr);
}

TEST_CASE("a payload encoded and decoded again is the payload field by field", "[avro-decode]") {
  const AvroSchemaPtr schema = MustParse(kOrderPaid);
  json payload = json::parse(kPayload);
  payload.erase("unknown_to_the_schema");
  // The forms the values are stored in: times as numbers, decimals as text.
  payload["paid_at"] = 1714566600123;  // 2024-05-01T12:30:00.123Z
  payload["paid_on"] = 19844;          // days since 1970-01-01
  payload["items"][1]["price"] = "5.00";
  const json decoded = MustDecode(*schema, MustEncode(*schema, payload));
  for (const auto& [field, value] : payload.items()) {
    INFO("field " << field);
    CHECK(decoded.at(field) == value);
  }
  CHECK(decoded.size() == payload.size() + 5);  // the fields with defaults
}

TEST_CASE("the text forms of a payload come back in the forms the values are stored in",
          "[avro-decode]") {
  const AvroSchemaPtr schema = MustParse(kOrderPaid);
  const json decoded = MustDecode(*schema, MustEncode(*schema, json::parse(kPayload)));
  CHECK(decoded["paid_at"] == 1714566600123);
  CHECK(decoded["paid_on"] == 19844);
  CHECK(decoded["items"][1]["price"] == "5.00");
  CHECK(decoded["ratio"] == 0.5);
  CHECK(decoded["channel"] == "web");
  CHECK(decoded["tags"] == json::array());
  CHECK(decoded["billing"].is_null());
}

TEST_CASE("fields the payload left out come back with their defaults and an absent union as null",
          "[avro-decode]") {
  const AvroSchemaPtr schema = MustParse(kOrderPaid);
  json payload = json::parse(kPayload);
  payload["customer"]["address"] = nullptr;
  payload["note"] = "leave at the door";
  const json decoded = MustDecode(*schema, MustEncode(*schema, payload));
  CHECK(decoded["note"] == "leave at the door");
  CHECK(decoded["customer"]["address"].is_null());
  CHECK_FALSE(decoded.contains("unknown_to_the_schema"));
}

TEST_CASE("decimals read back as text with the schema's scale", "[avro-decode]") {
  const auto [given, text] = GENERATE(table<std::string, std::string>({
      {"19.99", "19.99"},
      {"19.9", "19.90"},
      {"0", "0.00"},
      {"-0.05", "-0.05"},
      {"-128", "-128.00"},
      {"99999999.99", "99999999.99"},
      {"-99999999.99", "-99999999.99"},
  }));
  std::string bytes, why, back;
  REQUIRE(DecimalToBytes(given, 10, 2, 0, &bytes, &why));
  REQUIRE(DecimalBytesToText(bytes, 2, &back));
  CHECK(back == text);
}

TEST_CASE("a decimal of scale 0 and one of 17 bytes read back as the decimal rules say",
          "[avro-decode]") {
  std::string text;
  REQUIRE(DecimalBytesToText(std::string("\x01\x00", 2), 0, &text));
  CHECK(text == "256");
  REQUIRE(DecimalBytesToText("", 3, &text));
  CHECK(text == "0.000");
  CHECK_FALSE(DecimalBytesToText(std::string(17, '\x01'), 2, &text));
}

TEST_CASE("bytes that are not UTF-8 read back as one code point per byte", "[avro-decode]") {
  const AvroSchemaPtr schema = MustParse(R"({"type": "bytes"})");
  const std::string binary = std::string("\x06", 1) + "a\xff\x80";  // length 3, then the bytes
  CHECK(MustDecode(*schema, binary) == json("a\u00ff\u0080"));
}

TEST_CASE("bytes that are not one value of the schema are not_avro", "[avro-decode]") {
  const AvroSchemaPtr schema = MustParse(kOrderPaid);
  const std::string binary = MustEncode(*schema, json::parse(kPayload));
  const std::string bad = GENERATE_COPY(binary.substr(0, binary.size() / 2), binary + "x",
                                        std::string("\x0f\xff\xff"), std::string());
  std::string text;
  ConversionError e;
  CHECK_FALSE(schema->Decode(bad, &text, &e));
  CHECK(e.reason == ConversionFailure::kNotAvro);
  CHECK(e.message.find("is not one value of the schema") != std::string::npos);
}

TEST_CASE("an enum and a union of several branches read back as the value itself",
          "[avro-decode]") {
  const AvroSchemaPtr schema = MustParse(R"({"type": "record", "name": "R", "fields": [
    {"name": "v", "type": ["null", "long", "string", {"type": "map", "values": "int"}]},
    {"name": "w", "type": ["null", "long", "string", {"type": "map", "values": "int"}]},
    {"name": "x", "type": ["null", "long", "string", {"type": "map", "values": "int"}]}]})");
  const json payload = {{"v", 7}, {"w", "seven"}, {"x", {{"a", 1}}}};
  CHECK(MustDecode(*schema, MustEncode(*schema, payload)) == payload);
}
