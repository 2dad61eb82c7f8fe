// AvroSchema::Decode, the consumer's half: what Encode wrote from a payload
// reads back as the payload's JSON, type by type (docs/FORMATS.md "Reading
// it back with the inbox library").
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "schema/avro_logical.h"
#include "schema/avro_schema.h"

using namespace outbox;
using nlohmann::json;

namespace {

// The types docs/FORMATS.md lists, nested.
constexpr const char* kOrder = R"({
  "type": "record", "name": "Order", "namespace": "com.acme",
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
    {"name": "payment_id", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "total", "type": "double"},
    {"name": "ratio", "type": "float"},
    {"name": "gift", "type": "boolean"},
    {"name": "raw", "type": "bytes"}
  ]})";

constexpr const char* kPayload = R"({
  "order_id": 9007199254740993,
  "customer": {"name": "Ada", "address": {"street": "1 Loop Rd", "zip": "12345"}},
  "note": "leave at the door",
  "items": [{"sku": "A-1", "qty": 2, "price": "19.99"}, {"sku": "B-2", "qty": 1, "price": "-0.05"}],
  "attributes": {"color": "red", "size": "L"},
  "status": "PAID",
  "paid_at": 1714566600123,
  "payment_id": "123e4567-e89b-12d3-a456-426614174000",
  "total": 44.98,
  "ratio": 0.1,
  "gift": false,
  "raw": "plain text"
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

json MustDecode(const AvroSchema& schema, const std::string& binary) {
  std::string text;
  ConversionError e;
  const bool ok = schema.Decode(binary, &text, &e);
  INFO(e.message);
  REQUIRE(ok);
  return json::parse(text);
}

}  // namespace

TEST_CASE("a payload encoded and decoded again is the payload field by field", "[avro-decode]") {
  const AvroSchemaPtr schema = MustParse(kOrder);
  const json payload = json::parse(kPayload);
  const json decoded = MustDecode(*schema, MustEncode(*schema, payload));
  CHECK(decoded == payload);
  for (const auto& [field, value] : payload.items()) {
    INFO(field);
    CHECK(decoded.at(field) == value);
  }
}

TEST_CASE("fields the payload left out come back with their defaults and an absent union as null",
          "[avro-decode]") {
  const AvroSchemaPtr schema = MustParse(kOrder);
  json payload = json::parse(kPayload);
  payload.erase("note");
  payload["customer"]["address"] = nullptr;
  payload["unknown_to_the_schema"] = 1;
  const json decoded = MustDecode(*schema, MustEncode(*schema, payload));
  CHECK(decoded["note"].is_null());
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
  const AvroSchemaPtr schema = MustParse(kOrder);
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
