#include "metrics/metrics.h"

#include <prometheus/text_serializer.h>

#include <iterator>
#include <sstream>

#include "common/build_info.h"
#include "metrics/families.h"

namespace outbox {

namespace {
template <typename E>
size_t Index(E e) {
  return static_cast<size_t>(e);
}

// The `cause` label of a ServiceStats counter of outbox_duplicates_risk_total;
// nullptr for the others.
const char* DuplicateCause(ServiceStats::Counter c) {
  switch (c) {
    case ServiceStats::Counter::kDuplicateRiskLeaseExpired:
      return "lease_expired";
    case ServiceStats::Counter::kDuplicateRiskMaybeWritten:
      return "maybe_written";
    default:
      return nullptr;
  }
}

// Seconds from created_at (whole seconds) to the ack: sub-second buckets
// matter for the p50, minutes for a backlog.
const prometheus::Histogram::BucketBoundaries kLatencyBuckets{
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800};
const prometheus::Histogram::BucketBoundaries kPollBuckets{
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};
}  // namespace

ServiceMetrics::ServiceMetrics(Metrics& families, std::string service)
    : families_(families), service_(std::move(service)) {
  const prometheus::Labels l{{"service", service_}};
  for (size_t i = 0; i < kCounters; ++i) {
    prometheus::Labels labels = l;
    if (const char* cause = DuplicateCause(static_cast<Counter>(i))) labels["cause"] = cause;
    counters_[i] = &families_.counters_[i]->Add(labels);
  }
  histograms_[Index(Histogram::kPublishLatency)] =
      &families_.histograms_[Index(Histogram::kPublishLatency)]->Add(l, kLatencyBuckets);
  histograms_[Index(Histogram::kPollDuration)] =
      &families_.histograms_[Index(Histogram::kPollDuration)]->Add(l, kPollBuckets);
  // Every reason of outbox_publish_failures_total from the start, at 0.
  for (const FailureReasonLabel& l : kFailureReasonLabels) {
    const std::string reason(l.label);
    failures_[reason] = &families_.failures_->Add({{"service", service_}, {"reason", reason}});
  }
}

ServiceMetrics::~ServiceMetrics() {
  MutexLock lock(&mu_);
  for (size_t i = 0; i < kCounters; ++i) families_.counters_[i]->Remove(counters_[i]);
  for (size_t i = 0; i < kHistograms; ++i) families_.histograms_[i]->Remove(histograms_[i]);
  for (size_t i = 0; i < kGauges; ++i) {
    if (gauges_[i]) families_.gauges_[i]->Remove(gauges_[i]);
  }
  for (auto& [topic, c] : published_) families_.published_->Remove(c);
  for (auto& [reason, c] : failures_) families_.failures_->Remove(c);
}

void ServiceMetrics::Add(Counter counter, double n) { counters_[Index(counter)]->Increment(n); }

void ServiceMetrics::AddPublished(const std::string& topic, double n) {
  MutexLock lock(&mu_);
  auto& c = published_[topic];
  if (!c) c = &families_.published_->Add({{"service", service_}, {"topic", topic}});
  c->Increment(n);
}

void ServiceMetrics::AddPublishFailure(const std::string& reason, double n) {
  MutexLock lock(&mu_);
  auto& c = failures_[reason];
  if (!c) c = &families_.failures_->Add({{"service", service_}, {"reason", reason}});
  c->Increment(n);
}

void ServiceMetrics::Set(Gauge gauge, double value) {
  MutexLock lock(&mu_);
  prometheus::Gauge*& g = gauges_[Index(gauge)];
  if (!g) g = &families_.gauges_[Index(gauge)]->Add({{"service", service_}});
  g->Set(value);
}

void ServiceMetrics::Clear(Gauge gauge) {
  MutexLock lock(&mu_);
  prometheus::Gauge*& g = gauges_[Index(gauge)];
  if (!g) return;
  families_.gauges_[Index(gauge)]->Remove(g);
  g = nullptr;
}

void ServiceMetrics::Observe(Histogram histogram, double value) {
  histograms_[Index(histogram)]->Observe(value);
}

namespace {

using GaugeFamilies = std::array<prometheus::Family<prometheus::Gauge>*, ServiceMetrics::kGauges>;
using CounterFamilies =
    std::array<prometheus::Family<prometheus::Counter>*, ServiceMetrics::kCounters>;

// The families of ServiceStats::Gauge, one series per service each.
struct GaugeText {
  ServiceStats::Gauge gauge;
  const char* name;
  const char* help;
};
constexpr GaugeText kServiceGauges[] = {
    {ServiceStats::Gauge::kBacklog, "outbox_backlog_events", "Rows in NEW or SENDING"},
    {ServiceStats::Gauge::kOldestUnsentAge, "outbox_oldest_unsent_age_seconds",
     "Age of the oldest NEW or SENDING row by created_at; 0 when none"},
    {ServiceStats::Gauge::kDead, "outbox_dead_events", "Rows in DEAD"},
    {ServiceStats::Gauge::kBlockedAggregates, "outbox_blocked_aggregates",
     "Aggregates held back by a DEAD event (dead_policy: block)"},
    {ServiceStats::Gauge::kUnknownStatus, "outbox_unknown_status_rows",
     "Rows whose status is not NEW, SENDING, SENT or DEAD (left alone)"},
    {ServiceStats::Gauge::kDatabaseUp, "outbox_database_up",
     "1 if the last database call succeeded"},
    {ServiceStats::Gauge::kLastPoll, "outbox_last_poll_timestamp_seconds",
     "Unix time of the last successful poll"},
    {ServiceStats::Gauge::kWakeupBinlogUp, "outbox_wakeup_binlog_up",
     "1 while the service is woken by its server's binlog stream; 0 when it polls instead (only "
     "with wakeup: binlog)"},
    {ServiceStats::Gauge::kPaused, "outbox_service_paused",
     "1 while the service is paused by its config"},
    {ServiceStats::Gauge::kSentGroupRows, "outbox_sent_group_rows",
     "Acknowledged rows whose SENT waits to be written with others: what a crash now would "
     "publish again"},
};
static_assert(std::size(kServiceGauges) == ServiceMetrics::kGauges,
              "kServiceGauges names every ServiceStats::Gauge");

void AddServiceGauges(prometheus::Registry& r, GaugeFamilies* gauges) {
  for (const GaugeText& t : kServiceGauges) (*gauges)[Index(t.gauge)] = AddGauge(r, t.name, t.help);
}

// The families of ServiceStats::Counter, one series per service each.
void AddServiceCounters(prometheus::Registry& r, CounterFamilies* counters) {
  using C = ServiceStats::Counter;
  auto& c = *counters;
  c[Index(C::kEventsDead)] =
      AddCounter(r, "outbox_events_dead_total", "Transitions to DEAD made by this instance");
  c[Index(C::kLeasesReclaimed)] = AddCounter(r, "outbox_leases_reclaimed_total",
                                             "Expired SENDING rows this instance reclaimed");
  c[Index(C::kStaleTransitions)] = AddCounter(r, "outbox_stale_transitions_total",
                                              "Updates that found the claim no longer ours");
  c[Index(C::kRetentionDeleted)] =
      AddCounter(r, "outbox_retention_deleted_total", "SENT rows deleted by retention");
  c[Index(C::kRetentionFailures)] = AddCounter(r, "outbox_retention_failures_total",
                                               "Retention passes stopped by a database error");
  c[Index(C::kServerChanges)] =
      AddCounter(r, "outbox_database_server_changes_total",
                 "The server behind mysql.host changed identity (a failover)");
  // One family, a series per cause (DuplicateCause).
  auto* duplicates = AddCounter(r, "outbox_duplicates_risk_total",
                                "Rows published again that an earlier attempt may already have "
                                "delivered, by cause");
  c[Index(C::kDuplicateRiskLeaseExpired)] = duplicates;
  c[Index(C::kDuplicateRiskMaybeWritten)] = duplicates;
  c[Index(C::kTraceInvalid)] =
      AddCounter(r, "outbox_trace_context_invalid_total",
                 "Rows whose traceparent was not valid W3C trace context (header left out, "
                 "event sent)");
}

}  // namespace

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  AddServiceGauges(r, &gauges_);
  AddServiceCounters(r, &counters_);
  using H = ServiceStats::Histogram;
  histograms_[Index(H::kPublishLatency)] =
      AddHistogram(r, "outbox_publish_latency_seconds",
                   "created_at to broker acknowledgement, on the database's clock");
  histograms_[Index(H::kPollDuration)] =
      AddHistogram(r, "outbox_poll_duration_seconds", "One claim round");
  published_ = AddCounter(r, "outbox_events_published_total",
                          "Events acknowledged by the broker and marked SENT");
  failures_ = AddCounter(r, "outbox_publish_failures_total", "Failed publish attempts");
  build_info_ = AddGauge(
      r, "outbox_relay_build_info",
      "Always 1; labels name the version, the source revision and this relay's instance_id");
  kafka_up_ = &AddGauge(r, "outbox_kafka_up", "1 if the broker is reachable")->Add({});
  stalled_loops_ = &AddGauge(r, "outbox_stalled_loops",
                             "Service loops past their stall limit; /healthz is 503 while > 0")
                        ->Add({});
  auto* reloads = AddCounter(r, "outbox_config_reloads_total", "Configuration reloads by result");
  reloads_success_ = &reloads->Add({{"result", "success"}});
  reloads_failure_ = &reloads->Add({{"result", "failure"}});
  last_reload_success_ = &AddGauge(r, "outbox_config_last_reload_success_timestamp_seconds",
                                   "Unix time of the last successful configuration load")
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
  MutexLock lock(&mu_);
  auto& slot = services_[service];
  if (!slot) slot = std::make_unique<ServiceMetrics>(*this, service);
  return *slot;
}

void Metrics::RemoveService(const std::string& service) {
  MutexLock lock(&mu_);
  services_.erase(service);
}

std::string Metrics::Serialize() const {
  prometheus::TextSerializer serializer;
  std::ostringstream out;
  serializer.Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace outbox
