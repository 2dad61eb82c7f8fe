#include "relay/settle_loop.h"

#include <algorithm>
#include <optional>

namespace outbox {

SettleLoop::SettleLoop(Settler* settler, std::shared_ptr<SettleQueue> queue, ClockPtr clock,
                       OwnRetryFn own_retry)
    : settler_(settler),
      queue_(std::move(queue)),
      clock_(std::move(clock)),
      own_retry_(std::move(own_retry)) {}

int SettleLoop::SettleReady(bool wait, std::chrono::milliseconds timeout) {
  int settled = 0;
  for (;;) {
    const Clock::TimePoint deadline =
        wait && settled == 0 ? clock_->Now() + timeout : Clock::TimePoint{};
    PublishedBatch* front = queue_->Front(deadline);
    if (front == nullptr) return settled;
    std::optional<int64_t> retry_ms;
    if (!settler_->Settle(*front, &retry_ms).ok()) return settled;
    if (retry_ms && own_retry_) own_retry_(*retry_ms);
    queue_->Pop();
    ++settled;
  }
}

void SettleLoop::Run() {
  auto backoff = std::chrono::milliseconds(100);
  while (!queue_->halted() && !queue_->Drained()) {
    if (beat_) beat_->Beat();
    SettleReady(true, std::chrono::milliseconds(200));
    if (queue_->Front(Clock::TimePoint{}) == nullptr) {
      // Nothing left, or its claim still committing.
      backoff = std::chrono::milliseconds(100);
      continue;
    }
    // The settle failed (database down): retry until it applies. The fencing
    // makes a late settle harmless if the lease was taken over.
    queue_->Sleep(clock_->Now() + backoff);
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(5));
  }
}

}  // namespace outbox
