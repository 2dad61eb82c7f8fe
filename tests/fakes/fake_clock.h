#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "common/clock.h"

namespace outbox::testing {

// A clock that moves only when the test says so (Advance). WaitUntil blocks
// like the real one until the wake condition holds or the fake time reaches
// the deadline: a loop waiting for 100 fake ms waits until a test advances
// the clock that far. It re-checks every millisecond of real time, so a
// waiter sees an Advance (or a condition set without a signal) at once.
// Tests that drive the relay's step methods from one thread never wait;
// with auto_advance, a wait whose condition does not hold moves the fake time
// to its deadline at once (a single-threaded test of code that pauses).
// Thread-safe.
class FakeClock : public Clock {
 public:
  explicit FakeClock(double unix_start = 1'800'000'000.0) : unix_start_(unix_start) {}

  TimePoint Now() override { return TimePoint(std::chrono::microseconds(elapsed_us_.load())); }
  double UnixNow() override { return unix_start_ + static_cast<double>(elapsed_us_.load()) / 1e6; }
  bool WaitUntil(Mutex* mu, CondVar* cv, TimePoint deadline,
                 const std::function<bool()>& wake) override REQUIRES(mu) {
    mu->AssertHeld();
    if (auto_advance_.load() && !wake()) {
      const auto now = Now();
      if (deadline > now)
        Advance(std::chrono::duration_cast<std::chrono::microseconds>(deadline - now));
      return wake();
    }
    while (!wake()) {
      if (Now() >= deadline) return false;
      cv->WaitUntil(std::chrono::steady_clock::now() + std::chrono::milliseconds(1));
    }
    return true;
  }

  void Advance(std::chrono::microseconds d) { elapsed_us_ += d.count(); }
  void set_auto_advance(bool on) { auto_advance_ = on; }
  // Milliseconds since the epoch, for the fake database's NOW().
  int64_t UnixMs() { return static_cast<int64_t>(UnixNow() * 1000); }

 private:
  const double unix_start_;
  std::atomic<int64_t> elapsed_us_{0};
  std::atomic<bool> auto_advance_{false};
};

}  // namespace outbox::testing
