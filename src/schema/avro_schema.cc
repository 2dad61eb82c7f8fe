#include "schema/avro_schema.h"

#include <avro.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "schema/avro_nodes.h"
#include "schema/avro_to_json.h"
#include "schema/json_to_avro.h"

namespace outbox {

struct AvroSchema::Impl {
  avro_schema_t schema = nullptr;
  avro_value_iface_t* iface = nullptr;
  AvroNodes nodes;
  std::string record_name;

  ~Impl() {
    if (iface != nullptr) avro_value_iface_decref(iface);
    if (schema != nullptr) avro_schema_decref(schema);
  }
};

namespace {

// A generic value of the schema, released at the end of its scope.
class ScopedValue {
 public:
  explicit ScopedValue(avro_value_iface_t* iface) : ok_(avro_generic_value_new(iface, &v_) == 0) {}
  ~ScopedValue() {
    if (ok_) avro_value_decref(&v_);
  }
  ScopedValue(const ScopedValue&) = delete;
  ScopedValue& operator=(const ScopedValue&) = delete;
  bool ok() const { return ok_; }
  avro_value_t* get() { return &v_; }

 private:
  avro_value_t v_{};
  bool ok_;
};

// Writes `value`'s binary encoding into *out, as long as *out is, and cuts
// *out to what was written; false when it does not fit (or avro-c fails).
bool WriteValue(avro_value_t* value, std::string* out) {
  avro_writer_t writer = avro_writer_memory(out->data(), static_cast<int64_t>(out->size()));
  const int rc = avro_value_write(writer, value);
  const int64_t written = avro_writer_tell(writer);
  avro_writer_free(writer);
  if (rc != 0) return false;
  out->resize(static_cast<size_t>(written));
  return true;
}

bool Failed(ConversionError* e, ConversionFailure reason, std::string message) {
  e->reason = reason;
  e->field.clear();
  e->message = std::move(message);
  return false;
}

}  // namespace

AvroSchema::AvroSchema(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AvroSchema::~AvroSchema() = default;

Status AvroSchema::Parse(std::string_view schema_json, AvroSchemaPtr* out) {
  const nlohmann::json j = nlohmann::json::parse(schema_json, nullptr, false);
  if (j.is_discarded()) return Status::Invalid("the Avro schema is not valid JSON");
  auto impl = std::make_unique<Impl>();
  if (Status s = BuildAvroNodes(j, &impl->nodes); !s.ok()) return s;
  if (avro_schema_from_json_length(schema_json.data(), schema_json.size(), &impl->schema) != 0) {
    impl->schema = nullptr;
    return Status::Invalid(std::string("Avro schema (avro-c): ") + avro_strerror());
  }
  impl->iface = avro_generic_class_from_schema(impl->schema);
  if (impl->iface == nullptr)
    return Status::Invalid(std::string("Avro schema (avro-c): ") + avro_strerror());
  const AvroNode& root = impl->nodes.at(impl->nodes.root);
  if (root.kind == AvroKind::kRecord) impl->record_name = root.name;
  out->reset(new AvroSchema(std::move(impl)));
  return Status::Ok();
}

bool AvroSchema::Encode(std::string_view payload, std::string* out, ConversionError* error) const {
  PayloadJson v;
  if (!v.Parse(payload))
    return Failed(error, ConversionFailure::kInvalidJson, "the payload is not valid JSON");
  ScopedValue value(impl_->iface);
  if (!value.ok())
    return Failed(error, ConversionFailure::kBadValue, std::string("avro-c: ") + avro_strerror());
  if (!JsonToAvro(impl_->nodes).Fill(impl_->nodes.root, v.root(), value.get(), JsonPath(), error))
    return false;
  // The binary encoding is nearly always shorter than the JSON it comes
  // from: written into a buffer of the payload's size at once, and measured
  // first (a second walk of the value) only when it does not fit.
  out->resize(std::max<size_t>(payload.size(), 64));
  if (WriteValue(value.get(), out)) return true;
  size_t size = 0;
  if (avro_value_sizeof(value.get(), &size) != 0)
    return Failed(error, ConversionFailure::kBadValue, std::string("avro-c: ") + avro_strerror());
  out->assign(size, '\0');
  if (!WriteValue(value.get(), out))
    return Failed(error, ConversionFailure::kBadValue, std::string("avro-c: ") + avro_strerror());
  return true;
}

namespace {

// Reads `binary` into *value: false unless it is exactly one value (read
// back, the value's encoding has the bytes' length: none were left over).
bool ReadExactly(std::string_view binary, avro_value_t* value, const char* what,
                 ConversionError* error) {
  avro_reader_t reader = avro_reader_memory(binary.data(), static_cast<int64_t>(binary.size()));
  const int rc = avro_value_read(reader, value);
  avro_reader_free(reader);
  size_t size = 0;
  if (rc == 0 && avro_value_sizeof(value, &size) == 0 && size == binary.size()) return true;
  return Failed(error, ConversionFailure::kNotAvro,
                std::string(what) + " is not one value of the schema in Avro binary" +
                    (rc != 0 ? std::string(": ") + avro_strerror() : std::string()));
}

}  // namespace

bool AvroSchema::CheckBinary(std::string_view binary, ConversionError* error) const {
  ScopedValue value(impl_->iface);
  if (!value.ok())
    return Failed(error, ConversionFailure::kNotAvro, std::string("avro-c: ") + avro_strerror());
  return ReadExactly(binary, value.get(), "the payload (payload_encoding: avro)", error);
}

bool AvroSchema::Decode(std::string_view binary, std::string* json, ConversionError* error) const {
  ScopedValue value(impl_->iface);
  if (!value.ok())
    return Failed(error, ConversionFailure::kNotAvro, std::string("avro-c: ") + avro_strerror());
  if (!ReadExactly(binary, value.get(), "the value's body", error)) return false;
  nlohmann::json out;
  if (!AvroToJson(impl_->nodes).Read(impl_->nodes.root, value.get(), &out, "", error)) return false;
  // A string that is not UTF-8 (avro-c does not check) is written with
  // U+FFFD in its place rather than refused.
  *json = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return true;
}

const std::string& AvroSchema::record_name() const { return impl_->record_name; }

}  // namespace outbox
