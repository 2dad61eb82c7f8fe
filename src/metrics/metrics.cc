#include "metrics/metrics.h"

#include <prometheus/text_serializer.h>

#include <sstream>

#include "common/build_info.h"

namespace outbox {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

prometheus::Gauge& ServiceMetrics::WakeupBinlogUp() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!binlog_up_) binlog_up_ = &binlog_up_family_->Add({{"service", service_}});
  return *binlog_up_;
}

prometheus::Counter& ServiceMetrics::Published(const std::string& topic) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& c = published_[topic];
  if (!c) c = &published_family_->Add({{"service", service_}, {"topic", topic}});
  return *c;
}

prometheus::Counter& ServiceMetrics::PublishFailures(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& c = failures_[reason];
  if (!c) c = &failures_family_->Add({{"service", service_}, {"reason", reason}});
  return *c;
}

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  auto gauge = [&r](const char* name, const char* help) {
    return &BuildGauge().Name(name).Help(help).Register(r);
  };
  auto counter = [&r](const char* name, const char* help) {
    return &BuildCounter().Name(name).Help(help).Register(r);
  };
  auto histogram = [&r](const char* name, const char* help) {
    return &BuildHistogram().Name(name).Help(help).Register(r);
  };
  backlog_ = gauge("outbox_backlog_events", "Rows in NEW or SENDING");
  oldest_ = gauge("outbox_oldest_unsent_age_seconds",
                  "Age of the oldest NEW or SENDING row by created_at; 0 when none");
  dead_ = gauge("outbox_dead_events", "Rows in DEAD");
  blocked_ = gauge("outbox_blocked_aggregates",
                   "Aggregates held back by a DEAD event (dead_policy: block)");
  database_up_ = gauge("outbox_database_up", "1 if the last database call succeeded");
  last_poll_ = gauge("outbox_last_poll_timestamp_seconds", "Unix time of the last successful poll");
  binlog_up_ = gauge("outbox_wakeup_binlog_up",
                     "1 while the service is woken by its server's binlog stream; 0 when it polls "
                     "instead (only with wakeup: binlog)");
  unknown_status_ = gauge("outbox_unknown_status_rows",
                          "Rows whose status is not NEW, SENDING, SENT or DEAD (left alone)");
  published_ =
      counter("outbox_events_published_total", "Events acknowledged by the broker and marked SENT");
  failures_ = counter("outbox_publish_failures_total", "Failed publish attempts");
  events_dead_ = counter("outbox_events_dead_total", "Transitions to DEAD made by this instance");
  reclaimed_ =
      counter("outbox_leases_reclaimed_total", "Expired SENDING rows this instance reclaimed");
  stale_ = counter("outbox_stale_transitions_total", "Updates that found the claim no longer ours");
  retention_deleted_ = counter("outbox_retention_deleted_total", "SENT rows deleted by retention");
  retention_failures_ =
      counter("outbox_retention_failures_total", "Retention passes stopped by a database error");
  // Failover (issue 25).
  server_changes_ = counter("outbox_database_server_changes_total",
                            "The server behind mysql.host changed identity (a failover)");
  build_info_ =
      gauge("outbox_relay_build_info",
            "Always 1; labels name the version, the source revision and this relay's instance_id");
  latency_ = histogram("outbox_publish_latency_seconds",
                       "created_at to broker acknowledgement, on the database's clock");
  poll_duration_ = histogram("outbox_poll_duration_seconds", "One claim round");
  kafka_up_ = &gauge("outbox_kafka_up", "1 if the broker is reachable")->Add({});
  stalled_loops_ = &gauge("outbox_stalled_loops",
                          "Service loops past their stall limit; /healthz is 503 while > 0")
                        ->Add({});
}

void Metrics::SetInstance(const std::string& instance_id) {
  build_info_
      ->Add({{"version", OUTBOX_VERSION},
             {"revision", BuildRevision()},
             {"instance_id", instance_id}})
      .Set(1);
}

ServiceMetrics& Metrics::ForService(const std::string& service) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = services_[service];
  if (slot) return *slot;
  slot = std::make_unique<ServiceMetrics>();
  ServiceMetrics& m = *slot;
  prometheus::Labels l{{"service", service}};
  m.service_ = service;
  m.published_family_ = published_;
  m.failures_family_ = failures_;
  m.binlog_up_family_ = binlog_up_;
  m.backlog = &backlog_->Add(l);
  m.oldest_unsent_age = &oldest_->Add(l);
  m.dead = &dead_->Add(l);
  m.blocked_aggregates = &blocked_->Add(l);
  m.database_up = &database_up_->Add(l);
  m.last_poll = &last_poll_->Add(l);
  m.unknown_status = &unknown_status_->Add(l);
  m.events_dead = &events_dead_->Add(l);
  m.leases_reclaimed = &reclaimed_->Add(l);
  m.stale_transitions = &stale_->Add(l);
  m.retention_deleted = &retention_deleted_->Add(l);
  m.retention_failures = &retention_failures_->Add(l);
  m.database_server_changes = &server_changes_->Add(l);  // failover (issue 25)
  // Every reason of outbox_publish_failures_total from the service's start,
  // at 0: a counter series that first appears with the value 6 has no
  // earlier sample, so rate() and increase() would never count those first
  // failures.
  for (FailureReason r : kFailureReasons) {
    const std::string reason(ToLabel(r));
    m.failures_[reason] = &failures_->Add({{"service", service}, {"reason", reason}});
  }
  // Seconds from created_at (whole seconds) to the ack: sub-second buckets
  // matter for the p50, minutes for a backlog.
  m.publish_latency = &latency_->Add(
      l, prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
                                                 5, 10, 30, 60, 300, 1800});
  m.poll_duration = &poll_duration_->Add(
      l, prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                 0.1, 0.25, 0.5, 1, 5});
  return m;
}

std::string Metrics::Serialize() const {
  prometheus::TextSerializer serializer;
  std::ostringstream out;
  serializer.Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace outbox
