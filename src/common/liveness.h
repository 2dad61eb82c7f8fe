#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace outbox {

class LivenessRegistry;

// One loop's proof of progress. The loop that owns it calls Beat(); /healthz
// and the systemd watchdog (src/app/) ask the registry which loops are late.
//
// The rule every registered loop follows:
//   - Beat() at least once per iteration, after the iteration's work (a claim
//     round, a settle pass, a housekeeping tick) completed.
//   - A loop that waits for work (an idle poll, a condition variable, a
//     binlog wake-up) wakes and beats at least once per poll interval, so
//     that waiting is never mistaken for a hang.
//   - The stall limit is longer than the longest legitimate iteration: the
//     longest wait plus the longest call the loop makes, with that call's own
//     timeouts (mysql read/write timeouts, the lease). A loop past its limit
//     is hung (a call that never returns, a deadlock), not merely slow.
//   - Database or broker outages are not stalls: a loop that fails a call and
//     backs off still completes its iteration and beats.
//
// Thread-safe: Beat() is one atomic store of the clock's Now() and may be
// called from any thread. Dropping the last HeartbeatPtr unregisters it.
class Heartbeat {
 public:
  void Beat();
  const std::string& name() const { return name_; }
  std::chrono::milliseconds stall_limit() const { return stall_limit_; }

 private:
  friend class LivenessRegistry;
  Heartbeat(ClockPtr clock, std::string name, std::chrono::milliseconds stall_limit);

  // Constant after construction.
  const ClockPtr clock_;
  const std::string name_;
  const std::chrono::milliseconds stall_limit_;
  // Clock::Now() of the last beat, as a count of Clock::Duration ticks.
  std::atomic<Clock::Duration::rep> last_beat_;
};

using HeartbeatPtr = std::shared_ptr<Heartbeat>;

// A loop whose last beat is older than its stall limit.
struct Stall {
  std::string name;
  std::chrono::milliseconds since_last_beat;
  std::chrono::milliseconds stall_limit;
};

// The loops of the process and their heartbeats. One per daemon (created in
// src/app/daemon.cc and handed to every service); tests make their own with a
// FakeClock. Thread-safe. Heartbeats keep their own reference to the clock,
// so they may outlive the registry.
class LivenessRegistry {
 public:
  explicit LivenessRegistry(ClockPtr clock);

  // Registers a loop, counted as having beaten now. `name` says which loop of
  // which service, e.g. "order/claim"; it is what /healthz prints.
  // REQUIRES: stall_limit > 0.
  HeartbeatPtr Register(std::string name, std::chrono::milliseconds stall_limit);

  // Every registered loop whose last beat is older than its stall limit, in
  // registration order; empty while every loop makes progress.
  std::vector<Stall> Stalled() const;

  // Names of the loops currently registered, in registration order.
  std::vector<std::string> Names() const;

 private:
  // Constant after construction.
  const ClockPtr clock_;

  mutable Mutex mu_;
  // Expired entries (dropped heartbeats) are pruned lazily, also by const
  // readers.
  mutable std::vector<std::weak_ptr<Heartbeat>> beats_ GUARDED_BY(mu_);
};

// One line per stalled loop, e.g. "order/claim: no progress for 95.0 s (stall
// limit 60.0 s)", for /healthz and the watchdog's log line.
std::string DescribeStalls(const std::vector<Stall>& stalls);

}  // namespace outbox
