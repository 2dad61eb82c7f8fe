#pragma once

// WakeSignal: the wake-up signal of `wakeup: binlog` (docs/DESIGN.md,
// "Glossary"). Header-only.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/wakeup_source.h"  // WakeCause

namespace outbox {
namespace binlog {

// What wakes a claim loop from its server's binary log, with a condition
// variable: the cheap callback a subscriber hands to BinlogStreams (lock,
// count, notify; never blocks for long), and the WaitUntil of the
// BinlogWakeupSource (src/binlog/binlog_wakeup_source.h).
//
// The stream announces the relay's own claims and settles like anyone's
// commits; they must not wake its own claim loop, which has nothing to do
// for them. So commits that only updated or deleted rows (Notify(false)) are
// counted against the relay's own in a signed balance: > 0, changes no one
// expected, which wake the loop; < 0, own commits whose events are still to
// come. The loop's own thread expects its commit after it returned
// (ExpectOwnChange): the event came before (and is withdrawn, the loop was
// not waiting) or comes after (and is taken for it). Another thread, which
// the loop may be waiting for, expects its events before it writes
// (BeginOwnChange) and says after how many there were (EndOwnChange). Either
// way an own commit wakes nothing, whatever the order of its event.
// The bound this costs: a foreign change that arrives while own events are
// expected (or arrived just before a loop's own claim returned) wakes the
// loop only when those events arrive or the write ends, normally within
// milliseconds. Expectations whose events never come are forgotten
// kExpectFor after the newest (the stream went down, which wakes the loop
// and resets the balance anyway; or the commit was not logged). Inserts,
// Wake (Interrupt) and stream up/down changes always wake and are not
// counted in the balance.
//
// Thread-safety: all methods from any thread; WaitUntil from one at a time.
class WakeSignal {
 public:
  // How long expectations are kept after the newest.
  static constexpr std::chrono::seconds kExpectFor{1};

  explicit WakeSignal(ClockPtr clock) : clock_(std::move(clock)) {}

  // A commit to the table: `insert` when it may have inserted rows (always
  // wakes), else an update or delete (wakes unless it is the relay's own).
  void Notify(bool insert = false) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (insert) {
      ++inserts_;
    } else {
      Expire(clock_->Now());
      ++balance_;
    }
    if (Pending()) cv_.SignalAll();
  }
  // One of the relay's own write commits that changed rows has returned: its
  // event in the log is not a reason to wake. REQUIRES: no WaitUntil since
  // the commit (the loop's own thread calls it).
  void ExpectOwnChange() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Expect(1);
  }
  // Before an own write that makes at most `at_most` commits; after it,
  // EndOwnChange with the same `at_most` and the commits that changed rows.
  // Meanwhile up to `at_most` update-only commits are taken for its own.
  void BeginOwnChange(int at_most) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Expect(at_most);
  }
  void EndOwnChange(int at_most, int commits) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Expire(clock_->Now());
    balance_ += at_most - std::min(commits, at_most);
    if (Pending()) cv_.SignalAll();  // changes taken for commits it did not make
  }
  // Always wakes (Interrupt); not a change to the balance.
  void Wake() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    woken_ = true;
    cv_.SignalAll();
  }
  // The stream went up or down: what was expected may never come (and the
  // loop polls, or stops polling). Wakes.
  void StreamChanged() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    balance_ = 0;
    woken_ = true;
    cv_.SignalAll();
  }
  // What came since the last call (and consumes it), or kDeadline.
  WakeCause WaitUntil(Clock::TimePoint deadline) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Expire(clock_->Now());
    const bool woken = clock_->WaitUntil(&mu_, &cv_, deadline, [this] {
      mu_.AssertHeld();
      return Pending();
    });
    const WakeCause cause = !woken         ? WakeCause::kDeadline
                            : inserts_ > 0 ? WakeCause::kInsert
                                           : WakeCause::kChange;
    if (cause == WakeCause::kInsert) last_inserts_ = inserts_;
    balance_ = std::min<int64_t>(balance_, 0);  // the changes are served; expectations stay
    woken_ = false;
    inserts_ = 0;
    return cause;
  }
  // The insert notifications merged into the last kInsert WaitUntil returned.
  int inserts_in_last_wake() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return last_inserts_;
  }

 private:
  bool Pending() const REQUIRES(mu_) { return woken_ || inserts_ > 0 || balance_ > 0; }
  void Expect(int n) REQUIRES(mu_) {
    const Clock::TimePoint now = clock_->Now();
    Expire(now);
    expected_at_ = now;
    balance_ -= n;  // a change already pending for it is withdrawn
  }
  void Expire(Clock::TimePoint now) REQUIRES(mu_) {
    if (balance_ < 0 && now - expected_at_ > kExpectFor) balance_ = 0;
  }

  const ClockPtr clock_;
  mutable Mutex mu_;
  CondVar cv_{&mu_};
  bool woken_ GUARDED_BY(mu_) = false;  // Wake, StreamChanged
  int inserts_ GUARDED_BY(mu_) = 0;     // insert notifications not yet taken
  int last_inserts_ GUARDED_BY(mu_) = 0;
  int64_t balance_ GUARDED_BY(mu_) = 0;                // see the class comment
  Clock::TimePoint expected_at_ GUARDED_BY(mu_) = {};  // the newest expectation
};

}  // namespace binlog
}  // namespace outbox
