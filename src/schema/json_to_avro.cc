#include "schema/json_to_avro.h"

#include <cmath>
#include <limits>

#include "schema/avro_logical.h"

namespace outbox {

namespace {

using nlohmann::json;

bool Fail(ConversionError* e, ConversionFailure reason, const JsonPath& path,
          const std::string& what) {
  e->reason = reason;
  e->field = path.ToString();
  e->message = (e->field.empty() ? std::string("the payload") : "field " + e->field) + ": " + what;
  return false;
}

std::string Kind(PayloadValue v) {
  switch (v.type()) {
    case PayloadValue::Type::kNull:
      return "null";
    case PayloadValue::Type::kBoolean:
      return "a boolean";
    case PayloadValue::Type::kString:
      return "a string";
    case PayloadValue::Type::kArray:
      return "an array";
    case PayloadValue::Type::kObject:
      return "an object";
    default:
      return "a number";
  }
}

bool WrongType(ConversionError* e, const JsonPath& path, const std::string& expected,
               PayloadValue v) {
  return Fail(e, ConversionFailure::kWrongType, path, "expected " + expected + ", got " + Kind(v));
}

// avro-c refused a value it was built for: no JSON can cause this but a
// limit of the library; reported as the field's value.
bool AvroFailed(ConversionError* e, const JsonPath& path) {
  return Fail(e, ConversionFailure::kBadValue, path, std::string("avro-c: ") + avro_strerror());
}

enum class IntRead { kOk, kWrongType, kOutOfRange };

// A JSON number that is a whole number (1, 1.0) as an int64.
IntRead AsInt64(PayloadValue v, int64_t* out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.Unsigned();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return IntRead::kOutOfRange;
    *out = static_cast<int64_t>(u);
    return IntRead::kOk;
  }
  if (v.is_number_integer()) {
    *out = v.Integer();
    return IntRead::kOk;
  }
  if (!v.is_number_float()) return IntRead::kWrongType;
  const double d = v.Double();
  if (std::trunc(d) != d) return IntRead::kWrongType;
  if (!(d >= -9.2233720368547758e18 && d < 9.2233720368547758e18)) return IntRead::kOutOfRange;
  *out = static_cast<int64_t>(d);
  return IntRead::kOk;
}

// A timestamp or date given as text, in the unit of its logical type.
bool TimeText(AvroLogical logical, std::string_view text, int64_t* out) {
  if (logical == AvroLogical::kDate) {
    int32_t days = 0;
    if (!ParseDateDays(text, &days)) return false;
    *out = days;
    return true;
  }
  int64_t micros = 0;
  if (!ParseTimestampMicros(text, &micros)) return false;
  // Floor division: a time before 1970 with a fraction rounds down.
  *out = logical == AvroLogical::kTimestampMillis
             ? (micros >= 0 ? micros / 1000 : -((-micros + 999) / 1000))
             : micros;
  return true;
}

const char* TimeTextForm(AvroLogical logical) {
  return logical == AvroLogical::kDate ? "a date (YYYY-MM-DD)" : "an RFC 3339 timestamp";
}

}  // namespace

std::string JsonPath::ToString() const {
  if (kind_ == Kind::kRoot) return "";
  std::string s = parent_->ToString();
  switch (kind_) {
    case Kind::kField:
      return s.empty() ? std::string(name_) : s + "." + std::string(name_);
    case Kind::kIndex:
      return s + "[" + std::to_string(index_) + "]";
    default:
      return s + "[" + json(std::string(name_)).dump() + "]";
  }
}

bool JsonToAvro::Fill(int node, PayloadValue v, avro_value_t* out, const JsonPath& path,
                      ConversionError* error) const {
  const AvroNode& n = nodes_.at(node);
  return WalkAvroNode(*this, n, v, out, path, error);
}

