#pragma once

// The vocabulary between a service's claim loop and what wakes it
// (docs/DESIGN.md, "Glossary"): the wake-up source it waits on, a poll
// timer (`wakeup: poll`, PollWakeupSource below) or its server's binary log
// (`wakeup: binlog`, BinlogWakeupSource in
// src/binlog/binlog_wakeup_source.h), and the cause of each wake-up. The claim loop
// (src/relay/claim_loop.cc) waits on a WakeupSource; what it does after a
// wake-up of each cause is the ClaimScheduler's (src/relay/claim_scheduler.h).
// Header-only.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "common/clock.h"
#include "common/mutex.h"

namespace outbox {

// Why WaitUntil returned.
enum class WakeCause {
  kDeadline,  // a timer: poll
  kChange,    // a commit that only updated or deleted rows (not one of the
              // relay's own), a stream up/down change, Interrupt: a pass,
              // and a look after the commit race (ClaimScheduler)
  kInsert,    // a commit that may have inserted rows: claim with the
              // commit-race retry (ClaimScheduler)
};

// What a claim loop waits on between claims: the wake-up source of its
// service's WakeupMode (src/config/config.h).
//
// Thread-safety: WaitUntil from the service's loop thread only; Interrupt,
// the own-change calls and the accessors from any thread.
class WakeupSource {
 public:
  virtual ~WakeupSource() = default;

  // Blocks until a wake-up arrived since the previous WaitUntil returned,
  // Interrupt() was called, or `deadline`. A wake-up that arrives while the
  // loop is claiming is kept for the next call (never lost); several are
  // merged (kInsert wins). The relay's own commits are not wake-ups
  // (ExpectOwnChange).
  virtual WakeCause WaitUntil(Clock::TimePoint deadline) = 0;
  // Wakes the loop (shutdown, or a test). Sticky like a wake-up.
  virtual void Interrupt() = 0;
  // The binlog stream wakes the loop (outbox_wakeup_binlog_up, only exported
  // with `wakeup: binlog`), and why not. While it does not, the loop polls.
  virtual bool binlog_up() const = 0;
  virtual std::string reason() const = 0;
  // The relay's database session was opened again after a lost connection
  // or a read-only answer, perhaps on another server (a failover): a binlog
  // source reopens its stream through mysql.host; a poll timer has nothing
  // to do.
  virtual void DatabaseReconnected() {}
  // The relay's own write commits (a claim's, a settle's) come back from the
  // binary log like anyone's: a binlog source does not wake the loop for
  // them (binlog::WakeSignal). ExpectOwnChange: one such commit that changed rows
  // has returned; REQUIRES: the loop has not waited since (its own thread
  // calls it). From other threads: BeginOwnChange before a write that makes
  // at most `at_most` commits, and EndOwnChange after it with the commits
  // that changed rows (0 if it failed or changed nothing); then its events
  // cannot wake a loop that waits meanwhile, even when they arrive before
  // the commit returns.
  virtual void ExpectOwnChange() {}
  virtual void BeginOwnChange(int at_most) { static_cast<void>(at_most); }
  virtual void EndOwnChange(int at_most, int commits) {
    static_cast<void>(at_most);
    static_cast<void>(commits);
  }
  // The insert commits merged into the last kInsert wake-up WaitUntil
  // returned (0 with `wakeup: poll`).
  virtual int inserts_in_last_wake() const { return 0; }
};

using WakeupSourcePtr = std::unique_ptr<WakeupSource>;

// `wakeup: poll`: only timers and Interrupt wake the loop.
class PollWakeupSource : public WakeupSource {
 public:
  explicit PollWakeupSource(ClockPtr clock) : clock_(std::move(clock)) {}
  WakeCause WaitUntil(Clock::TimePoint deadline) override {
    MutexLock lock(&mu_);
    const bool woken = clock_->WaitUntil(&mu_, &cv_, deadline, [this] {
      mu_.AssertHeld();
      return woken_;
    });
    woken_ = false;
    return woken ? WakeCause::kChange : WakeCause::kDeadline;
  }
  void Interrupt() override {
    MutexLock lock(&mu_);
    woken_ = true;
    cv_.SignalAll();
  }
  bool binlog_up() const override { return false; }
  std::string reason() const override { return "wakeup: poll"; }

 private:
  const ClockPtr clock_;
  Mutex mu_;
  CondVar cv_{&mu_};
  bool woken_ GUARDED_BY(mu_) = false;  // Interrupt, until the next WaitUntil
};

}  // namespace outbox
