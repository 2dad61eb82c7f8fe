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

bool SettleLoop::FlushGroup(Settled* done) {
  if (group_.empty()) return true;
  if (!settler_->SettleSent(group_).ok()) return false;
  queue_->GroupSettled(static_cast<int>(group_.size()));
  done->count += static_cast<int>(group_.size());
  group_.clear();
  grouping_.Clear();
  settler_->NoteGroupRows(0);
  return true;
}

bool SettleLoop::Hold(PublishedBatch* front, Settled* done) {
  const size_t rows = front->batch.rows.size();
  if (!grouping_.Fits(rows) && !FlushGroup(done)) return false;
  grouping_.Add(rows, clock_->Now());
  group_.push_back(std::move(*front));
  queue_->PopGrouped();
  settler_->NoteGroupRows(grouping_.rows());
  return true;
}

bool SettleLoop::SettleFront(PublishedBatch* front) {
  std::optional<int64_t> retry_ms;
  if (!settler_->Settle(*front, &retry_ms).ok()) return false;
  if (retry_ms && own_retry_) own_retry_(*retry_ms);
  queue_->Pop();
  return true;
}

SettleLoop::Settled SettleLoop::SettleOrGroup(std::chrono::milliseconds timeout) {
  Settled done;
  for (;;) {
    // The group's deadline ends the wait; without a group, `timeout` for the
    // first batch and none after one was settled.
    const Clock::TimePoint deadline = !group_.empty()   ? grouping_.due()
                                      : done.count == 0 ? clock_->Now() + timeout
                                                        : Clock::TimePoint{};
    PublishedBatch* front = queue_->Front(deadline);
    const bool ended = queue_->claims_ended();
    if (front != nullptr && grouping_.Holds(front->batch.rows.size(), AllAcked(*front), ended)) {
      if (!Hold(front, &done)) return {done.count, true};
      front = nullptr;
      if (!grouping_.Due(clock_->Now(), ended)) continue;
    }
    // A batch settled alone goes after the group (publication order).
    if ((front != nullptr || grouping_.Due(clock_->Now(), ended)) && !FlushGroup(&done))
      return {done.count, true};
    if (front == nullptr) return done;
    if (!SettleFront(front)) return {done.count, true};
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
