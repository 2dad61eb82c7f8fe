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
  backlog_ = &BuildGauge().Name("outbox_backlog_events").Help("Rows in NEW or SENDING").Register(r);
  oldest_ = &BuildGauge()
                 .Name("outbox_oldest_unsent_age_seconds")
                 .Help("Age of the oldest NEW or SENDING row by created_at; 0 when none")
                 .Register(r);
  dead_ = &BuildGauge().Name("outbox_dead_events").Help("Rows in DEAD").Register(r);
  blocked_ = &BuildGauge()
                  .Name("outbox_blocked_aggregates")
                  .Help("Aggregates held back by a DEAD event (dead_policy: block)")
                  .Register(r);
  database_up_ = &BuildGauge()
                      .Name("outbox_database_up")
                      .Help("1 if the last database call succeeded")
                      .Register(r);
  last_poll_ = &BuildGauge()
                    .Name("outbox_last_poll_timestamp_seconds")
                    .Help("Unix time of the last successful poll")
                    .Register(r);
  binlog_up_ = &BuildGauge()
                    .Name("outbox_wakeup_binlog_up")
                    .Help(
                        "1 while the service is woken by its server's binlog stream; 0 when it "
                        "polls instead (only with wakeup: binlog)")
                    .Register(r);
  unknown_status_ = &BuildGauge()
                         .Name("outbox_unknown_status_rows")
                         .Help("Rows whose status is not NEW, SENDING, SENT or DEAD (left alone)")
                         .Register(r);
  published_ = &BuildCounter()
                    .Name("outbox_events_published_total")
                    .Help("Events acknowledged by the broker and marked SENT")
                    .Register(r);
  failures_ = &BuildCounter()
                   .Name("outbox_publish_failures_total")
                   .Help("Failed publish attempts")
                   .Register(r);
  events_dead_ = &BuildCounter()
                      .Name("outbox_events_dead_total")
                      .Help("Transitions to DEAD made by this instance")
                      .Register(r);
  reclaimed_ = &BuildCounter()
                    .Name("outbox_leases_reclaimed_total")
                    .Help("Expired SENDING rows this instance reclaimed")
                    .Register(r);
  stale_ = &BuildCounter()
                .Name("outbox_stale_transitions_total")
                .Help("Updates that found the claim no longer ours")
                .Register(r);
  retention_deleted_ = &BuildCounter()
                            .Name("outbox_retention_deleted_total")
                            .Help("SENT rows deleted by retention")
                            .Register(r);
  retention_failures_ = &BuildCounter()
                             .Name("outbox_retention_failures_total")
                             .Help("Retention passes stopped by a database error")
                             .Register(r);
  build_info_ = &BuildGauge()
                     .Name("outbox_relay_build_info")
                     .Help(
                         "Always 1; labels name the version, the source revision and this relay's "
                         "instance_id")
                     .Register(r);
  latency_ = &BuildHistogram()
                  .Name("outbox_publish_latency_seconds")
                  .Help("created_at to broker acknowledgement")
                  .Register(r);
  poll_duration_ =
      &BuildHistogram().Name("outbox_poll_duration_seconds").Help("One claim round").Register(r);
  kafka_up_ = &BuildGauge()
                   .Name("outbox_kafka_up")
                   .Help("1 if the broker is reachable")
                   .Register(r)
                   .Add({});
  stalled_loops_ = &BuildGauge()
                        .Name("outbox_stalled_loops")
                        .Help("Service loops past their stall limit; /healthz is 503 while > 0")
                        .Register(r)
                        .Add({});
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
