#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "binlog/wakeup.h"
#include "fakes/fake_clock.h"

using outbox::DefaultClock;
using outbox::PollWakeup;
using outbox::WakeCause;
using outbox::WakeSignal;
using outbox::testing::FakeClock;
using namespace std::chrono_literals;

namespace {

// A WakeSignal on a fake clock, and what a wait that does not block finds.
struct Signal {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  WakeSignal signal{clock};
  WakeCause Take() { return signal.WaitUntil(clock->Now()); }
};

}  // namespace

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

TEST_CASE(
    "binlog: the claim loop's own commit does not wake it whether its event comes "
    "after or before ExpectOwnChange",
    "[binlog-unit]") {
  Signal s;
  // The event after the claim returned.
  s.signal.ExpectOwnChange();
  s.signal.Notify(false);
  CHECK(s.Take() == WakeCause::kDeadline);
  // The event before (the log is written before the commit returns): the
  // wake-up it left is withdrawn.
  s.signal.Notify(false);
  s.signal.ExpectOwnChange();
  CHECK(s.Take() == WakeCause::kDeadline);
  // Nothing left over: the next update-only commit wakes.
  s.signal.Notify(false);
  CHECK(s.Take() == WakeCause::kChange);
}

TEST_CASE(
    "binlog: a foreign change that arrives while an own commit is expected wakes the loop "
    "when the own event arrives",
    "[binlog-unit]") {
  Signal s;
  s.signal.ExpectOwnChange();
  s.signal.Notify(false);  // a foreign change: taken for the own event
  CHECK(s.Take() == WakeCause::kDeadline);
  s.signal.Notify(false);  // the own event: one more than expected
  CHECK(s.Take() == WakeCause::kChange);
  CHECK(s.Take() == WakeCause::kDeadline);  // nothing left over
  // The same when the foreign change came just before the claim returned.
  s.signal.Notify(false);
  s.signal.ExpectOwnChange();
  CHECK(s.Take() == WakeCause::kDeadline);
  s.signal.Notify(false);
  CHECK(s.Take() == WakeCause::kChange);
}

TEST_CASE(
    "binlog: a write expected before it wakes nothing, and a change taken for a commit it "
    "did not make wakes when it ends",
    "[binlog-unit]") {
  Signal s;
  // A settle (at most two commits) that made one: its event comes while it
  // writes, before it knows it committed, or after.
  s.signal.BeginOwnChange(2);
  s.signal.Notify(false);
  CHECK(s.Take() == WakeCause::kDeadline);
  s.signal.EndOwnChange(2, 1);
  CHECK(s.Take() == WakeCause::kDeadline);
  s.signal.BeginOwnChange(2);
  s.signal.EndOwnChange(2, 2);
  s.signal.Notify(false);
  s.signal.Notify(false);
  CHECK(s.Take() == WakeCause::kDeadline);
  // A foreign change while a write that then changed nothing was expected.
  s.signal.BeginOwnChange(2);
  s.signal.Notify(false);
  CHECK(s.Take() == WakeCause::kDeadline);
  s.signal.EndOwnChange(2, 0);
  CHECK(s.Take() == WakeCause::kChange);
  // ... and while one that made a commit was: the change wakes when that
  // commit's event comes.
  s.signal.BeginOwnChange(2);
  s.signal.Notify(false);
  s.signal.EndOwnChange(2, 1);
  CHECK(s.Take() == WakeCause::kDeadline);
  s.signal.Notify(false);  // its own event
  CHECK(s.Take() == WakeCause::kChange);
  // The loop waited meanwhile, and a claim of its own came between.
  s.signal.BeginOwnChange(2);
  s.signal.Notify(false);  // the claim's event
  s.signal.ExpectOwnChange();
  s.signal.Notify(false);  // the settle's
  s.signal.EndOwnChange(2, 1);
  CHECK(s.Take() == WakeCause::kDeadline);
  s.signal.Notify(false);
  CHECK(s.Take() == WakeCause::kChange);
}

TEST_CASE("binlog: expectations whose events never come are forgotten after a second",
          "[binlog-unit]") {
  Signal s;
  s.signal.ExpectOwnChange();  // its event never comes
  s.clock->Advance(999ms);
  s.signal.Notify(false);  // still taken for the own event
  CHECK(s.Take() == WakeCause::kDeadline);
  s.signal.ExpectOwnChange();
  s.signal.BeginOwnChange(2);
  s.signal.EndOwnChange(2, 1);
  s.clock->Advance(1001ms);
  s.signal.Notify(false);  // a foreign change wakes again
  CHECK(s.Take() == WakeCause::kChange);
  // The newest expectation keeps the older ones.
  s.signal.ExpectOwnChange();
  s.clock->Advance(900ms);
  s.signal.ExpectOwnChange();
  s.clock->Advance(900ms);
  s.signal.Notify(false);
  s.signal.Notify(false);
  CHECK(s.Take() == WakeCause::kDeadline);
}

TEST_CASE("binlog: a stream up or down change always wakes and resets what was expected",
          "[binlog-unit]") {
  Signal s;
  s.signal.ExpectOwnChange();
  s.signal.BeginOwnChange(2);
  s.signal.StreamChanged();
  CHECK(s.Take() == WakeCause::kChange);
  s.signal.Notify(false);  // not taken for the own events before the change
  CHECK(s.Take() == WakeCause::kChange);
  // A change still pending is served by the stream's wake-up.
  s.signal.Notify(false);
  s.signal.StreamChanged();
  CHECK(s.Take() == WakeCause::kChange);
  CHECK(s.Take() == WakeCause::kDeadline);
}

TEST_CASE("binlog: Interrupt and inserts always wake, whatever is expected", "[binlog-unit]") {
  Signal s;
  s.signal.ExpectOwnChange();
  s.signal.Notify(true);
  CHECK(s.Take() == WakeCause::kInsert);
  s.signal.BeginOwnChange(1);
  s.signal.Wake();
  CHECK(s.Take() == WakeCause::kChange);
  // Neither counted against the two expectations: two events are still own.
  s.signal.Notify(false);
  s.signal.Notify(false);
  CHECK(s.Take() == WakeCause::kDeadline);
  s.signal.EndOwnChange(1, 1);
  CHECK(s.Take() == WakeCause::kDeadline);
  PollWakeup poll(s.clock);
  poll.ExpectOwnChange();  // no-ops
  poll.BeginOwnChange(2);
  poll.Interrupt();
  CHECK(poll.WaitUntil(s.clock->Now()) == WakeCause::kChange);
  CHECK(poll.inserts_in_last_wake() == 0);
}

TEST_CASE("binlog: the insert commits merged into one wake-up are counted", "[binlog-unit]") {
  Signal s;
  CHECK(s.signal.inserts_in_last_wake() == 0);
  s.signal.Notify(true);
  s.signal.Notify(false);
  s.signal.Notify(true);
  s.signal.Notify(true);
  CHECK(s.Take() == WakeCause::kInsert);
  CHECK(s.signal.inserts_in_last_wake() == 3);
  s.signal.Notify(true);
  CHECK(s.Take() == WakeCause::kInsert);
  CHECK(s.signal.inserts_in_last_wake() == 1);
  // Other wake-ups leave the last insert wake-up's count.
  s.signal.Wake();
  CHECK(s.Take() == WakeCause::kChange);
  CHECK(s.signal.inserts_in_last_wake() == 1);
}
