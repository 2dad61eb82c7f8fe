#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "schema/conversion.h"

namespace outbox {

class AvroSchema;
using AvroSchemaPtr = std::shared_ptr<const AvroSchema>;

// One Avro schema, parsed by avro-c (Debian's libavro), which also writes
// the binary encoding; this class maps a JSON payload onto it
// (docs/FORMATS.md, "avro"): records from objects (an absent field takes its
// default), unions from the value itself (null, else the first branch it
// fits) or from Avro's wrapped form ({"string": "x"}), arrays, maps, enums
// from their symbol, bytes and fixed from a string's bytes, and the logical
// types timestamp-millis/-micros (a number or an RFC 3339 string), date (a
// number or "2024-05-01"), decimal on bytes or fixed (a number or its text)
// and uuid (a checked string). Fields of the payload the schema lacks are
// left out. Immutable after Parse; thread-safe (one schema converts on many
// threads at once).
class AvroSchema {
 public:
  // Parses an Avro schema's JSON text. An error (StatusCode::kInvalid) says
  // what avro-c or the reading of defaults and logical types found wrong.
  static Status Parse(std::string_view schema_json, AvroSchemaPtr* out);
  ~AvroSchema();
  AvroSchema(const AvroSchema&) = delete;
  AvroSchema& operator=(const AvroSchema&) = delete;

  // The JSON `payload` as this schema's Avro binary encoding (no wire
  // header) in *out; false with *error (the field named) when it does not fit.
  bool Encode(std::string_view payload, std::string* out, ConversionError* error) const;

  // True when `binary` is exactly one value of this schema in Avro's binary
  // encoding (a payload stored as Avro already); else false with *error
  // (reason kNotAvro).
  bool CheckBinary(std::string_view binary, ConversionError* error) const;

  // The inverse of Encode, for a consumer: `binary`, exactly one value of
  // this schema in Avro's binary encoding (no wire header), as JSON text in
  // *json (avro_to_json.h says which JSON each Avro value becomes); else
  // false with *error (reason kNotAvro).
  bool Decode(std::string_view binary, std::string* json, ConversionError* error) const;

  // The full name of the top-level record ("com.acme.OrderPaid"), the name
  // the record_name subject strategies use; "" when the schema is no record.
  const std::string& record_name() const;

  struct Impl;

 private:
  explicit AvroSchema(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace outbox
