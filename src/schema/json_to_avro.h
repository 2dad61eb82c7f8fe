#pragma once

#include <avro.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "schema/avro_nodes.h"
#include "schema/conversion.h"
#include "schema/payload_json.h"

namespace outbox {

// Where a value lies in the payload, as a chain of parts on the stack of the
// conversion (each part points to its parent's, which outlives it). Only an
// error renders it ("customer.address.zip", "items[2].sku",
// "attributes[\"color\"]", "" for the payload itself): a payload that
// converts builds no string for its fields.
class JsonPath {
 public:
  JsonPath() = default;  // the payload itself
  // `name` (a record's field, a map's key) must outlive the part.
  static JsonPath Field(const JsonPath& parent, std::string_view name) {
    return JsonPath(&parent, Kind::kField, name, 0);
  }
  static JsonPath Index(const JsonPath& parent, size_t index) {
    return JsonPath(&parent, Kind::kIndex, {}, index);
  }
  static JsonPath Key(const JsonPath& parent, std::string_view key) {
    return JsonPath(&parent, Kind::kKey, key, 0);
  }
  std::string ToString() const;

 private:
  enum class Kind { kRoot, kField, kIndex, kKey };
  JsonPath(const JsonPath* parent, Kind kind, std::string_view name, size_t index)
      : parent_(parent), kind_(kind), name_(name), index_(index) {}

  const JsonPath* parent_ = nullptr;
  Kind kind_ = Kind::kRoot;
  std::string_view name_;
  size_t index_ = 0;
};

// Fills avro-c generic values from a JSON payload (payload_json.h), walking the schema's nodes
// beside them (avro_schema.h says which JSON gives which Avro value). Private to src/schema/. Holds
// only a reference to the nodes; thread-safe for distinct values.
class JsonToAvro {
 public:
  explicit JsonToAvro(const AvroNodes& nodes) : nodes_(nodes) {}

  // Sets *out, a value of node `node`, from `v`; `path` is v's place in the
  // payload (JsonPath() for the payload itself). False with *error (the first misfit found)
  // otherwise.
  bool Fill(int node, PayloadValue v, avro_value_t* out, const JsonPath& path,
            ConversionError* error) const;

 private:
  template <typename Walk, typename Node, typename... Args>
  friend bool WalkAvroNode(const Walk& walk, const Node& n, Args&&... args);

  bool Record(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
              ConversionError* error) const;
  bool Union(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
             ConversionError* error) const;
  // The union's branches tried in order for a value that is not null.
  bool AnyBranch(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
                 ConversionError* error) const;
  bool Array(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
             ConversionError* error) const;
  bool Map(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
           ConversionError* error) const;
  bool Enum(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
            ConversionError* error) const;
  // null, boolean, float, double, string.
  bool Scalar(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
              ConversionError* error) const;
  bool Floating(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
                ConversionError* error) const {
    return Scalar(n, v, out, path, error);
  }
  bool Integer(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
               ConversionError* error) const;
  bool Binary(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
              ConversionError* error) const;

  const AvroNodes& nodes_;
};

}  // namespace outbox
