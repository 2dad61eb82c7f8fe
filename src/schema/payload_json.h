#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace outbox {

class PayloadJson;

// One value of a PayloadJson; a document pointer and an index, cheap to
// copy. Valid while its document lives and is not parsed again. Private to
// src/schema/.
class PayloadValue {
 public:
  enum class Type { kNull, kBoolean, kInteger, kUnsigned, kFloat, kString, kArray, kObject };

  PayloadValue() = default;
  Type type() const;
  bool is_null() const { return type() == Type::kNull; }
  bool is_boolean() const { return type() == Type::kBoolean; }
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }
  // As nlohmann::json has them: a number that is not negative and has no
  // fraction or exponent is unsigned; integer is the other whole numbers.
  bool is_number() const;
  bool is_number_unsigned() const { return type() == Type::kUnsigned; }
  bool is_number_integer() const { return type() == Type::kInteger; }
  bool is_number_float() const { return type() == Type::kFloat; }

  // REQUIRES: the type they read; numbers converted as nlohmann's get<T>().
  bool Bool() const;
  int64_t Integer() const;
  uint64_t Unsigned() const;
  double Double() const;
  float Float() const;
  // A string's bytes, followed by a '\0' (data() is a C string).
  std::string_view String() const;

  // Arrays: the items; objects: the members, in the order of their keys
  // (bytewise), a key given twice once with its last value: nlohmann::json's
  // object (a std::map) after its parser.
  size_t size() const;
  PayloadValue At(size_t i) const;
  std::string_view KeyAt(size_t i) const;  // objects; followed by a '\0'
  // The member `key` of an object; false when it has none.
  bool Find(std::string_view key, PayloadValue* out) const;

  // The value as nlohmann::json, and its text as nlohmann::json::dump()
  // writes it (for messages).
  nlohmann::json ToJson() const;
  std::string Dump() const { return ToJson().dump(); }

 private:
  friend class PayloadJson;
  PayloadValue(const PayloadJson* doc, size_t node) : doc_(doc), node_(node) {}
  // nlohmann's get<T>() of a number: its own type's value, cast.
  template <typename T>
  T Number() const;

  const PayloadJson* doc_ = nullptr;
  size_t node_ = 0;
};

// A JSON payload read for its conversion to Avro (json_to_avro.h). nlohmann's
// parser reads it, through its SAX interface: the texts it accepts, the
// numbers it reads and the values it keeps are those of nlohmann::json::parse;
// they are kept in a few flat vectors rather than a tree of allocated nodes,
// which a payload of a few hundred bytes spent most of its conversion
// building and freeing. Not thread-safe; one document per conversion.
class PayloadJson {
 public:
  // False when `text` is not exactly one JSON value.
  bool Parse(std::string_view text);
  // REQUIRES: Parse returned true.
  PayloadValue root() const { return PayloadValue(this, root_); }

 private:
  friend class PayloadValue;
  friend class PayloadSax;
  struct Node {
    PayloadValue::Type type = PayloadValue::Type::kNull;
    bool boolean = false;
    int64_t integer = 0;
    uint64_t unsigned_integer = 0;
    double number = 0;
    size_t offset = 0;  // kString: in text_; kArray, kObject: the first in items_
    size_t size = 0;    // kString: bytes; kArray, kObject: items
  };
  struct Item {
    size_t key_offset = 0, key_size = 0;  // objects: the key in text_
    size_t node = 0;
  };
  std::string_view Text(size_t offset, size_t size) const {
    return std::string_view(text_).substr(offset, size);
  }

  std::vector<Node> nodes_;
  std::vector<Item> items_;
  std::string text_;  // strings and keys, each followed by a '\0'
  size_t root_ = 0;
};

}  // namespace outbox