bool JsonToAvro::Record(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
                        ConversionError* error) const {
  if (!v.is_object()) return WrongType(error, path, "an object (record " + n.name + ")", v);
  for (size_t i = 0; i < n.fields.size(); ++i) {
    const AvroField& f = n.fields[i];
    const JsonPath where = JsonPath::Field(path, f.name);
    avro_value_t field;
    if (avro_value_get_by_index(out, i, &field, nullptr) != 0) return AvroFailed(error, where);
    PayloadValue value;
    PayloadJson fallback;  // a field the payload lacks: its default, read as a payload's
    if (!v.Find(f.name, &value)) {
      if (!f.fallback || !fallback.Parse(f.fallback->dump()))
        return Fail(error, ConversionFailure::kMissingField, where,
                    "missing, and the schema gives it no default");
      value = fallback.root();
    }
    if (!Fill(f.type, value, &field, where, error)) return false;
  }
  return true;
}

bool JsonToAvro::Union(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
                       ConversionError* error) const {
  avro_value_t branch;
  if (v.is_null()) {
    for (size_t i = 0; i < n.branches.size(); ++i) {
      if (nodes_.at(n.branches[i]).kind != AvroKind::kNull) continue;
      if (avro_value_set_branch(out, static_cast<int>(i), &branch) != 0 ||
          avro_value_set_null(&branch) != 0)
        return AvroFailed(error, path);
      return true;
    }
    return WrongType(error, path, "a value (the union has no null)", v);
  }
  if (AnyBranch(n, v, out, path, error)) return true;
  // Avro's JSON encoding wraps a union's value in its type's name.
  if (v.is_object() && v.size() == 1) {
    for (size_t i = 0; i < n.branches.size(); ++i) {
      if (AvroTypeName(nodes_, n.branches[i]) != v.KeyAt(0)) continue;
      if (avro_value_set_branch(out, static_cast<int>(i), &branch) != 0)
        return AvroFailed(error, path);
      return Fill(n.branches[i], v.At(0), &branch, path, error);
    }
  }
  return false;
}

bool JsonToAvro::AnyBranch(const AvroNode& n, PayloadValue v, avro_value_t* out,
                           const JsonPath& path, ConversionError* error) const {
  ConversionError only;
  int tried = 0;
  for (size_t i = 0; i < n.branches.size(); ++i) {
    const int b = n.branches[i];
    if (nodes_.at(b).kind == AvroKind::kNull) continue;
    avro_value_t branch;
    if (avro_value_set_branch(out, static_cast<int>(i), &branch) != 0)
      return AvroFailed(error, path);
    ConversionError attempt;
    if (Fill(b, v, &branch, path, &attempt)) return true;
    if (tried++ == 0) only = attempt;
  }
  // With one branch besides null (the usual optional field), its own error
  // says most; with several, which ones were tried.
  if (tried == 1) {
    *error = only;
    return false;
  }
  std::string names;
  for (const int b : n.branches) names += (names.empty() ? "" : ", ") + AvroTypeName(nodes_, b);
  return Fail(error, ConversionFailure::kWrongType, path,
              Kind(v) + " fits no branch of [" + names + "]");
}

bool JsonToAvro::Array(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
                       ConversionError* error) const {
  if (!v.is_array()) return WrongType(error, path, "an array", v);
  for (size_t i = 0; i < v.size(); ++i) {
    const JsonPath where = JsonPath::Index(path, i);
    avro_value_t item;
    if (avro_value_append(out, &item, nullptr) != 0) return AvroFailed(error, where);
    if (!Fill(n.items, v.At(i), &item, where, error)) return false;
  }
  return true;
}

bool JsonToAvro::Map(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
                     ConversionError* error) const {
  if (!v.is_object()) return WrongType(error, path, "an object (a map)", v);
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string_view key = v.KeyAt(i);  // followed by a '\0'
    const JsonPath where = JsonPath::Key(path, key);
    avro_value_t entry;
    if (avro_value_add(out, key.data(), &entry, nullptr, nullptr) != 0)
      return AvroFailed(error, where);
    if (!Fill(n.items, v.At(i), &entry, where, error)) return false;
  }
  return true;
}

bool JsonToAvro::Enum(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
                      ConversionError* error) const {
  if (!v.is_string()) return WrongType(error, path, "a symbol of enum " + n.name, v);
  const std::string_view s = v.String();
  for (size_t i = 0; i < n.symbols.size(); ++i) {
    if (n.symbols[i] != s) continue;
    if (avro_value_set_enum(out, static_cast<int>(i)) != 0) return AvroFailed(error, path);
    return true;
  }
  std::string symbols;
  for (const std::string& sym : n.symbols) symbols += (symbols.empty() ? "" : ", ") + sym;
  return Fail(
      error, ConversionFailure::kBadValue, path,
      json(std::string(s)).dump() + " is not a symbol of enum " + n.name + " (" + symbols + ")");
}

