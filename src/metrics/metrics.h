#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/failure_reason.h"

namespace outbox {

// One service's metrics (the `service` label). Thread-safe.
class ServiceMetrics {
 public:
  prometheus::Counter& Published(const std::string& topic);
  prometheus::Counter& PublishFailures(const std::string& reason);
  // outbox_wakeup_binlog_up{service}: exported only for services with
  // `wakeup: binlog`, so the series appears on the first call.
  prometheus::Gauge& WakeupBinlogUp();

  prometheus::Gauge* backlog;
  prometheus::Gauge* oldest_unsent_age;
  prometheus::Gauge* dead;
  prometheus::Gauge* blocked_aggregates;
  prometheus::Gauge* database_up;
  prometheus::Gauge* last_poll;
  prometheus::Gauge* unknown_status;
  prometheus::Counter* events_dead;
  prometheus::Counter* leases_reclaimed;
  prometheus::Counter* stale_transitions;
  prometheus::Counter* retention_deleted;
  prometheus::Counter* retention_failures;
  // Failover (issue 25): the server behind mysql.host changed identity.
  prometheus::Counter* database_server_changes;
  prometheus::Histogram* publish_latency;
  prometheus::Histogram* poll_duration;

 private:
  friend class Metrics;
  std::string service_;
  prometheus::Family<prometheus::Counter>* published_family_;
  prometheus::Family<prometheus::Counter>* failures_family_;
  prometheus::Family<prometheus::Gauge>* binlog_up_family_;
  prometheus::Gauge* binlog_up_ = nullptr;
  std::mutex mu_;
  std::map<std::string, prometheus::Counter*> published_;
  std::map<std::string, prometheus::Counter*> failures_;
};

// Every metric of docs/METRICS.md, on one registry. Thread-safe.
class Metrics {
 public:
  Metrics();
  ServiceMetrics& ForService(const std::string& service);
  // Exports outbox_relay_build_info{version, revision, instance_id} 1. Call once.
  void SetInstance(const std::string& instance_id);
  prometheus::Gauge& kafka_up() { return *kafka_up_; }
  // Loops past their stall limit (src/common/liveness.h); 0 while /healthz is 200.
  prometheus::Gauge& stalled_loops() { return *stalled_loops_; }
  // The Prometheus text exposition format (version 0.0.4).
  std::string Serialize() const;
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>* backlog_;
  prometheus::Family<prometheus::Gauge>* oldest_;
  prometheus::Family<prometheus::Gauge>* dead_;
  prometheus::Family<prometheus::Gauge>* blocked_;
  prometheus::Family<prometheus::Gauge>* database_up_;
  prometheus::Family<prometheus::Gauge>* last_poll_;
  prometheus::Family<prometheus::Gauge>* binlog_up_;
  prometheus::Family<prometheus::Gauge>* unknown_status_;
  prometheus::Family<prometheus::Counter>* published_;
  prometheus::Family<prometheus::Counter>* failures_;
  prometheus::Family<prometheus::Counter>* events_dead_;
  prometheus::Family<prometheus::Counter>* reclaimed_;
  prometheus::Family<prometheus::Counter>* stale_;
  prometheus::Family<prometheus::Counter>* retention_deleted_;
  prometheus::Family<prometheus::Counter>* retention_failures_;
  prometheus::Family<prometheus::Counter>* server_changes_;  // failover (issue 25)
  prometheus::Family<prometheus::Gauge>* build_info_;
  prometheus::Family<prometheus::Histogram>* latency_;
  prometheus::Family<prometheus::Histogram>* poll_duration_;
  prometheus::Gauge* kafka_up_;
  prometheus::Gauge* stalled_loops_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<ServiceMetrics>> services_;
};

}  // namespace outbox
