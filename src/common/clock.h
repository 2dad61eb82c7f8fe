#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "common/mutex.h"

namespace outbox {

// The seam for time. Everything the relay reasons about in the table (leases,
// next_retry_at, ages, the publish latency) comes from the database clock;
// this clock only paces the relay's own loops and measures durations.
class Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  virtual TimePoint Now() = 0;
  // Unix time in seconds (wall clock), only for the last-poll gauge.
  virtual double UnixNow() = 0;
  // Blocks until `deadline` (on this clock) or until `wake()` returns true;
  // `wake` is evaluated with `*mu` held whenever `*cv` is signalled.
  // Returns wake(). REQUIRES: cv->mutex() == mu.
  virtual bool WaitUntil(Mutex* mu, CondVar* cv, TimePoint deadline,
                         const std::function<bool()>& wake) REQUIRES(mu) = 0;
};

using ClockPtr = std::shared_ptr<Clock>;

class SystemClock : public Clock {
 public:
  TimePoint Now() override;
  double UnixNow() override;
  bool WaitUntil(Mutex* mu, CondVar* cv, TimePoint deadline,
                 const std::function<bool()>& wake) override REQUIRES(mu);
};

ClockPtr DefaultClock();

}  // namespace outbox
