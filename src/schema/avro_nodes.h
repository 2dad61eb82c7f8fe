#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace outbox {

// An Avro schema as a tree of nodes, read from its JSON text: what the
// payload's conversion needs and avro-c 1.11 does not keep (field defaults,
// logical types). avro-c parses the same text and encodes (avro_schema.h);
// both number a record's fields and a union's branches in the text's order.
// Private to src/schema/. Immutable after BuildAvroNodes; thread-safe.

enum class AvroKind {
  kNull,
  kBoolean,
  kInt,
  kLong,
  kFloat,
  kDouble,
  kBytes,
  kString,
  kRecord,
  kEnum,
  kArray,
  kMap,
  kUnion,
  kFixed,
};

// One step of a walk over a value beside its schema's nodes: the method of
// `walk` for node `n`'s kind, given the walk's own arguments. The two walks,
// JsonToAvro (a payload into Avro) and AvroToJson (back), each give Record,
// Union, Array, Map, Enum, Integer (int, long), Floating (float, double),
// Binary (bytes, fixed) and Scalar (null, boolean, string).
template <typename Walk, typename Node, typename... Args>
bool WalkAvroNode(const Walk& walk, const Node& n, Args&&... args) {
  switch (n.kind) {
    case AvroKind::kRecord:
      return walk.Record(n, std::forward<Args>(args)...);
    case AvroKind::kUnion:
      return walk.Union(n, std::forward<Args>(args)...);
    case AvroKind::kArray:
      return walk.Array(n, std::forward<Args>(args)...);
    case AvroKind::kMap:
      return walk.Map(n, std::forward<Args>(args)...);
    case AvroKind::kEnum:
      return walk.Enum(n, std::forward<Args>(args)...);
    case AvroKind::kInt:
    case AvroKind::kLong:
      return walk.Integer(n, std::forward<Args>(args)...);
    case AvroKind::kFloat:
    case AvroKind::kDouble:
      return walk.Floating(n, std::forward<Args>(args)...);
    case AvroKind::kBytes:
    case AvroKind::kFixed:
      return walk.Binary(n, std::forward<Args>(args)...);
    default:
      return walk.Scalar(n, std::forward<Args>(args)...);
  }
}

// The logical types the conversion knows; any other (or one on a type the
// specification does not allow it on) is ignored, as the specification says.
enum class AvroLogical { kNone, kDate, kTimestampMillis, kTimestampMicros, kDecimal, kUuid };

struct AvroField {
  std::string name;
  int type = -1;                           // node index
  std::optional<nlohmann::json> fallback;  // the field's "default"
};

struct AvroNode {
  AvroKind kind = AvroKind::kNull;
  AvroLogical logical = AvroLogical::kNone;
  std::string name;                  // full name of a record, enum or fixed
  int precision = 0, scale = 0;      // decimal
  int64_t size = 0;                  // fixed
  std::vector<AvroField> fields;     // record
  std::vector<std::string> symbols;  // enum
  int items = -1;                    // array items, map values
  std::vector<int> branches;         // union
};

struct AvroNodes {
  std::vector<AvroNode> nodes;
  int root = -1;
  const AvroNode& at(int i) const { return nodes[static_cast<size_t>(i)]; }
};

// Builds the tree of `schema` (already parsed as JSON). An error names what
// is wrong: an unknown type name, a record without fields, ...
Status BuildAvroNodes(const nlohmann::json& schema, AvroNodes* out);

// How a type is named in messages and in a union's wrapped form ({"string":
// "x"}, {"com.acme.Address": {...}}): the full name of a named type, else
// the kind ("int", "array", ...).
std::string AvroTypeName(const AvroNodes& nodes, int node);

}  // namespace outbox
