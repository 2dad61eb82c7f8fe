#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "common/clock.h"
#include "common/liveness.h"
#include "common/mutex.h"
#include "common/service_stats.h"
#include "config/config.h"
#include "outbox/outbox_store.h"
#include "relay/claim_scheduler.h"
#include "relay/db_health.h"

namespace outbox {

// The service's slow chores on their own connection: the table gauges
// (backlog, oldest unsent age, DEAD, blocked aggregates) and retention of
// old SENT rows. Not thread-safe: one thread runs it (the relay's
// housekeeping loop), except Unsent(), which any thread may call.
class Housekeeper {
 public:
  // `*metrics` and `*health` must outlive the Housekeeper.
  Housekeeper(const ServiceConfig& config, OutboxStorePtr store, ServiceStats* metrics,
              DbHealth* health, ClockPtr clock);

  // Connects (cheap when connected); the loop's first statement each round.
  Status Connect();
  // Reads the table's stats once and does two things with them: sets the
  // gauges, and keeps what they say about unsent rows for the claim loop
  // (Unsent): with `wakeup: binlog` the ClaimScheduler wakes when the next
  // unsent row comes due, so gauge_interval_ms bounds that latency too.
  Status RefreshGauges();
  // What the last read said about unsent rows (for the ClaimScheduler).
  UnsentSnapshot Unsent() const EXCLUDES(unsent_mu_);
  // Deletes SENT rows older than retention.sent_days in small batches, calling
  // `pause(retention.pause_ms)` between them; stops early when pause returns
  // false (shutdown). A failure is logged and counted, not a readiness matter.
  using PauseFn = std::function<bool(std::chrono::milliseconds)>;
  Status RunRetention(const PauseFn& pause);

  // Beaten after every statement (DbHealth::NoteAndBeat). Null: no heartbeat.
  void set_heartbeat(HeartbeatPtr beat) { beat_ = std::move(beat); }

  // `wakeup: binlog`: retention's DELETEs come back from the binary log like
  // anyone's commits; told around each batch (WakeupSource::BeginOwnChange
  // and EndOwnChange), they do not wake the claim loop. `after` gets the
  // batch's commits that changed rows (1 when it deleted rows, else 0).
  struct OwnWrites {
    std::function<void()> before;
    std::function<void(int commits)> after;
  };
  void set_own_writes(OwnWrites writes) { own_writes_ = std::move(writes); }

 private:
  void NoteUnsent(const TableStats& st) EXCLUDES(unsent_mu_);
  const ServiceConfig& config_;
  OutboxStorePtr store_;
  ServiceStats* const metrics_;
  DbHealth* const health_;
  const ClockPtr clock_;
  HeartbeatPtr beat_;
  OwnWrites own_writes_;
  Clock::TimePoint blocked_due_{};  // the next blocked-aggregates count
  mutable Mutex unsent_mu_;
  UnsentSnapshot unsent_ GUARDED_BY(unsent_mu_);
};

}  // namespace outbox
