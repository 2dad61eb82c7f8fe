#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <map>
#include <memory>
#include <string>

#include "common/failure_reason.h"
#include "common/mutex.h"
#include "common/service_stats.h"

namespace outbox {

class Metrics;

// One service's metrics (the `service` label), on the families of a Metrics.
// Counters and histograms exist from the service's start at 0 (a counter
// series first seen at 6 has no earlier sample, so rate() would miss those
// first 6); gauges appear at their first Set. Thread-safe.
class ServiceMetrics final : public ServiceStats {
 public:
  static constexpr size_t kCounters = 9, kGauges = 10, kHistograms = 2;

  ServiceMetrics(Metrics& families, std::string service);
  ~ServiceMetrics() override;  // removes every series of the service

  void Add(Counter counter, double n = 1) override;
  void AddPublished(const std::string& topic, double n = 1) override EXCLUDES(mu_);
  void AddPublishFailure(const std::string& reason, double n = 1) override EXCLUDES(mu_);
  void Set(Gauge gauge, double value) override EXCLUDES(mu_);
  void Clear(Gauge gauge) override EXCLUDES(mu_);
  void Observe(Histogram histogram, double value) override;

 private:
  // Constant after construction.
  Metrics& families_;
  const std::string service_;
  std::array<prometheus::Counter*, kCounters> counters_{};
  std::array<prometheus::Histogram*, kHistograms> histograms_{};

  Mutex mu_;  // guards the lazily created series below
  std::array<prometheus::Gauge*, kGauges> gauges_ GUARDED_BY(mu_){};
  std::map<std::string, prometheus::Counter*> published_ GUARDED_BY(mu_);
  std::map<std::string, prometheus::Counter*> failures_ GUARDED_BY(mu_);
};

// Every metric of docs/METRICS.md, on one registry. Thread-safe.
class Metrics {
 public:
  Metrics();
  // The service's metrics, created at the first call. Valid until
  // RemoveService(service) or the Metrics' end.
  ServiceMetrics& ForService(const std::string& service) EXCLUDES(mu_);
  // Removes every series of the service (a service removed by a reload).
  void RemoveService(const std::string& service) EXCLUDES(mu_);
  // Exports outbox_relay_build_info{version, revision, instance_id} 1. Call once.
  void SetInstance(const std::string& instance_id);
  prometheus::Gauge& kafka_up() { return *kafka_up_; }
  // Loops past their stall limit (src/common/liveness.h); 0 while /healthz is 200.
  prometheus::Gauge& stalled_loops() { return *stalled_loops_; }
  // outbox_config_reloads_total{result} and
  // outbox_config_last_reload_success_timestamp_seconds.
  prometheus::Counter& config_reloads(bool success) {
    return success ? *reloads_success_ : *reloads_failure_;
  }
  prometheus::Gauge& config_last_reload_success() { return *last_reload_success_; }
  // The Prometheus text exposition format (version 0.0.4).
  std::string Serialize() const;
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  friend class ServiceMetrics;
  std::shared_ptr<prometheus::Registry> registry_;
  std::array<prometheus::Family<prometheus::Counter>*, ServiceMetrics::kCounters> counters_{};
  std::array<prometheus::Family<prometheus::Gauge>*, ServiceMetrics::kGauges> gauges_{};
  std::array<prometheus::Family<prometheus::Histogram>*, ServiceMetrics::kHistograms> histograms_{};
  prometheus::Family<prometheus::Counter>* published_;
  prometheus::Family<prometheus::Counter>* failures_;
  prometheus::Family<prometheus::Gauge>* build_info_;
  prometheus::Gauge* kafka_up_;
  prometheus::Gauge* stalled_loops_;
  prometheus::Counter* reloads_success_;
  prometheus::Counter* reloads_failure_;
  prometheus::Gauge* last_reload_success_;
  Mutex mu_;
  std::map<std::string, std::unique_ptr<ServiceMetrics>> services_ GUARDED_BY(mu_);
};

}  // namespace outbox
