#pragma once

#include <atomic>
#include <chrono>

#include "common/clock.h"

namespace outbox::testing {

// A clock that moves only when the test says so. WaitUntil never blocks: it
// reports whether the wake condition already holds, which is what a test that
// drives the relay's step methods from one thread needs.
// Thread-safe.
class FakeClock : public Clock {
 public:
  explicit FakeClock(double unix_start = 1'800'000'000.0) : unix_start_(unix_start) {}

  TimePoint Now() override { return TimePoint(std::chrono::milliseconds(elapsed_ms_.load())); }
  double UnixNow() override { return unix_start_ + static_cast<double>(elapsed_ms_.load()) / 1000; }
  bool WaitUntil(std::unique_lock<std::mutex>&, std::condition_variable&, TimePoint,
                 const std::function<bool()>& wake) override {
    return wake();
  }

  void Advance(std::chrono::milliseconds d) { elapsed_ms_ += d.count(); }
  // Milliseconds since the epoch, for the fake database's NOW().
  int64_t UnixMs() { return static_cast<int64_t>(UnixNow() * 1000); }

 private:
  const double unix_start_;
  std::atomic<int64_t> elapsed_ms_{0};
};

}  // namespace outbox::testing
