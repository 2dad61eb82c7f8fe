#include "metrics/schema_metrics.h"

#include "metrics/families.h"

namespace outbox {

namespace {

// Every result and reason exists from the service's start at 0, so that
// rate() counts the first one.
constexpr const char* kResults[] = {"ok", "unavailable", "denied", "not_found", "invalid"};
constexpr const char* kReasons[] = {"invalid_json",    "missing_field",    "wrong_type",
                                    "bad_value",       "not_avro",         "unknown_subject",
                                    "unusable_schema", "wrong_schema_type"};

template <typename Series>
void RemoveService(prometheus::Family<Series>* family,
                   std::map<std::pair<std::string, std::string>, Series*>* series,
                   const std::string& service) {
  for (auto it = series->begin(); it != series->end();) {
    if (it->first.first != service) {
      ++it;
      continue;
    }
    family->Remove(it->second);
    it = series->erase(it);
  }
}

}  // namespace

SchemaMetrics::SchemaMetrics(prometheus::Registry& registry) {
  up_family_ = AddGauge(registry, "outbox_schema_registry_up",
                        "1 while the service's schema registry answers (or was not asked yet)");
  lookups_family_ = AddCounter(registry, "outbox_schema_registry_lookups_total",
                               "Requests to the schema registry, by result");
  hits_family_ = AddCounter(registry, "outbox_schema_cache_hits_total",
                            "Schemas found in the relay's cache without a request");
  failures_family_ = AddCounter(registry, "outbox_schema_conversion_failures_total",
                                "Rows whose value could not be encoded by its schema (DEAD), "
                                "by reason");
}

prometheus::Counter& SchemaMetrics::CounterOf(prometheus::Family<prometheus::Counter>* family,
                                              std::map<Key, prometheus::Counter*>* series,
                                              const char* label, const Key& key) {
  prometheus::Counter*& c = (*series)[key];
  if (c == nullptr) {
    prometheus::Labels labels{{"service", key.first}};
    if (label != nullptr) labels[label] = key.second;
    c = &family->Add(labels);
  }
  return *c;
}

void SchemaMetrics::Add(const std::string& service) {
  MutexLock lock(&mu_);
  if (users_[service]++ > 0) return;
  prometheus::Gauge*& g = up_[service];
  if (g == nullptr) g = &up_family_->Add({{"service", service}});
  g->Set(1);
  for (const char* r : kResults)
    (void)CounterOf(lookups_family_, &lookups_, "result", {service, r});
  (void)CounterOf(hits_family_, &hits_, nullptr, {service, ""});
  for (const char* r : kReasons)
    (void)CounterOf(failures_family_, &failures_, "reason", {service, r});
}

void SchemaMetrics::SetRegistryUp(const std::string& service, bool up) {
  MutexLock lock(&mu_);
  prometheus::Gauge*& g = up_[service];
  if (g == nullptr) g = &up_family_->Add({{"service", service}});
  g->Set(up ? 1 : 0);
}

void SchemaMetrics::AddLookup(const std::string& service, const std::string& result) {
  MutexLock lock(&mu_);
  CounterOf(lookups_family_, &lookups_, "result", {service, result}).Increment();
}

void SchemaMetrics::AddCacheHit(const std::string& service) {
  MutexLock lock(&mu_);
  CounterOf(hits_family_, &hits_, nullptr, {service, ""}).Increment();
}

void SchemaMetrics::AddConversionFailure(const std::string& service, const std::string& reason) {
  MutexLock lock(&mu_);
  CounterOf(failures_family_, &failures_, "reason", {service, reason}).Increment();
}

void SchemaMetrics::Remove(const std::string& service) {
  MutexLock lock(&mu_);
  if (--users_[service] > 0) return;
  users_.erase(service);
  if (auto it = up_.find(service); it != up_.end()) {
    up_family_->Remove(it->second);
    up_.erase(it);
  }
  RemoveService(lookups_family_, &lookups_, service);
  RemoveService(hits_family_, &hits_, service);
  RemoveService(failures_family_, &failures_, service);
}

}  // namespace outbox
