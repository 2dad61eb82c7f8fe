#include "relay/settle_loop.h"

#include <optional>

#include "relay/settle_timing.h"

namespace outbox {

SettleLoop::SettleLoop(Settler* settler, std::shared_ptr<SettleQueue> queue, ClockPtr clock,
                       OwnRetryFn own_retry, std::chrono::milliseconds group_window)
    : settler_(settler),
      queue_(std::move(queue)),
      clock_(std::move(clock)),
      own_retry_(std::move(own_retry)),
      grouping_(group_window) {}

bool SettleLoop::FlushGroup() {
  if (group_.empty()) return true;
  if (!settler_->SettleSent(group_).ok()) return false;
  queue_->GroupSettled(static_cast<int>(group_.size()));
  group_.clear();
  grouping_.Clear();
  return true;
}

bool SettleLoop::SettleFront(PublishedBatch* front) {
  std::optional<int64_t> retry_ms;
  if (!settler_->Settle(*front, &retry_ms).ok()) return false;
  if (retry_ms && own_retry_) own_retry_(*retry_ms);
  queue_->Pop();
  return true;
}

SettleLoop::Settled SettleLoop::SettleAdmitted(bool wait, std::chrono::milliseconds timeout) {
  Settled done;
  if (!FlushGroup()) return {0, true};
  for (;;) {
    const Clock::TimePoint deadline =
        wait && done.count == 0 ? clock_->Now() + timeout : Clock::TimePoint{};
    PublishedBatch* front = queue_->Front(deadline);
    if (front == nullptr) return done;
    if (!SettleFront(front)) {
      done.failed = true;
      return done;
    }
    ++done.count;
  }
}

SettleLoop::Settled SettleLoop::SettleOrGroup(std::chrono::milliseconds timeout) {
  Settled done;
  for (;;) {
    // The group's deadline ends the wait; without a group, as SettleAdmitted.
    const Clock::TimePoint deadline = !group_.empty()   ? grouping_.due()
                                      : done.count == 0 ? clock_->Now() + timeout
                                                        : Clock::TimePoint{};
    PublishedBatch* front = queue_->Front(deadline);
    const bool ended = queue_->claims_ended();
    const size_t rows = front != nullptr ? front->batch.rows.size() : 0;
    if (front != nullptr && grouping_.Holds(rows, AllAcked(*front), ended)) {
      if (!grouping_.Fits(rows) && !FlushGroup()) {
        done.failed = true;
        return done;
      }
      grouping_.Add(rows, clock_->Now());
      group_.push_back(std::move(*front));
      queue_->PopGrouped();
      ++done.count;
      front = nullptr;
      if (!grouping_.Due(clock_->Now(), ended)) continue;
    }
    if ((front != nullptr || grouping_.Due(clock_->Now(), ended)) && !FlushGroup()) {
      done.failed = true;
      return done;
    }
    if (front == nullptr) return done;
    if (!SettleFront(front)) {
      done.failed = true;
      return done;
    }
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
    if (!SettleOrGroup(SettleScheduler::kAdmitWait).failed) {
      timing.OnSettled();
      continue;
    }
    // The settle failed (database down): retry until it applies.
    queue_->Sleep(timing.OnFailed(clock_->Now()));
  }
}

}  // namespace outbox
