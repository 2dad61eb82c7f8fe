#pragma once

#include <avro.h>

#include <nlohmann/json.hpp>
#include <string>

#include "schema/avro_nodes.h"
#include "schema/conversion.h"

namespace outbox {

// Fills avro-c generic values from JSON, walking the schema's nodes beside
// them (avro_schema.h says which JSON gives which Avro value). Private to
// src/schema/. Holds only a reference to the nodes; thread-safe for distinct
// values.
class JsonToAvro {
 public:
  explicit JsonToAvro(const AvroNodes& nodes) : nodes_(nodes) {}

  // Sets *out, a value of node `node`, from `v`; `path` is v's place in the
  // payload. False with *error (the first misfit found) otherwise.
  bool Fill(int node, const nlohmann::json& v, avro_value_t* out, const std::string& path,
            ConversionError* error) const;

 private:
  bool Record(const AvroNode& n, const nlohmann::json& v, avro_value_t* out,
              const std::string& path, ConversionError* error) const;
  bool Union(const AvroNode& n, const nlohmann::json& v, avro_value_t* out, const std::string& path,
             ConversionError* error) const;
  // The union's branches tried in order for a value that is not null.
  bool AnyBranch(const AvroNode& n, const nlohmann::json& v, avro_value_t* out,
                 const std::string& path, ConversionError* error) const;
  bool Array(const AvroNode& n, const nlohmann::json& v, avro_value_t* out, const std::string& path,
             ConversionError* error) const;
  bool Map(const AvroNode& n, const nlohmann::json& v, avro_value_t* out, const std::string& path,
           ConversionError* error) const;
  bool Enum(const AvroNode& n, const nlohmann::json& v, avro_value_t* out, const std::string& path,
            ConversionError* error) const;
  bool Scalar(const AvroNode& n, const nlohmann::json& v, avro_value_t* out,
              const std::string& path, ConversionError* error) const;
  bool Integer(const AvroNode& n, const nlohmann::json& v, avro_value_t* out,
               const std::string& path, ConversionError* error) const;
  bool Binary(const AvroNode& n, const nlohmann::json& v, avro_value_t* out,
              const std::string& path, ConversionError* error) const;

  const AvroNodes& nodes_;
};

}  // namespace outbox
