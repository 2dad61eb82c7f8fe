#include "inbox/value_reader.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "common/mutex.h"
#include "inbox/inbox_log.h"
#include "schema/registry_http.h"
#include "schema/wire_format.h"

namespace outbox::inbox {

namespace {

using outbox::StatusCode;

bool RegistryAway(const outbox::Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kPermission;
}

ValueRead Dead(std::string label, std::string reason) {
  return {ValueRead::Kind::kDeadLetter, std::move(reason), std::move(label)};
}

}  // namespace

// The cache's reports, to the consumer's observer and log: every request,
// and the registry's state at the first request and when it changes (a
// warning when it stops answering, once, and a line when it answers again).
class ValueReader::Reports : public outbox::SchemaCacheObserver {
 public:
  explicit Reports(ConsumerObserver* observer) : observer_(observer) {}
  void OnLookup(outbox::SchemaLookup, const outbox::Status& result) override {
    if (observer_) observer_->SchemaLookup(outbox::LookupResultLabel(result));
    const bool up = !RegistryAway(result);
    bool first = false;
    {
      outbox::MutexLock lock(&mu_);
      if (up_ == up) return;
      first = !up_.has_value();
      up_ = up;
    }
    if (observer_) observer_->SchemaRegistryUp(up);
    if (up && !first)
      log::Info("schema registry: answers again");
    else if (!up)
      log::Warn("schema registry: {}; events with a schema id wait until it answers",
                result.message());
  }

 private:
  ConsumerObserver* const observer_;
  outbox::Mutex mu_;
  std::optional<bool> up_ GUARDED_BY(mu_);  // unknown until the first request
};

bool ReadWireHeader(Event* ev) {
  ev->schema_id = 0;
  ev->body = ev->payload;
  ev->schema_type.clear();
  ev->json.clear();
  int32_t id = 0;
  std::string_view body;
  if (!outbox::ParseWireHeader(ev->payload, &id, &body)) return false;
  ev->schema_id = id;
  ev->body = body;
  return true;
}

ValueReader::ValueReader(ValueDecode decode, outbox::SchemaRegistryPtr registry,
                         outbox::ClockPtr clock, ConsumerObserver* observer)
    : decode_(decode), reports_(std::make_unique<Reports>(observer)) {
  if (!registry) return;
  // By id only: an id never changes, so what is read is kept for good; a
  // failed read is not repeated for a second, the pace of the retries.
  outbox::SchemaCache::Options o;
  o.failure_backoff = std::chrono::seconds(1);
  cache_ = std::make_shared<outbox::SchemaCache>(std::move(registry), std::move(clock), o,
                                                 reports_.get());
}

ValueReader::~ValueReader() = default;

ValueRead ValueReader::LookupFailed(int32_t id, const outbox::Status& s) const {
  if (RegistryAway(s)) return {ValueRead::Kind::kWait, s.message(), ""};
  const std::string what = "value: schema id " + std::to_string(id);
  if (s.code() == StatusCode::kSchema)
    return Dead("unknown_schema", what + " is not in the schema registry: " + s.message());
  return Dead("unusable_schema", what + " cannot be used: " + s.message());
}

ValueRead ValueReader::Read(Event* ev) const {
  if (!ReadWireHeader(ev) || !cache_) return {};
  outbox::ResolvedSchemaPtr schema;
  if (outbox::Status s = cache_->ById(ev->schema_id, &schema); !s.ok())
    return LookupFailed(ev->schema_id, s);
  const bool avro = schema->type == outbox::SchemaType::kAvro;
  ev->schema_type = avro ? "AVRO" : "JSON";
  if (decode_ == ValueDecode::kRaw) return {};
  const std::string id = " (schema id " + std::to_string(ev->schema_id) + ")";
  if (!avro) {
    if (!nlohmann::json::accept(ev->body))
      return Dead("invalid_json", "value: the body is not JSON" + id);
    ev->json = std::string(ev->body);
    return {};
  }
  outbox::ConversionError e;
  if (!schema->avro->Decode(ev->body, &ev->json, &e))
    return Dead(std::string(outbox::ToLabel(e.reason)), "value: " + e.message + id);
  return {};
}

bool MakeRegistry(const RegistryConfig& config, outbox::SchemaRegistryPtr* out,
                  std::string* error) {
  out->reset();
  if (config.url.empty()) return true;
  outbox::RegistryEndpoint e;
  e.url = config.url;
  e.username = config.username;
  e.password = config.password;
  e.ca_file = config.ca;
  e.timeout = std::chrono::milliseconds(config.timeout_ms);
  std::shared_ptr<outbox::HttpSchemaRegistry> http;
  if (outbox::Status s = outbox::HttpSchemaRegistry::Make(e, &http); !s.ok()) {
    *error = "schema_registry: " + s.message();
    return false;
  }
  *out = std::move(http);
  return true;
}

}  // namespace outbox::inbox
