#include "schema/payload_json.h"

namespace outbox {

using Type = PayloadValue::Type;

// nlohmann's SAX events into a PayloadJson: each value a node; a container's
// items gathered in `scratch_` while it is open, then moved to items_ in one
// piece (an object's sorted by key, a key given twice kept with its last
// value, as nlohmann::json's parser leaves its std::map).
class PayloadSax {
 public:
  explicit PayloadSax(PayloadJson* doc) : doc_(doc) { scratch_.reserve(32); }

  bool null() { return Add({}); }
  bool boolean(bool b) {
    PayloadJson::Node n;
    n.type = Type::kBoolean;
    n.boolean = b;
    return Add(n);
  }
  bool number_integer(int64_t i) {
    PayloadJson::Node n;
    n.type = Type::kInteger;
    n.integer = i;
    return Add(n);
  }
  bool number_unsigned(uint64_t u) {
    PayloadJson::Node n;
    n.type = Type::kUnsigned;
    n.unsigned_integer = u;
    return Add(n);
  }
  bool number_float(double d, const std::string& /*text*/) {
    PayloadJson::Node n;
    n.type = Type::kFloat;
    n.number = d;
    return Add(n);
  }
  bool string(std::string& s) {
    PayloadJson::Node n;
    n.type = Type::kString;
    n.offset = Keep(s);
    n.size = s.size();
    return Add(n);
  }
  bool binary(nlohmann::json::binary_t& /*b*/) { return false; }  // not in JSON text
  bool start_object(size_t /*elements*/) { return Open(Type::kObject); }
  bool key(std::string& k) {
    key_offset_ = Keep(k);
    key_size_ = k.size();
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(size_t /*elements*/) { return Open(Type::kArray); }
  bool end_array() { return Close(); }
  bool parse_error(size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*e*/) {
    return false;
  }

 private:
  struct OpenContainer {
    size_t node;
    size_t first;  // its first item in scratch_
  };

  size_t Keep(const std::string& s) {
    const size_t at = doc_->text_.size();
    doc_->text_.append(s);
    doc_->text_.push_back('\0');
    return at;
  }
  bool Add(const PayloadJson::Node& n) {
    const size_t at = doc_->nodes_.size();
    doc_->nodes_.push_back(n);
    if (open_.empty())
      doc_->root_ = at;
    else
      scratch_.push_back({key_offset_, key_size_, at});
    return true;
  }
  bool Open(Type type) {
    PayloadJson::Node n;
    n.type = type;
    Add(n);
    open_.push_back({doc_->nodes_.size() - 1, scratch_.size()});
    return true;
  }
  bool Close();
  // Sorts [first, scratch_.end()) by key, stably: of equal keys the last
  // given is the last of its run.
  void SortByKey(size_t first);

  PayloadJson* doc_;
  std::vector<OpenContainer> open_;
  std::vector<PayloadJson::Item> scratch_;
  size_t key_offset_ = 0, key_size_ = 0;
};

void PayloadSax::SortByKey(size_t first) {
  auto key = [this](const PayloadJson::Item& i) { return doc_->Text(i.key_offset, i.key_size); };
  // Insertion sort: stable, and an object has few members.
  for (size_t i = first + 1; i < scratch_.size(); ++i) {
    const PayloadJson::Item item = scratch_[i];
    size_t j = i;
    for (; j > first && key(item) < key(scratch_[j - 1]); --j) scratch_[j] = scratch_[j - 1];
    scratch_[j] = item;
  }
}

bool PayloadSax::Close() {
  const OpenContainer c = open_.back();
  open_.pop_back();
  PayloadJson::Node& n = doc_->nodes_[c.node];
  n.offset = doc_->items_.size();
  if (n.type == Type::kObject) {
    SortByKey(c.first);
    for (size_t i = c.first; i < scratch_.size(); ++i) {
      const PayloadJson::Item& item = scratch_[i];
      const bool again = i + 1 < scratch_.size() &&
                         doc_->Text(item.key_offset, item.key_size) ==
                             doc_->Text(scratch_[i + 1].key_offset, scratch_[i + 1].key_size);
      if (!again) doc_->items_.push_back(item);  // the last of equal keys
    }
  } else {
    doc_->items_.insert(doc_->items_.end(), scratch_.begin() + static_cast<ptrdiff_t>(c.first),
                        scratch_.end());
  }
  n.size = doc_->items_.size() - n.offset;
  scratch_.resize(c.first);
  return true;
}

bool PayloadJson::Parse(std::string_view text) {
  nodes_.clear();
  items_.clear();
  text_.clear();
  root_ = 0;
  // Room for most payloads' values at once (about one per 8 bytes of text)
  // and for all of their strings: the vectors rarely grow while the parser
  // runs.
  nodes_.reserve(text.size() / 8 + 4);
  items_.reserve(text.size() / 8 + 4);
  text_.reserve(text.size());
  PayloadSax sax(this);
  return nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &sax) && !nodes_.empty();
}

Type PayloadValue::type() const { return doc_->nodes_[node_].type; }

bool PayloadValue::is_number() const {
  const Type t = type();
  return t == Type::kInteger || t == Type::kUnsigned || t == Type::kFloat;
}

bool PayloadValue::Bool() const { return doc_->nodes_[node_].boolean; }

template <typename T>
T PayloadValue::Number() const {
  const PayloadJson::Node& n = doc_->nodes_[node_];
  if (n.type == Type::kInteger) return static_cast<T>(n.integer);
  if (n.type == Type::kUnsigned) return static_cast<T>(n.unsigned_integer);
  return static_cast<T>(n.number);
}

int64_t PayloadValue::Integer() const { return Number<int64_t>(); }
uint64_t PayloadValue::Unsigned() const { return Number<uint64_t>(); }
double PayloadValue::Double() const { return Number<double>(); }
float PayloadValue::Float() const { return Number<float>(); }

std::string_view PayloadValue::String() const {
  const auto& n = doc_->nodes_[node_];
  return doc_->Text(n.offset, n.size);
}

size_t PayloadValue::size() const { return doc_->nodes_[node_].size; }

PayloadValue PayloadValue::At(size_t i) const {
  return PayloadValue(doc_, doc_->items_[doc_->nodes_[node_].offset + i].node);
}

std::string_view PayloadValue::KeyAt(size_t i) const {
  const PayloadJson::Item& item = doc_->items_[doc_->nodes_[node_].offset + i];
  return doc_->Text(item.key_offset, item.key_size);
}

bool PayloadValue::Find(std::string_view key, PayloadValue* out) const {
  for (size_t i = 0; i < size(); ++i) {
    if (KeyAt(i) != key) continue;
    *out = At(i);
    return true;
  }
  return false;
}

nlohmann::json PayloadValue::ToJson() const {
  switch (type()) {
    case Type::kNull:
      return nullptr;
    case Type::kBoolean:
      return Bool();
    case Type::kInteger:
      return Integer();
    case Type::kUnsigned:
      return Unsigned();
    case Type::kFloat:
      return Double();
    case Type::kString:
      return std::string(String());
    case Type::kArray: {
      nlohmann::json a = nlohmann::json::array();
      for (size_t i = 0; i < size(); ++i) a.push_back(At(i).ToJson());
      return a;
    }
    default: {
      nlohmann::json o = nlohmann::json::object();
      for (size_t i = 0; i < size(); ++i) o[std::string(KeyAt(i))] = At(i).ToJson();
      return o;
    }
  }
}

}  // namespace outbox
