#include "relay/settle_loop.h"

#include <optional>

#include "relay/settle_timing.h"

namespace outbox {

SettleLoop::SettleLoop(Settler* settler, std::shared_ptr<SettleQueue> queue, ClockPtr clock,
                       OwnRetryFn own_retry)
    : settler_(settler),
      queue_(std::move(queue)),
      clock_(std::move(clock)),
      own_retry_(std::move(own_retry)) {}

SettleLoop::Settled SettleLoop::SettleAdmitted(bool wait, std::chrono::milliseconds timeout) {
  Settled done;
  for (;;) {
    const Clock::TimePoint deadline =
        wait && done.count == 0 ? clock_->Now() + timeout : Clock::TimePoint{};
    PublishedBatch* front = queue_->Front(deadline);
    if (front == nullptr) return done;
    std::optional<int64_t> retry_ms;
    if (!settler_->Settle(*front, &retry_ms).ok()) {
      done.failed = true;
      return done;
    }
    if (retry_ms && own_retry_) own_retry_(*retry_ms);
    queue_->Pop();
    ++done.count;
  }
}

void SettleLoop::Run() {
  SettleScheduler timing;
  while (!queue_->halted() && !queue_->Drained()) {
    if (beat_) beat_->Beat();
    // Only a failed settle waits here. (Asking the queue again whether a
    // batch is waiting would also find one admitted just after the pass
    // ended, and hold it, and the claims waiting for room behind it, for the
    // backoff: the 100 ms tail of the `wakeup: binlog` latency at 1,000
    // events/s.)
    if (!SettleAdmitted(true, SettleScheduler::kAdmitWait).failed) {
      timing.OnSettled();
      continue;
    }
    // The settle failed (database down): retry until it applies.
    queue_->Sleep(timing.OnFailed(clock_->Now()));
  }
}

}  // namespace outbox
