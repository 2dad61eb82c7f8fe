#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <map>
#include <string>

#include "common/mutex.h"

namespace outbox {

// What runs on this relay, per service of the file (docs/METRICS.md "What
// runs"): outbox_service_running, 1 while the service's claim loop runs
// here, and outbox_service_start_failures_total, one per cause that kept a
// service it should run from starting. Exported with or without a fleet.
// Thread-safe.
class ServiceRunMetrics {
 public:
  explicit ServiceRunMetrics(prometheus::Registry& registry);

  void SetRunning(const std::string& service, bool running) EXCLUDES(mu_);
  void AddStartFailure(const std::string& service) EXCLUDES(mu_);
  // Drops the series of a service no longer in the file.
  void Remove(const std::string& service) EXCLUDES(mu_);

 private:
  prometheus::Family<prometheus::Gauge>* running_family_;
  prometheus::Family<prometheus::Counter>* failures_family_;

  Mutex mu_;
  std::map<std::string, prometheus::Gauge*> running_ GUARDED_BY(mu_);
  std::map<std::string, prometheus::Counter*> failures_ GUARDED_BY(mu_);
};

}  // namespace outbox
