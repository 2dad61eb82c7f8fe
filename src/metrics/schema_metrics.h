#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <map>
#include <string>
#include <utility>

#include "common/mutex.h"

namespace outbox {

// The Schema Registry's metrics, per service with a value_format other than
// bytes (docs/METRICS.md "Schema Registry"): outbox_schema_registry_up,
// outbox_schema_registry_lookups_total{result},
// outbox_schema_cache_hits_total and
// outbox_schema_conversion_failures_total{reason}. Thread-safe.
class SchemaMetrics {
 public:
  explicit SchemaMetrics(prometheus::Registry& registry);

  // Creates the service's series (the gauge at 1, the counters at 0), or
  // counts one more user of them: a restarted service's new encoder may
  // come before its old one is gone.
  void Add(const std::string& service) EXCLUDES(mu_);
  void SetRegistryUp(const std::string& service, bool up) EXCLUDES(mu_);
  // `result`: ok, unavailable, denied, not_found, invalid.
  void AddLookup(const std::string& service, const std::string& result) EXCLUDES(mu_);
  void AddCacheHit(const std::string& service) EXCLUDES(mu_);
  void AddConversionFailure(const std::string& service, const std::string& reason) EXCLUDES(mu_);
  // One user fewer; the last one drops every series of the service.
  void Remove(const std::string& service) EXCLUDES(mu_);

 private:
  using Key = std::pair<std::string, std::string>;  // service, label value
  prometheus::Counter& CounterOf(prometheus::Family<prometheus::Counter>* family,
                                 std::map<Key, prometheus::Counter*>* series, const char* label,
                                 const Key& key) REQUIRES(mu_);

  prometheus::Family<prometheus::Gauge>* up_family_;
  prometheus::Family<prometheus::Counter>* lookups_family_;
  prometheus::Family<prometheus::Counter>* hits_family_;
  prometheus::Family<prometheus::Counter>* failures_family_;

  Mutex mu_;
  std::map<std::string, int> users_ GUARDED_BY(mu_);
  std::map<std::string, prometheus::Gauge*> up_ GUARDED_BY(mu_);
  std::map<Key, prometheus::Counter*> lookups_ GUARDED_BY(mu_);
  std::map<Key, prometheus::Counter*> hits_ GUARDED_BY(mu_);
  std::map<Key, prometheus::Counter*> failures_ GUARDED_BY(mu_);
};

}  // namespace outbox
