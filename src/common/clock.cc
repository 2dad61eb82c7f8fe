#include "common/clock.h"

namespace outbox {

Clock::TimePoint SystemClock::Now() { return std::chrono::steady_clock::now(); }

double SystemClock::UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool SystemClock::WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            TimePoint deadline, const std::function<bool()>& wake) {
  return cv.wait_until(lock, deadline, wake);
}

ClockPtr DefaultClock() { return std::make_shared<SystemClock>(); }

}  // namespace outbox
