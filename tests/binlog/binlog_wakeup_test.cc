#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "binlog/wakeup.h"

using outbox::DefaultClock;
using outbox::PollWakeup;
using outbox::WakeCause;
using outbox::WakeSignal;
using namespace std::chrono_literals;

TEST_CASE("binlog: a wake-up that arrives while the loop claims is kept for its next wait",
          "[binlog-unit]") {
  WakeSignal signal(DefaultClock());
  signal.Notify();  // arrives before the loop waits
  const auto far = DefaultClock()->Now() + 10s;
  CHECK(signal.WaitUntil(far) == WakeCause::kChange);  // returns at once, woken
  // Consumed: the next wait runs to its deadline.
  CHECK(signal.WaitUntil(DefaultClock()->Now() + 20ms) == WakeCause::kDeadline);
  // An insert among several wake-ups wins.
  signal.Notify(false);
  signal.Notify(true);
  signal.Notify(false);
  CHECK(signal.WaitUntil(far) == WakeCause::kInsert);
}

TEST_CASE("binlog: a wake-up from another thread ends a wait before its deadline",
          "[binlog-unit]") {
  WakeSignal signal(DefaultClock());
  std::thread notifier([&] {
    std::this_thread::sleep_for(20ms);
    signal.Notify(true);
  });
  const auto start = DefaultClock()->Now();
  CHECK(signal.WaitUntil(start + 30s) == WakeCause::kInsert);
  CHECK(DefaultClock()->Now() - start < 30s);
  notifier.join();
}

TEST_CASE("binlog: wakeup poll waits poll_interval and only Interrupt wakes it", "[binlog-unit]") {
  PollWakeup w(DefaultClock());
  CHECK_FALSE(w.binlog_up());
  CHECK(w.WaitUntil(DefaultClock()->Now() + 10ms) == WakeCause::kDeadline);
  w.Interrupt();
  CHECK(w.WaitUntil(DefaultClock()->Now() + 10s) == WakeCause::kChange);
}
