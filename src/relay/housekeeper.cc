#include "relay/housekeeper.h"

#include <limits>

#include "common/log.h"

namespace outbox {

Housekeeper::Housekeeper(const ServiceConfig& config, OutboxStorePtr store, ServiceStats* metrics,
                         DbHealth* health, ClockPtr clock)
    : config_(config),
      store_(std::move(store)),
      metrics_(metrics),
      health_(health),
      clock_(std::move(clock)) {}

Status Housekeeper::Connect() {
  Status s = store_->Connect();
  // Only a failure is news: a session that opens says nothing of the
  // table (dropped, renamed, no grant), and reporting it as up would flap
  // readiness between it and the statement that fails next; the gauges'
  // read that follows reports the service.
  if (s.ok()) {
    if (beat_) beat_->Beat();
  } else {
    health_->NoteAndBeat(s, "connect", beat_);
  }
  return s;
}

void Housekeeper::NoteUnsent(const TableStats& st) {
  UnsentSnapshot u;
  u.read = true;
  u.read_at = clock_->Now();
  u.backlog = st.backlog;
  if (st.next_due_in_s) {
    u.next_due = u.read_at + std::chrono::duration_cast<Clock::Duration>(
                                 std::chrono::duration<double>(*st.next_due_in_s));
  }
  MutexLock lock(&unsent_mu_);
  unsent_ = u;
}

UnsentSnapshot Housekeeper::Unsent() const {
  MutexLock lock(&unsent_mu_);
  return unsent_;
}

Status Housekeeper::RefreshGauges() {
  TableStats st;
  Status s = store_->ReadStats(&st);
  health_->NoteAndBeat(s, "read table gauges", beat_);
  if (!s.ok()) return s;
  NoteUnsent(st);
  using G = ServiceStats::Gauge;
  metrics_->Set(G::kBacklog, static_cast<double>(st.backlog));
  metrics_->Set(G::kOldestUnsentAge, st.oldest_unsent_age_s);
  metrics_->Set(G::kDead, static_cast<double>(st.dead));
  metrics_->Set(G::kUnknownStatus, static_cast<double>(st.unknown_status));
  const bool blocking =
      config_.ordering == Ordering::kPerAggregate && config_.dead_policy == DeadPolicy::kBlock;
  if (!blocking || st.dead == 0) {
    metrics_->Set(G::kBlockedAggregates, 0);
    return Status::Ok();
  }
  // Counting the blocked aggregates reads every DEAD row: 0.2-2 s of the
  // database's time with 100,000 of them after an incident. It runs at most a
  // tenth of the time: after a count that took d, the next waits 10 d.
  const Clock::TimePoint start = clock_->Now();
  if (start < blocked_due_) return Status::Ok();
  int64_t blocked = 0;
  s = store_->CountBlockedAggregates(&blocked);
  health_->NoteAndBeat(s, "count blocked aggregates", beat_);
  if (!s.ok()) return s;
  blocked_due_ = start + 10 * (clock_->Now() - start);
  metrics_->Set(G::kBlockedAggregates, static_cast<double>(blocked));
  return Status::Ok();
}

Status Housekeeper::RunRetention(const PauseFn& pause) {
  const RetentionConfig& r = config_.retention;
  if (!r.sent_days) return Status::Ok();
  int64_t cursor = std::numeric_limits<int64_t>::min();
  int64_t total = 0;
  for (;;) {
    int64_t deleted = 0;
    bool done = false;
    if (own_writes_.before) own_writes_.before();
    Status s = store_->DeleteSentBatch(*r.sent_days, r.batch_rows, &cursor, &deleted, &done);
    if (own_writes_.after) own_writes_.after(s.ok() && deleted > 0 ? 1 : 0);
    if (!s.ok()) {
      // Not a readiness matter: relaying goes on without retention (a missing
      // DELETE grant, a lock wait). The next pass starts over.
      LogWarn("retention stopped",
              {{"service", config_.name}, {"count", total}, {"error", s.message()}});
      metrics_->Add(ServiceStats::Counter::kRetentionFailures);
      return s;
    }
    total += deleted;
    metrics_->Add(ServiceStats::Counter::kRetentionDeleted, static_cast<double>(deleted));
    if (done || !pause(std::chrono::milliseconds(r.pause_ms))) break;
  }
  if (total > 0)
    LogInfo("retention deleted SENT rows",
            {{"service", config_.name}, {"count", total}, {"sent_days", *r.sent_days}});
  return Status::Ok();
}

}  // namespace outbox
