// The claim loop's waits (relay.h): how long an idle loop may wait for a
// wake-up, with `wakeup: poll` and with `wakeup: binlog` (docs/BINLOG.md
// "How the relay plugs in"), and the settle thread's wake-ups of the loop.
#include <algorithm>

#include "relay/relay.h"

namespace outbox {

void Relay::NoteOwnRetry(int64_t backoff_ms) {
  // next_retry_at is NOW() + backoff in a DATETIME: whole seconds, which
  // MySQL rounds (MariaDB truncates). A second more claims it either way.
  const Clock::TimePoint due = options_.clock->Now() + std::chrono::milliseconds(backoff_ms + 1000);
  const Clock::Duration::rep ticks = due.time_since_epoch().count();
  Clock::Duration::rep seen = own_retry_due_.load();
  while ((seen == 0 || ticks < seen) && !own_retry_due_.compare_exchange_weak(seen, ticks)) {
  }
  // The claim loop may be waiting for the stream already: let it look at the
  // new deadline.
  wakeup_->Interrupt();
}

void Relay::NoteDelivered(const PublishedBatch& done) {
  std::vector<SettledRow> acked;
  acked.reserve(done.outcomes.size());
  for (size_t i = 0; i < done.outcomes.size(); ++i) {
    const OutboxRow& r = done.batch.rows[i];
    if (done.outcomes[i].result == PublishResult::kAcked) acked.push_back({r.id, r.aggregate});
  }
  // per_aggregate: rows deferred behind these are claimable now. Neither a
  // poll nor the stream would say so soon: the poll comes poll_interval_ms
  // later, and the stream reports the settle's commit only after it.
  if (planner_.OnDelivered(acked)) {
    freed_by_ack_ = true;
    wakeup_->Interrupt();
  }
}

Clock::Duration Relay::OwnRetryWait(Clock::Duration wait, Clock::TimePoint now) {
  Clock::Duration::rep ticks = own_retry_due_.load();
  if (ticks == 0) return wait;
  const Clock::TimePoint due{Clock::Duration(ticks)};
  // A claim after it came due took the rows (or they are another relay's now).
  if (due <= last_claim_start_) {
    own_retry_due_.compare_exchange_strong(ticks, 0);
    return wait;
  }
  return std::min(wait, std::max<Clock::Duration>(due - now, Clock::Duration::zero()));
}

Clock::Duration Relay::TimersWindow() const {
  return std::chrono::milliseconds(std::min(options_.config.poll_interval_ms, 1000) + 1000);
}

Clock::Duration Relay::IdleWait(std::chrono::milliseconds idle_wait) {
  const Clock::Duration max_wait = wakeup_->MaxWait();
  if (options_.config.wakeup == Wakeup::kPoll)
    return std::min<Clock::Duration>(idle_wait, max_wait);
  // `wakeup: binlog`: a retry backoff or a lease coming due makes rows
  // claimable without a commit. The relay's own settles say when the retries
  // they wrote come due; the gauges say when the others do (docs/BINLOG.md
  // "Timers"). Everything else that frees a row is a commit: its own settles
  // and a peer's, a replay, an insert, which the stream announces.
  const Clock::TimePoint now = options_.clock->Now();
  const Clock::Duration poll = std::min<Clock::Duration>(idle_wait, max_wait);
  if (now < timers_until_) return poll;  // an insert wake-up that found nothing
  // A round that claimed rows: more are likely there already (a busy table),
  // so look again as polling does rather than wait for the stream to say so;
  // a busy relay must not slow down because of the stream. At low rates this
  // costs one empty round per claim. Not while rows wait behind this relay's
  // own deliveries: what frees them is an acknowledgement (NoteDelivered
  // wakes the loop), and a look before it would end the pass and start a
  // new one.
  if (last_claimed_ > 0 && planner_.deferred_count() == 0) return poll;
  return RaceCheckWait(OwnRetryWait(UnsentWait(poll, max_wait, now), now), now);
}

Clock::Duration Relay::RaceCheckWait(Clock::Duration wait, Clock::TimePoint now) const {
  if (!RaceCheckPending()) return wait;
  return std::min(wait, std::max<Clock::Duration>(race_check_at_ - now, Clock::Duration::zero()));
}

Clock::Duration Relay::UnsentWait(Clock::Duration poll, Clock::Duration max_wait,
                                  Clock::TimePoint now) const {
  const UnsentSnapshot u = housekeeper_.Unsent();
  if (!u.read) return poll;
  if (u.backlog == 0) return max_wait;
  // Unsent rows that were due at the read and still there at a later claim
  // that found nothing wait for a commit (a peer's settle, a DEAD row
  // replayed), which the stream announces. The others come due by time, the
  // first at u.next_due. A read newer than the last claim: claim first.
  if (u.read_at >= last_claim_start_) return poll;
  // Re-read at least every gauge interval: a peer's failed publish may have
  // left a retry due sooner than the read saw.
  const Clock::Duration cap = std::min<Clock::Duration>(
      max_wait, std::chrono::milliseconds(options_.config.gauge_interval_ms));
  if (!u.next_due) return cap;
  // Came due by the last claim and not claimed: the next is unknown until the
  // gauges are read again.
  if (*u.next_due <= last_claim_start_) return poll;
  return std::clamp<Clock::Duration>(*u.next_due - now, Clock::Duration::zero(), cap);
}

}  // namespace outbox
