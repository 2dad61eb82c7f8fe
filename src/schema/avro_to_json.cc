#include "schema/avro_to_json.h"

#include <array>
#include <charconv>

#include "schema/avro_logical.h"

namespace outbox {

namespace {

using nlohmann::json;

// avro-c could not read a value of the schema from the bytes it holds.
bool Unreadable(ConversionError* e, const std::string& path, const std::string& what) {
  e->reason = ConversionFailure::kNotAvro;
  e->field = path;
  e->message = (path.empty() ? std::string("the value") : "field " + path) + ": " + what;
  return false;
}

bool AvroFailed(ConversionError* e, const std::string& path) {
  return Unreadable(e, path, std::string("avro-c: ") + avro_strerror());
}

std::string Child(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

// A float as the shortest decimal text that reads back as the same float
// ("0.1", not 0.10000000149011612), so a payload's 0.1 comes back as 0.1.
json FloatJson(float f) {
  std::array<char, 32> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), f);
  const json j = json::parse(std::string_view(buf.data(), static_cast<size_t>(r.ptr - buf.data())),
                             nullptr, false);
  return j.is_discarded() ? json(static_cast<double>(f)) : j;  // inf and nan: not JSON numbers
}

// Bytes as a JSON string: themselves when they are UTF-8 (the payload's
// string gave them), else each byte as the code point of its value.
json BytesJson(std::string_view bytes) {
  std::string s(bytes);
  json as_is(s);
  // Invalid UTF-8 is where dropping it and replacing it differ.
  if (as_is.dump(-1, ' ', false, json::error_handler_t::ignore) ==
      as_is.dump(-1, ' ', false, json::error_handler_t::replace))
    return as_is;
  std::string latin1;
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x80) {
      latin1 += c;
    } else {
      latin1 += static_cast<char>(0xC0 | (b >> 6));
      latin1 += static_cast<char>(0x80 | (b & 0x3F));
    }
  }
  return json(latin1);
}

}  // namespace

bool AvroToJson::Read(int node, avro_value_t* v, json* out, const std::string& path,
                      ConversionError* error) const {
  const AvroNode& n = nodes_.at(node);
  return WalkAvroNode(*this, n, v, out, path, error);
}

bool AvroToJson::Record(const AvroNode& n, avro_value_t* v, json* out, const std::string& path,
                        ConversionError* error) const {
  *out = json::object();
  for (size_t i = 0; i < n.fields.size(); ++i) {
    const AvroField& f = n.fields[i];
    const std::string where = Child(path, f.name);
    avro_value_t field;
    if (avro_value_get_by_index(v, i, &field, nullptr) != 0) return AvroFailed(error, where);
    if (!Read(f.type, &field, &(*out)[f.name], where, error)) return false;
  }
  return true;
}

bool AvroToJson::Union(const AvroNode& n, avro_value_t* v, json* out, const std::string& path,
                       ConversionError* error) const {
  int discriminant = -1;
  avro_value_t branch;
  if (avro_value_get_discriminant(v, &discriminant) != 0 ||
      avro_value_get_current_branch(v, &branch) != 0)
    return AvroFailed(error, path);
  if (discriminant < 0 || static_cast<size_t>(discriminant) >= n.branches.size())
    return Unreadable(error, path, "union branch " + std::to_string(discriminant) + " is not one");
  return Read(n.branches[static_cast<size_t>(discriminant)], &branch, out, path, error);
}

bool AvroToJson::Array(const AvroNode& n, avro_value_t* v, json* out, const std::string& path,
                       ConversionError* error) const {
  size_t size = 0;
  if (avro_value_get_size(v, &size) != 0) return AvroFailed(error, path);
  *out = json::array();
  for (size_t i = 0; i < size; ++i) {
    const std::string where = path + "[" + std::to_string(i) + "]";
    avro_value_t item;
    if (avro_value_get_by_index(v, i, &item, nullptr) != 0) return AvroFailed(error, where);
    if (!Read(n.items, &item, &out->emplace_back(), where, error)) return false;
  }
  return true;
}

bool AvroToJson::Map(const AvroNode& n, avro_value_t* v, json* out, const std::string& path,
                     ConversionError* error) const {
  size_t size = 0;
  if (avro_value_get_size(v, &size) != 0) return AvroFailed(error, path);
  *out = json::object();
  for (size_t i = 0; i < size; ++i) {
    avro_value_t entry;
    const char* key = nullptr;
    if (avro_value_get_by_index(v, i, &entry, &key) != 0 || key == nullptr)
      return AvroFailed(error, path);
    const std::string where = path + "[" + json(key).dump() + "]";
    if (!Read(n.items, &entry, &(*out)[key], where, error)) return false;
  }
  return true;
}

bool AvroToJson::Number(const AvroNode& n, avro_value_t* v, json* out, const std::string& path,
                        ConversionError* error) const {
  int rc = 0;
  if (n.kind == AvroKind::kInt) {
    int32_t i = 0;
    rc = avro_value_get_int(v, &i);
    *out = i;
  } else if (n.kind == AvroKind::kLong) {
    int64_t l = 0;
    rc = avro_value_get_long(v, &l);
    *out = l;
  } else if (n.kind == AvroKind::kFloat) {
    float f = 0;
    rc = avro_value_get_float(v, &f);
    *out = FloatJson(f);
  } else {
    double d = 0;
    rc = avro_value_get_double(v, &d);
    *out = d;
  }
  return rc == 0 || AvroFailed(error, path);
}

bool AvroToJson::Scalar(const AvroNode& n, avro_value_t* v, json* out, const std::string& path,
                        ConversionError* error) const {
  int rc = 0;
  if (n.kind == AvroKind::kNull) {
    *out = nullptr;
  } else if (n.kind == AvroKind::kBoolean) {
    int b = 0;
    rc = avro_value_get_boolean(v, &b);
    *out = b != 0;
  } else if (n.kind == AvroKind::kEnum) {
    int symbol = -1;
    rc = avro_value_get_enum(v, &symbol);
    if (rc == 0 && (symbol < 0 || static_cast<size_t>(symbol) >= n.symbols.size()))
      return Unreadable(error, path, "enum symbol " + std::to_string(symbol) + " is not one");
    if (rc == 0) *out = n.symbols[static_cast<size_t>(symbol)];
  } else {  // string, uuid
    const char* s = nullptr;
    size_t size = 0;  // with the terminating NUL
    rc = avro_value_get_string(v, &s, &size);
    if (rc == 0) *out = json(std::string(s, size > 0 ? size - 1 : 0));
  }
  return rc == 0 || AvroFailed(error, path);
}

bool AvroToJson::Binary(const AvroNode& n, avro_value_t* v, json* out, const std::string& path,
                        ConversionError* error) const {
  const void* data = nullptr;
  size_t size = 0;
  const int rc = n.kind == AvroKind::kFixed ? avro_value_get_fixed(v, &data, &size)
                                            : avro_value_get_bytes(v, &data, &size);
  if (rc != 0) return AvroFailed(error, path);
  const std::string_view bytes(static_cast<const char*>(data), size);
  if (n.logical != AvroLogical::kDecimal) {
    *out = BytesJson(bytes);
    return true;
  }
  std::string text;
  if (!DecimalBytesToText(bytes, n.scale, &text))
    return Unreadable(error, path, "a decimal of " + std::to_string(size) + " bytes");
  *out = text;
  return true;
}

}  // namespace outbox
