#include "common/clock.h"

#include <cassert>

namespace outbox {

Clock::TimePoint SystemClock::Now() { return std::chrono::steady_clock::now(); }

double SystemClock::UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool SystemClock::WaitUntil(Mutex* mu, CondVar* cv, TimePoint deadline,
                            const std::function<bool()>& wake) {
  assert(cv->mutex() == mu);
  (void)mu;
  while (!wake()) {
    if (!cv->WaitUntil(deadline) && std::chrono::steady_clock::now() >= deadline) return wake();
  }
  return true;
}

ClockPtr DefaultClock() { return std::make_shared<SystemClock>(); }

}  // namespace outbox
