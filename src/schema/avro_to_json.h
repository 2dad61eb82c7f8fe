#pragma once

#include <avro.h>

#include <nlohmann/json.hpp>
#include <string>

#include "schema/avro_nodes.h"
#include "schema/conversion.h"

namespace outbox {

// Reads avro-c generic values back into the JSON a payload gives them
// (json_to_avro.h, the other way; docs/FORMATS.md "Reading it back with the
// inbox library"): records as objects with every field of the schema,
// unions as the branch's value itself (no {"type": value} wrapper), enums as
// their symbol, timestamps and dates as numbers in their unit, decimals as
// their text with `scale` decimal places ("19.90"), uuids and strings as
// strings, bytes and fixed as a string of their bytes (each byte as the
// code point of its value when they are not UTF-8, as Avro's JSON encoding
// writes them). Private to src/schema/. Holds only a reference to the
// nodes; thread-safe for distinct values.
class AvroToJson {
 public:
  explicit AvroToJson(const AvroNodes& nodes) : nodes_(nodes) {}

  // Sets *out from `v`, a value of node `node`; `path` is v's place in the
  // value. False with *error (reason kNotAvro) when avro-c refuses a read
  // or a decimal does not fit 128 bits.
  bool Read(int node, avro_value_t* v, nlohmann::json* out, const std::string& path,
            ConversionError* error) const;

 private:
  template <typename Walk, typename Node, typename... Args>
  friend bool WalkAvroNode(const Walk& walk, const Node& n, Args&&... args);

  bool Record(const AvroNode& n, avro_value_t* v, nlohmann::json* out, const std::string& path,
              ConversionError* error) const;
  bool Union(const AvroNode& n, avro_value_t* v, nlohmann::json* out, const std::string& path,
             ConversionError* error) const;
  bool Array(const AvroNode& n, avro_value_t* v, nlohmann::json* out, const std::string& path,
             ConversionError* error) const;
  bool Map(const AvroNode& n, avro_value_t* v, nlohmann::json* out, const std::string& path,
           ConversionError* error) const;
  // int, long, float, double: one reader for the numbers.
  bool Number(const AvroNode& n, avro_value_t* v, nlohmann::json* out, const std::string& path,
              ConversionError* error) const;
  bool Integer(const AvroNode& n, avro_value_t* v, nlohmann::json* out, const std::string& path,
               ConversionError* error) const {
    return Number(n, v, out, path, error);
  }
  bool Floating(const AvroNode& n, avro_value_t* v, nlohmann::json* out, const std::string& path,
                ConversionError* error) const {
    return Number(n, v, out, path, error);
  }
  // null, boolean, enum, string: one reader for the values avro-c gives as
  // one scalar.
  bool Scalar(const AvroNode& n, avro_value_t* v, nlohmann::json* out, const std::string& path,
              ConversionError* error) const;
  bool Enum(const AvroNode& n, avro_value_t* v, nlohmann::json* out, const std::string& path,
            ConversionError* error) const {
    return Scalar(n, v, out, path, error);
  }
  bool Binary(const AvroNode& n, avro_value_t* v, nlohmann::json* out, const std::string& path,
              ConversionError* error) const;

  const AvroNodes& nodes_;
};

}  // namespace outbox
