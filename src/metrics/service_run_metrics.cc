#include "metrics/service_run_metrics.h"

#include "metrics/families.h"

namespace outbox {

ServiceRunMetrics::ServiceRunMetrics(prometheus::Registry& registry) {
  running_family_ = AddGauge(registry, "outbox_service_running",
                             "1 while the service's claim loop runs on this relay");
  failures_family_ = AddCounter(registry, "outbox_service_start_failures_total",
                                "Causes that kept a service this relay should run from starting "
                                "(counted once per cause; retried with backoff)");
}

void ServiceRunMetrics::SetRunning(const std::string& service, bool running) {
  MutexLock lock(&mu_);
  prometheus::Gauge*& g = running_[service];
  if (g == nullptr) g = &running_family_->Add({{"service", service}});
  g->Set(running ? 1 : 0);
  // A counter series exists from the start at 0, so that rate() sees the
  // first failure.
  if (failures_.count(service) == 0)
    failures_[service] = &failures_family_->Add({{"service", service}});
}

void ServiceRunMetrics::AddStartFailure(const std::string& service) {
  MutexLock lock(&mu_);
  prometheus::Counter*& c = failures_[service];
  if (c == nullptr) c = &failures_family_->Add({{"service", service}});
  c->Increment();
}

void ServiceRunMetrics::Remove(const std::string& service) {
  MutexLock lock(&mu_);
  if (auto it = running_.find(service); it != running_.end()) {
    running_family_->Remove(it->second);
    running_.erase(it);
  }
  if (auto it = failures_.find(service); it != failures_.end()) {
    failures_family_->Remove(it->second);
    failures_.erase(it);
  }
}

}  // namespace outbox
