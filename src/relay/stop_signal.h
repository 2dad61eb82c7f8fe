#pragma once

#include "common/clock.h"
#include "common/mutex.h"

namespace outbox {

// A loop's stop request, and the waits it ends. Thread-safe.
class StopSignal {
 public:
  explicit StopSignal(ClockPtr clock) : clock_(std::move(clock)) {}
  void Stop() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    stopped_ = true;
    cv_.SignalAll();
  }
  bool stopped() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return stopped_;
  }
  // Waits until `deadline` or Stop: false once stopped.
  bool SleepUntil(Clock::TimePoint deadline) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    clock_->WaitUntil(&mu_, &cv_, deadline, [this] {
      mu_.AssertHeld();
      return stopped_;
    });
    return !stopped_;
  }

 private:
  const ClockPtr clock_;
  mutable Mutex mu_;
  CondVar cv_{&mu_};
  bool stopped_ GUARDED_BY(mu_) = false;
};

}  // namespace outbox
