#include "relay/retry_policy.h"

#include <algorithm>

namespace outbox {

int64_t RetryPolicy::BaseBackoffMs(int failures) const {
  int64_t d = config_.initial_backoff_ms;
  for (int i = 1; i < failures && d < config_.max_backoff_ms; ++i) d *= 2;
  return std::min(d, config_.max_backoff_ms);
}

int64_t RetryPolicy::BackoffMs(int failures) {
  int64_t d = BaseBackoffMs(std::max(1, failures));
  std::uniform_int_distribution<int64_t> jitter(0, d / 2);
  return d - d / 2 + jitter(rng_);
}

}  // namespace outbox
