#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

namespace outbox {

// The seam for time. Everything the relay reasons about in the table (leases,
// next_retry_at, ages) comes from the database clock; this clock only paces the
// relay's own loops and measures durations.
class Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  virtual TimePoint Now() = 0;
  // Unix time in seconds (wall clock), used only for metrics and latency.
  virtual double UnixNow() = 0;
  // Blocks until `deadline` or until `wake()` returns true; `wake` is evaluated
  // under `lock` whenever `cv` is notified. Returns wake().
  virtual bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         TimePoint deadline, const std::function<bool()>& wake) = 0;
};

using ClockPtr = std::shared_ptr<Clock>;

class SystemClock : public Clock {
 public:
  TimePoint Now() override;
  double UnixNow() override;
  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline, const std::function<bool()>& wake) override;
};

ClockPtr DefaultClock();

}  // namespace outbox
