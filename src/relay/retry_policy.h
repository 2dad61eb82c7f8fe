#pragma once

#include <cstdint>
#include <random>

#include "config/config.h"

namespace outbox {

// Exponential backoff with jitter, capped. Not thread-safe (owns an RNG).
class RetryPolicy {
 public:
  RetryPolicy(RetryConfig config, uint64_t seed) : config_(config), rng_(seed) {}

  // True if a row that has failed `failures` times (including this one)
  // should become DEAD.
  bool Exhausted(int failures) const { return failures >= config_.max_attempts; }

  // Delay before the next attempt after the `failures`-th failure (>= 1):
  // d = min(max, initial * 2^(failures-1)), then "equal jitter": d/2 + U[0, d/2].
  // Jitter spreads the retries of a failed batch so they do not return as one.
  int64_t BackoffMs(int failures);

  // The un-jittered delay, for documentation and tests.
  int64_t BaseBackoffMs(int failures) const;

 private:
  RetryConfig config_;
  std::mt19937_64 rng_;
};

}  // namespace outbox
