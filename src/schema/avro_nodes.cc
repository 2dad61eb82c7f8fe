#include "schema/avro_nodes.h"

#include <array>
#include <utility>

namespace outbox {

namespace {

using nlohmann::json;

constexpr std::array<std::pair<const char*, AvroKind>, 8> kPrimitives = {{
    {"null", AvroKind::kNull},
    {"boolean", AvroKind::kBoolean},
    {"int", AvroKind::kInt},
    {"long", AvroKind::kLong},
    {"float", AvroKind::kFloat},
    {"double", AvroKind::kDouble},
    {"bytes", AvroKind::kBytes},
    {"string", AvroKind::kString},
}};

AvroNode NodeOf(AvroKind kind, std::string name = "", int items = -1) {
  AvroNode n;
  n.kind = kind;
  n.name = std::move(name);
  n.items = items;
  return n;
}

std::optional<AvroKind> Primitive(const std::string& name) {
  for (const auto& [n, kind] : kPrimitives)
    if (name == n) return kind;
  return std::nullopt;
}

std::string StringAt(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t IntAt(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// A logical type is kept only on the type the specification allows it on.
AvroLogical LogicalOf(const json& j, AvroKind kind) {
  const std::string l = StringAt(j, "logicalType");
  if (l == "date" && kind == AvroKind::kInt) return AvroLogical::kDate;
  if (l == "timestamp-millis" && kind == AvroKind::kLong) return AvroLogical::kTimestampMillis;
  if (l == "timestamp-micros" && kind == AvroKind::kLong) return AvroLogical::kTimestampMicros;
  if (l == "uuid" && kind == AvroKind::kString) return AvroLogical::kUuid;
  if (l == "decimal" && (kind == AvroKind::kBytes || kind == AvroKind::kFixed))
    return AvroLogical::kDecimal;
  return AvroLogical::kNone;
}

// Reads one schema into nodes, resolving named types through namespaces.
class NodeBuilder {
 public:
  explicit NodeBuilder(AvroNodes* out) : out_(out) {}
  int Type(const json& j, const std::string& ns);
  const std::string& error() const { return error_; }

 private:
  int Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return -1;
  }
  int Add(AvroNode node) {
    out_->nodes.push_back(std::move(node));
    return static_cast<int>(out_->nodes.size()) - 1;
  }
  int Named(const std::string& name, const std::string& ns);
  int Object(const json& j, const std::string& ns);
  int Union(const json& j, const std::string& ns);
  // Registers a named type (record, enum, fixed) before its body is read, so
  // that a record may refer to itself. Sets *ns to the type's namespace.
  int Declare(const json& j, AvroKind kind, std::string* ns);
  int Record(const json& j, std::string ns);
  int Enum(const json& j, std::string ns);
  int Fixed(const json& j, std::string ns);
  int Container(const json& j, AvroKind kind, const std::string& ns);

  AvroNodes* out_;
  std::map<std::string, int> names_;
  std::string error_;
};

int NodeBuilder::Type(const json& j, const std::string& ns) {
  if (j.is_string()) return Named(j.get<std::string>(), ns);
  if (j.is_array()) return Union(j, ns);
  if (j.is_object()) return Object(j, ns);
  return Fail("a type must be a name, an object or an array (a union), got " + j.dump());
}

int NodeBuilder::Named(const std::string& name, const std::string& ns) {
  if (auto kind = Primitive(name)) return Add(NodeOf(*kind));
  const bool dotted = name.find('.') != std::string::npos;
  if (!dotted && !ns.empty())
    if (auto it = names_.find(ns + "." + name); it != names_.end()) return it->second;
  if (auto it = names_.find(name); it != names_.end()) return it->second;
  return Fail("unknown type \"" + name + "\"");
}

int NodeBuilder::Union(const json& j, const std::string& ns) {
  AvroNode node = NodeOf(AvroKind::kUnion);
  for (const json& branch : j) {
    const int b = Type(branch, ns);
    if (b < 0) return -1;
    node.branches.push_back(b);
  }
  if (node.branches.empty()) return Fail("a union needs at least one branch");
  return Add(std::move(node));
}

int NodeBuilder::Object(const json& j, const std::string& ns) {
  auto type = j.find("type");
  if (type == j.end()) return Fail("a type object needs \"type\": " + j.dump());
  if (!type->is_string()) return Type(*type, ns);
  const std::string t = type->get<std::string>();
  if (t == "record" || t == "error") return Record(j, ns);
  if (t == "enum") return Enum(j, ns);
  if (t == "fixed") return Fixed(j, ns);
  if (t == "array") return Container(j, AvroKind::kArray, ns);
  if (t == "map") return Container(j, AvroKind::kMap, ns);
  const int node = Named(t, ns);
  if (node < 0 || !Primitive(t)) return node;
  AvroNode& n = out_->nodes[static_cast<size_t>(node)];
  n.logical = LogicalOf(j, n.kind);
  n.precision = static_cast<int>(IntAt(j, "precision"));
  n.scale = static_cast<int>(IntAt(j, "scale"));
  return node;
}

int NodeBuilder::Declare(const json& j, AvroKind kind, std::string* ns) {
  std::string name = StringAt(j, "name");
  if (name.empty()) return Fail("a named type needs \"name\": " + j.dump().substr(0, 80));
  const std::string own_ns = StringAt(j, "namespace");
  const size_t dot = name.rfind('.');
  if (dot != std::string::npos) {
    *ns = name.substr(0, dot);
  } else {
    if (j.contains("namespace")) *ns = own_ns;
    if (!ns->empty()) name = *ns + "." + name;
  }
  if (names_.count(name)) return Fail("type \"" + name + "\" is defined twice");
  const int node = Add(NodeOf(kind, name));
  names_[name] = node;
  return node;
}

int NodeBuilder::Record(const json& j, std::string ns) {
  const int node = Declare(j, AvroKind::kRecord, &ns);
  if (node < 0) return -1;
  auto fields = j.find("fields");
  if (fields == j.end() || !fields->is_array())
    return Fail("record \"" + out_->at(node).name + "\" needs \"fields\"");
  for (const json& f : *fields) {
    AvroField field;
    field.name = f.is_object() ? StringAt(f, "name") : std::string();
    if (field.name.empty() || !f.contains("type"))
      return Fail("record \"" + out_->at(node).name + "\": a field needs a name and a type");
    field.type = Type(f["type"], ns);
    if (field.type < 0) return -1;
    if (auto d = f.find("default"); d != f.end()) field.fallback = *d;
    out_->nodes[static_cast<size_t>(node)].fields.push_back(std::move(field));
  }
  return node;
}

int NodeBuilder::Enum(const json& j, std::string ns) {
  const int node = Declare(j, AvroKind::kEnum, &ns);
  if (node < 0) return -1;
  auto symbols = j.find("symbols");
  if (symbols == j.end() || !symbols->is_array() || symbols->empty())
    return Fail("enum \"" + out_->at(node).name + "\" needs \"symbols\"");
  for (const json& s : *symbols)
    out_->nodes[static_cast<size_t>(node)].symbols.push_back(s.is_string() ? s.get<std::string>()
                                                                           : s.dump());
  return node;
}

int NodeBuilder::Fixed(const json& j, std::string ns) {
  const int node = Declare(j, AvroKind::kFixed, &ns);
  if (node < 0) return -1;
  AvroNode& n = out_->nodes[static_cast<size_t>(node)];
  n.size = IntAt(j, "size");
  n.logical = LogicalOf(j, AvroKind::kFixed);
  n.precision = static_cast<int>(IntAt(j, "precision"));
  n.scale = static_cast<int>(IntAt(j, "scale"));
  if (n.size <= 0) return Fail("fixed \"" + n.name + "\" needs a positive \"size\"");
  return node;
}

int NodeBuilder::Container(const json& j, AvroKind kind, const std::string& ns) {
  const char* key = kind == AvroKind::kArray ? "items" : "values";
  if (!j.contains(key))
    return Fail(std::string("an ") + (kind == AvroKind::kArray ? "array" : "map") + " needs \"" +
                key + "\"");
  const int inner = Type(j[key], ns);
  if (inner < 0) return -1;
  return Add(NodeOf(kind, "", inner));
}

}  // namespace

Status BuildAvroNodes(const json& schema, AvroNodes* out) {
  *out = AvroNodes();
  NodeBuilder builder(out);
  out->root = builder.Type(schema, "");
  if (out->root < 0) return Status::Invalid("Avro schema: " + builder.error());
  return Status::Ok();
}

std::string AvroTypeName(const AvroNodes& nodes, int node) {
  const AvroNode& n = nodes.at(node);
  if (!n.name.empty()) return n.name;
  switch (n.kind) {
    case AvroKind::kArray:
      return "array";
    case AvroKind::kMap:
      return "map";
    case AvroKind::kUnion:
      return "union";
    default:
      break;
  }
  for (const auto& [name, kind] : kPrimitives)
    if (kind == n.kind) return name;
  return "?";
}

}  // namespace outbox
