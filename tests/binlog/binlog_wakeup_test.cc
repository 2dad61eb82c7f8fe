#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "binlog/wakeup.h"
#include "fakes/fake_clock.h"

using outbox::DefaultClock;
using outbox::binlog::PollWakeup;
using outbox::binlog::WakeCause;
using outbox::binlog::WakeSignal;
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
  PollWakeup w(DefaultClock(), 100ms);
  CHECK(w.MaxWait() == std::chrono::duration_cast<outbox::Clock::Duration>(100ms));
  CHECK_FALSE(w.binlog_up());
  CHECK(w.WaitUntil(DefaultClock()->Now() + 10ms) == WakeCause::kDeadline);
  w.Interrupt();
  CHECK(w.WaitUntil(DefaultClock()->Now() + 10s) == WakeCause::kChange);
}

TEST_CASE("binlog: a woken claim that finds nothing retries at most seven times", "[binlog-unit]") {
  outbox::testing::FakeClock clock;
  clock.set_auto_advance(true);
  const auto start = clock.Now();
  int calls = 0, attempts = 0;
  CHECK(outbox::binlog::ClaimAfterWakeup(
            clock, [&] { return ++calls, 0; }, &attempts) == 0);
  CHECK(attempts == 8);
  CHECK(calls == 8);
  CHECK(clock.Now() - start ==
        std::chrono::microseconds(250 + 500 + 1000 + 2000 + 4000 + 8000 + 16000));  // the bound
}

TEST_CASE("binlog: an insert that cuts a commit-race pause short starts the pauses again",
          "[binlog-unit]") {
  std::vector<std::chrono::microseconds> pauses;
  int claims = 0;
  // The third pause is cut short by another insert; the sixth claim finds rows.
  auto pause = [&](std::chrono::microseconds d) {
    pauses.push_back(d);
    return pauses.size() == 3;
  };
  int attempts = 0;
  CHECK(outbox::ClaimAfterWakeupPausing([&] { return ++claims == 6 ? 1 : 0; }, pause, &attempts) ==
        1);
  CHECK(attempts == 6);
  using us = std::chrono::microseconds;
  CHECK(pauses == std::vector<us>{us(250), us(500), us(1000), us(250), us(500)});
}

TEST_CASE("binlog: inserts that keep cutting the pauses short end the retry at its bound",
          "[binlog-unit]") {
  int claims = 0, attempts = 0;
  CHECK(outbox::ClaimAfterWakeupPausing([&] { return ++claims, 0; },
                                        [](std::chrono::microseconds) { return true; },
                                        &attempts) == 0);
  CHECK(attempts == outbox::kMaxCommitRaceClaims);
  CHECK(claims == outbox::kMaxCommitRaceClaims);
}

TEST_CASE("binlog: the commit-race retry stops at the first claim that finds rows",
          "[binlog-unit]") {
  outbox::testing::FakeClock clock;
  clock.set_auto_advance(true);
  int calls = 0, attempts = 0;
  CHECK(outbox::binlog::ClaimAfterWakeup(
            clock, [&] { return ++calls == 3 ? 7 : 0; }, &attempts) == 7);
  CHECK(attempts == 3);
  int errors = 0;
  CHECK(outbox::binlog::ClaimAfterWakeup(clock, [&] { return ++errors, -1; }) == -1);
  CHECK(errors == 1);  // an error is not a race: no retry
}
