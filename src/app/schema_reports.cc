#include "app/schema_reports.h"

#include "common/log.h"
#include "schema/registry_http.h"

namespace outbox {

namespace {

// A registry that cannot be reached because its client could not be made:
// every read answers why, and the rows wait.
class UnusableRegistry final : public SchemaRegistry {
 public:
  explicit UnusableRegistry(std::string why) : why_(std::move(why)) {}
  Status GetSubjectVersion(const std::string&, const std::string&, RegisteredSchema*) override {
    return Status::Unavailable(why_);
  }
  Status GetSchemaById(int32_t, RegisteredSchema*) override { return Status::Unavailable(why_); }

 private:
  const std::string why_;
};

SchemaRegistryPtr MakeRegistry(const SchemaRegistryConfig& c, const std::string& service) {
  RegistryEndpoint e;
  e.url = c.url;
  e.username = c.username;
  e.password = c.password;
  e.ca_file = c.ca;
  e.timeout = std::chrono::milliseconds(c.timeout_ms);
  std::shared_ptr<HttpSchemaRegistry> http;
  if (Status s = HttpSchemaRegistry::Make(e, &http); !s.ok()) {
    LogError("schema registry client cannot be made; rows wait",
             {{"service", service}, {"error", s.message()}});
    return std::make_shared<UnusableRegistry>(s.message());
  }
  return http;
}

}  // namespace

SchemaReports::SchemaReports(SchemaMetrics* metrics, std::string service)
    : metrics_(metrics), service_(std::move(service)) {
  metrics_->Add(service_);
}

SchemaReports::~SchemaReports() { metrics_->Remove(service_); }

void SchemaReports::OnLookup(SchemaLookup, const Status& result) {
  metrics_->AddLookup(service_, LookupResultLabel(result));
}

void SchemaReports::OnCacheHit(SchemaLookup) { metrics_->AddCacheHit(service_); }

void SchemaReports::OnConversionFailure(const std::string& reason, const std::string&) {
  // The row's own line ("row is DEAD") carries the error.
  metrics_->AddConversionFailure(service_, reason);
}

void SchemaReports::OnRegistryChange(const std::string& why) {
  metrics_->SetRegistryUp(service_, why.empty());
  if (why.empty())
    LogInfo("schema registry answers again", {{"service", service_}});
  else
    LogWarn("schema registry does not answer; rows wait",
            {{"service", service_}, {"reason", "schema_registry"}, {"error", why}});
}

bool UsesSchemaRegistry(const ServiceConfig& s) {
  if (s.value.format != ValueFormat::kBytes) return true;
  for (const auto& [event_type, v] : s.values)
    if (v.format != ValueFormat::kBytes) return true;
  return false;
}

std::shared_ptr<SchemaPublisher> MakeSchemaPublisher(const ServiceConfig& s, PublisherPtr inner,
                                                     SchemaMetrics* metrics) {
  auto reports = std::make_shared<SchemaReports>(metrics, s.name);
  const SchemaRegistryConfig& rc = *s.kafka.schema_registry;  // the loader required it
  SchemaCache::Options co;
  co.latest_ttl = std::chrono::milliseconds(rc.latest_refresh_ms);
  // The cache reports to what the publisher keeps alive, and the publisher
  // owns the cache (through its encoder).
  auto cache =
      std::make_shared<SchemaCache>(MakeRegistry(rc, s.name), DefaultClock(), co, reports.get());
  SchemaPublisher::Options po;
  po.inner = std::move(inner);
  po.encoder = std::make_shared<ValueEncoder>(s.name, s.value, s.values, cache);
  po.clock = DefaultClock();
  po.observer = std::move(reports);
  return std::make_shared<SchemaPublisher>(po);
}

}  // namespace outbox
