#pragma once

// When settling happens: the one home of the settle side's timing
// (docs/DESIGN.md, "Threads" and "Stopping"). When the front batch may settle
// (SettleGate), how long the settle loop waits before retrying a failed
// settle (SettleScheduler), and how long a stopping service waits for its
// batches in flight (StopGrace). No threads, no I/O: time comes in.

#include <chrono>
#include <cstdint>

#include "common/clock.h"
#include "config/config.h"

namespace outbox {

// When a published batch may be settled: only after its claim's transaction
// ended. The claim publishes before it commits (OutboxStore::ClaimedFn), and
// under READ COMMITTED a settle's UPDATE does not wait for a row the claim
// still locks: it reads the row's last committed version (NEW, no lease),
// finds it not matching and skips it (a semi-consistent read), so the settle
// would be stale and the rows would go again after their lease.
//
// Not thread-safe: the SettleQueue keeps it under its mutex.
class SettleGate {
 public:
  // A claim round begins; its batches carry the number returned.
  uint64_t Open() { return ++opened_; }
  // Claim round `round`'s transaction ended (committed or rolled back).
  void Close(uint64_t round) {
    if (round > closed_) closed_ = round;
  }
  // A batch published by claim round `round` may be settled.
  bool Admits(uint64_t round) const { return round <= closed_; }

 private:
  uint64_t opened_ = 0;  // claim rounds begun
  uint64_t closed_ = 0;  // the last claim round whose transaction ended
};

// When the settle loop settles next. It settles every admitted batch, waiting
// up to kAdmitWait for one (then it beats and looks whether to stop). A pass
// that stopped at a failed settle (the database is down, or the statement
// failed) is retried after a backoff: 100 ms, doubling up to 5 s, back to
// 100 ms after a pass that did not fail. The fencing on the lease token makes
// a late settle harmless if another relay took the rows over meanwhile.
// Not thread-safe: the settle thread's.
class SettleScheduler {
 public:
  static constexpr std::chrono::milliseconds kAdmitWait{200};
  static constexpr std::chrono::milliseconds kFirstBackoff{100};
  static constexpr std::chrono::milliseconds kMaxBackoff{5000};

  // A pass settled every admitted batch: the next starts at once.
  void OnSettled() { backoff_ = kFirstBackoff; }
  // A pass stopped at a failed settle at `now`: the next starts then.
  Clock::TimePoint OnFailed(Clock::TimePoint now);

 private:
  std::chrono::milliseconds backoff_ = kFirstBackoff;
};

// The shutdown's grace for one service (README "Guarantees", docs/CONFIG.md):
// how long its Relay::Stop waits for the batches in flight to be published
// and settled. Half the lease (the producer's delivery timeout, which ends a
// second before the lease) plus 5 s for the settle, at most 60 s.
std::chrono::milliseconds StopGrace(const ServiceConfig& service);

}  // namespace outbox
