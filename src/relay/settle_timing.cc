#include "relay/settle_timing.h"

#include <algorithm>

namespace outbox {

Clock::TimePoint SettleScheduler::OnFailed(Clock::TimePoint now) {
  const Clock::TimePoint next = now + backoff_;
  backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  return next;
}

std::chrono::milliseconds StopGrace(const ServiceConfig& s) {
  return std::chrono::milliseconds(std::min<int64_t>(60000, s.lease_ms / 2 + 5000));
}

}  // namespace outbox
