#pragma once

// The vocabulary between a service's claim loop and what wakes it: a poll
// timer (`wakeup: poll`, PollWakeup below) or its server's binary log
// (`wakeup: binlog`, BinlogWakeup in src/binlog/wakeup.h). The claim loop
// (src/relay/claim_loop.cc) waits on a WakeupSource; what it does after a
// wake-up of each cause is the ClaimScheduler's (src/relay/claim_scheduler.h).
// Header-only.

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "common/clock.h"
#include "common/mutex.h"

namespace outbox {

// Why WaitUntil returned.
enum class WakeCause {
  kDeadline,  // a timer: poll
  kChange,    // a commit that only updated or deleted rows, a stream
              // up/down change, Interrupt: claim once
  kInsert,    // a commit that may have inserted rows: claim with the
              // commit-race retry (ClaimScheduler)
};

// What a claim loop waits on between claims. (Not "Wakeup": that name is the
// config enum in src/config/config.h.)
//
// Thread-safety: WaitUntil from the service's loop thread only; Notify,
// Interrupt and the accessors from any thread.
class WakeupSource {
 public:
  virtual ~WakeupSource() = default;

  // Blocks until a wake-up arrived since the previous WaitUntil returned,
  // Interrupt() was called, or `deadline`. A wake-up that arrives while the
  // loop is claiming is kept for the next call (never lost); several are
  // merged (kInsert wins).
  virtual WakeCause WaitUntil(Clock::TimePoint deadline) = 0;
  // Wakes the loop (shutdown, or a test). Sticky like a wake-up.
  virtual void Interrupt() = 0;
  // The binlog stream wakes the loop (outbox_wakeup_binlog_up, only exported
  // with `wakeup: binlog`), and why not. While it does not, the loop polls.
  virtual bool binlog_up() const = 0;
  // How many insert commits the last kInsert that WaitUntil returned merged
  // (0 after any other cause). WaitUntil's thread only.
  virtual int inserts_in_last_wake() const { return 0; }
  virtual std::string reason() const = 0;
  // The relay's database session was opened again after a lost connection
  // or a read-only answer, perhaps on another server (a failover): a binlog
  // source reopens its stream through mysql.host; a poll timer has nothing
  // to do.
  virtual void DatabaseReconnected() {}
};

using WakeupSourcePtr = std::unique_ptr<WakeupSource>;

// A sticky flag with a condition variable: the cheap callback a subscriber
// hands to the WakeupHub (Notify: lock, set, notify; never blocks for long).
class WakeSignal {
 public:
  explicit WakeSignal(ClockPtr clock) : clock_(std::move(clock)) {}
  void Notify(bool insert = false) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    pending_ = true;
    insert_ = insert_ || insert;
    if (insert) ++inserts_;
    cv_.SignalAll();
  }
  // What came since the last call (and consumes it), or kDeadline.
  WakeCause WaitUntil(Clock::TimePoint deadline) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    const bool woken = clock_->WaitUntil(&mu_, &cv_, deadline, [this] {
      mu_.AssertHeld();
      return pending_;
    });
    const WakeCause cause = !woken    ? WakeCause::kDeadline
                            : insert_ ? WakeCause::kInsert
                                      : WakeCause::kChange;
    pending_ = insert_ = false;
    last_inserts_ = cause == WakeCause::kInsert ? inserts_ : 0;
    inserts_ = 0;
    return cause;
  }
  int inserts_in_last_wake() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return last_inserts_;
  }

 private:
  ClockPtr clock_;
  mutable Mutex mu_;
  CondVar cv_{&mu_};
  bool pending_ GUARDED_BY(mu_) = false;
  bool insert_ GUARDED_BY(mu_) = false;
  int inserts_ GUARDED_BY(mu_) = 0;       // insert notifications since the last wake-up
  int last_inserts_ GUARDED_BY(mu_) = 0;  // merged into the last kInsert returned
};

// `wakeup: poll`: only timers and Interrupt wake the loop.
class PollWakeup : public WakeupSource {
 public:
  explicit PollWakeup(ClockPtr clock) : signal_(std::move(clock)) {}
  WakeCause WaitUntil(Clock::TimePoint deadline) override { return signal_.WaitUntil(deadline); }
  void Interrupt() override { signal_.Notify(); }
  bool binlog_up() const override { return false; }
  std::string reason() const override { return "wakeup: poll"; }

 private:
  WakeSignal signal_;
};

}  // namespace outbox
