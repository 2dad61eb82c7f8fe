#pragma once

// The seam between a service's relay and its metrics (docs/METRICS.md): the
// relay counts, sets and observes through this interface and never sees the
// exporter's types. src/metrics/ implements it with prometheus-cpp; the
// tests count what moved through a fake (tests/fakes/fake_stats.h).

#include <string>

namespace outbox {

// One service's metrics, every series labelled with its `service`.
// Thread-safe: every loop of the service reports here.
class ServiceStats {
 public:
  enum class Counter {
    kEventsDead,         // outbox_events_dead_total
    kLeasesReclaimed,    // outbox_leases_reclaimed_total
    kStaleTransitions,   // outbox_stale_transitions_total
    kRetentionDeleted,   // outbox_retention_deleted_total
    kRetentionFailures,  // outbox_retention_failures_total
    kServerChanges,      // outbox_database_server_changes_total
    kTraceInvalid,       // outbox_trace_context_invalid_total
    // outbox_duplicates_risk_total{cause}: rows published again that an
    // earlier attempt may already have delivered.
    kDuplicateRiskLeaseExpired,  // cause="lease_expired": reclaimed after a lease expired
    kDuplicateRiskMaybeWritten,  // cause="maybe_written": retried after a failure whose
                                 // request was on the wire
  };
  enum class Gauge {
    kBacklog,            // outbox_backlog_events
    kOldestUnsentAge,    // outbox_oldest_unsent_age_seconds
    kDead,               // outbox_dead_events
    kBlockedAggregates,  // outbox_blocked_aggregates
    kUnknownStatus,      // outbox_unknown_status_rows
    kDatabaseUp,         // outbox_database_up
    kLastPoll,           // outbox_last_poll_timestamp_seconds
    kWakeupBinlogUp,     // outbox_wakeup_binlog_up
    kPaused,             // outbox_service_paused
    kSentGroupRows,      // outbox_sent_group_rows
  };
  enum class Histogram {
    kPublishLatency,  // outbox_publish_latency_seconds
    kPollDuration,    // outbox_poll_duration_seconds
  };

  virtual ~ServiceStats() = default;

  virtual void Add(Counter counter, double n = 1) = 0;
  // outbox_events_published_total{topic} and outbox_publish_failures_total{reason}.
  virtual void AddPublished(const std::string& topic, double n = 1) = 0;
  virtual void AddPublishFailure(const std::string& reason, double n = 1) = 0;
  // A gauge has no sample until its first Set (a value read from the
  // database is absent, not 0, until the first successful read); Clear
  // takes the sample away again.
  virtual void Set(Gauge gauge, double value) = 0;
  virtual void Clear(Gauge gauge) = 0;
  virtual void Observe(Histogram histogram, double value) = 0;
};

}  // namespace outbox
