#pragma once

// The seam between a service's claim loop and what wakes it: a poll timer
// (`wakeup: poll`, PollWakeup below) or its server's binary log
// (`wakeup: binlog`, BinlogWakeup in src/binlog/wakeup.h). The relay waits on
// a WakeupSource (src/relay/relay.cc, ClaimLoop); docs/BINLOG.md "How the relay
// plugs in" describes the loop. Header-only.

#include <algorithm>
#include <array>
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
              // commit-race retry (ClaimAfterWakeup)
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
  // The longest the loop may wait without a claim: poll_interval_ms for
  // `wakeup: poll` and while the binlog stream is down; the safety poll
  // interval (30 s) while it is up.
  virtual Clock::Duration MaxWait() const = 0;
  // Wakes the loop (shutdown, or a test). Sticky like a wake-up.
  virtual void Interrupt() = 0;
  // outbox_wakeup_binlog_up (only exported with `wakeup: binlog`), and why not.
  virtual bool binlog_up() const = 0;
  virtual std::string reason() const = 0;
  // Failover wiring (issue 25): the relay's database session now leads to
  // another server (its identity changed after a reconnect). BinlogWakeup
  // reopens its stream through mysql.host; a poll timer has nothing to do.
  virtual void DatabaseServerChanged() {}
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
    return cause;
  }

 private:
  ClockPtr clock_;
  Mutex mu_;
  CondVar cv_{&mu_};
  bool pending_ GUARDED_BY(mu_) = false;
  bool insert_ GUARDED_BY(mu_) = false;
};

// `wakeup: poll`: only timers and Interrupt wake the loop.
class PollWakeup : public WakeupSource {
 public:
  PollWakeup(ClockPtr clock, Clock::Duration poll_interval)
      : signal_(std::move(clock)), poll_interval_(poll_interval) {}
  WakeCause WaitUntil(Clock::TimePoint deadline) override { return signal_.WaitUntil(deadline); }
  Clock::Duration MaxWait() const override { return poll_interval_; }
  void Interrupt() override { signal_.Notify(); }
  bool binlog_up() const override { return false; }
  std::string reason() const override { return "wakeup: poll"; }

 private:
  WakeSignal signal_;
  const Clock::Duration poll_interval_;
};

// The commit race: the binary log is written before the InnoDB commit is
// visible, so a claim right after a wake-up can find the new row still
// locked and skip it (FOR UPDATE SKIP LOCKED). Measured on MariaDB 10.11:
// up to half of the immediate claims when the wake-up arrives before the
// writer's COMMIT returns, the row visible within 2.3 ms and mostly within
// a few hundred microseconds (docs/BINLOG.md "Measured"). A woken claim that
// found nothing therefore tries again after these pauses, stopping at the
// first claim that finds rows: the first pause is short because most rows
// show within it; at most 7 extra claims and 31.75 ms per wake-up.
inline constexpr std::array<std::chrono::microseconds, 7> kCommitRaceRetry = {
    std::chrono::microseconds(250), std::chrono::microseconds(500), std::chrono::milliseconds(1),
    std::chrono::milliseconds(2),   std::chrono::milliseconds(4),   std::chrono::milliseconds(8),
    std::chrono::milliseconds(16)};

// The whole commit-race retry: how long after an insert's wake-up its row
// may still be invisible to a claim that the retry would wait for.
inline constexpr std::chrono::microseconds CommitRaceWindow() {
  std::chrono::microseconds sum{0};
  for (auto pause : kCommitRaceRetry) sum += pause;
  return sum;
}

// At most this many claims per ClaimAfterWakeupPausing, however many inserts cut
// its pauses short: with binlog_format MIXED every insert into the database
// wakes the loop, and a busy table of the service's own that is not the
// outbox must not keep the retry going.
inline constexpr int kMaxCommitRaceClaims = 2 * (static_cast<int>(kCommitRaceRetry.size()) + 1);

// Runs `claim` (returns how many rows it claimed; < 0 for an error, which
// ends the retries) once, then again after each kCommitRaceRetry pause while
// it claims nothing. `pause(d)` waits `d` and returns true when something
// that may have made a row claimable ended it early (another insert's
// wake-up; the relay also counts an acknowledgement that freed deferred
// rows): the next claim comes at once and the pauses start again from the
// first, for another insert's own commit race (a row committed during a
// 16 ms pause would otherwise wait out the pause). Returns the last claim's result; *attempts
// (optional) gets the number of claims made. For a claim made because WaitUntil returned
// WakeCause::kInsert.
template <typename ClaimFn, typename PauseFn>
int ClaimAfterWakeupPausing(ClaimFn&& claim, PauseFn&& pause, int* attempts = nullptr) {
  int claimed = claim();
  int made = 1;
  size_t next = 0;
  while (claimed == 0 && next < kCommitRaceRetry.size() && made < kMaxCommitRaceClaims) {
    next = pause(kCommitRaceRetry[next]) ? 0 : next + 1;
    claimed = claim();
    ++made;
  }
  if (attempts) *attempts = made;
  return claimed;
}

// ClaimAfterWakeupPausing with pauses that only `clock` ends.
template <typename ClaimFn>
int ClaimAfterWakeup(Clock& clock, ClaimFn&& claim, int* attempts = nullptr) {
  auto pause = [&clock](std::chrono::microseconds d) {
    Mutex mu;
    CondVar cv(&mu);
    MutexLock lock(&mu);
    clock.WaitUntil(&mu, &cv, clock.Now() + d, [] { return false; });
    return false;
  };
  return ClaimAfterWakeupPausing(std::forward<ClaimFn>(claim), pause, attempts);
}

}  // namespace outbox