bool JsonToAvro::Scalar(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
                        ConversionError* error) const {
  int rc = 0;
  if (n.kind == AvroKind::kNull) {
    if (!v.is_null()) return WrongType(error, path, "null", v);
    rc = avro_value_set_null(out);
  } else if (n.kind == AvroKind::kBoolean) {
    if (!v.is_boolean()) return WrongType(error, path, "a boolean", v);
    rc = avro_value_set_boolean(out, v.Bool() ? 1 : 0);
  } else if (n.kind == AvroKind::kFloat || n.kind == AvroKind::kDouble) {
    if (!v.is_number()) return WrongType(error, path, "a number", v);
    rc = n.kind == AvroKind::kFloat ? avro_value_set_float(out, v.Float())
                                    : avro_value_set_double(out, v.Double());
  } else {
    if (!v.is_string()) return WrongType(error, path, "a string", v);
    const std::string_view s = v.String();  // followed by a '\0'
    if (n.logical == AvroLogical::kUuid && !IsUuidText(s))
      return Fail(error, ConversionFailure::kBadValue, path,
                  json(std::string(s)).dump() + " is not a uuid");
    rc = avro_value_set_string_len(out, s.data(), s.size() + 1);
  }
  return rc == 0 || AvroFailed(error, path);
}

bool JsonToAvro::Integer(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
                         ConversionError* error) const {
  const bool timed = n.logical == AvroLogical::kDate ||
                     n.logical == AvroLogical::kTimestampMillis ||
                     n.logical == AvroLogical::kTimestampMicros;
  int64_t x = 0;
  if (timed && v.is_string()) {
    if (!TimeText(n.logical, v.String(), &x))
      return Fail(error, ConversionFailure::kBadValue, path,
                  v.Dump() + " is not " + TimeTextForm(n.logical));
  } else {
    const IntRead r = AsInt64(v, &x);
    if (r == IntRead::kWrongType)
      return WrongType(error, path, timed ? "a number or a string" : "a whole number", v);
    const bool is_int = n.kind == AvroKind::kInt;
    if (r == IntRead::kOutOfRange || (is_int && (x < INT32_MIN || x > INT32_MAX)))
      return Fail(error, ConversionFailure::kBadValue, path,
                  v.Dump() + " is out of range for " + (is_int ? "int" : "long"));
  }
  const int rc = n.kind == AvroKind::kInt ? avro_value_set_int(out, static_cast<int32_t>(x))
                                          : avro_value_set_long(out, x);
  return rc == 0 || AvroFailed(error, path);
}

bool JsonToAvro::Binary(const AvroNode& n, PayloadValue v, avro_value_t* out, const JsonPath& path,
                        ConversionError* error) const {
  const bool decimal = n.logical == AvroLogical::kDecimal;
  std::string bytes;
  if (decimal) {
    if (!v.is_number() && !v.is_string()) return WrongType(error, path, "a decimal number", v);
    const std::string text = v.is_string() ? std::string(v.String()) : v.Dump();
    std::string why;
    const int64_t size = n.kind == AvroKind::kFixed ? n.size : 0;
    if (!DecimalToBytes(text, n.precision, n.scale, size, &bytes, &why))
      return Fail(error, ConversionFailure::kBadValue, path, text + " " + why);
  } else {
    if (!v.is_string()) return WrongType(error, path, "a string (of bytes)", v);
    bytes = std::string(v.String());
  }
  if (n.kind == AvroKind::kBytes)
    return avro_value_set_bytes(out, bytes.data(), bytes.size()) == 0 || AvroFailed(error, path);
  if (static_cast<int64_t>(bytes.size()) != n.size)
    return Fail(error, ConversionFailure::kBadValue, path,
                std::to_string(bytes.size()) + " bytes where fixed " + n.name + " has " +
                    std::to_string(n.size));
  return avro_value_set_fixed(out, bytes.data(), bytes.size()) == 0 || AvroFailed(error, path);
}

}  // namespace outbox
