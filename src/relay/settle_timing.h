#pragma once

// When settling happens (docs/DESIGN.md, "Threads"): when the front batch may
// settle (SettleGate), how long the settle loop waits for one and before
// retrying a failed settle (SettleScheduler), which acknowledged batches wait
// to be written together and until when (SentGrouping), and how long a
// stopping service waits for its batches in flight (StopGrace). No threads,
// no I/O: time comes in. The settle loop (SettleLoop::SettleOrGroup) turns
// their answers into the deadline of its wait on the SettleQueue.

#include <chrono>
#include <cstddef>
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

// Which settles wait to be written together. A batch whose every row was
// acknowledged (all SENT: nothing comes due, nothing is freed for a claim)
// joins a group that is written in one statement and one commit
// (OutboxStore::SettleSent) kWindow after its first batch joined, once it
// holds kMaxRows rows, or at once when the claims ended (a stop, a paused
// or revoked service: nothing waits then). A batch with any other outcome
// (retry, DEAD, released), or more rows than kMaxRows, is written at once,
// after the group (publication order).
//
// What it saves: at everyday rates most claims carry one event, and the
// group turns a settle commit per event into one per window (at 10 events/s,
// 5 events a commit). What it costs: a row stays SENDING up to kWindow
// longer after its acknowledgement, so a relay that crashes (kill -9) or
// stalls past its lease leaves up to min(kMaxRows, rate x kWindow)
// acknowledged rows to be sent again after their lease: duplicates, never a
// loss or a reordering (a stop writes the group first). kMaxRows bounds that
// price whatever the rate: from about kMaxRows / kWindow events/s (64/s) up
// the group is written when full, still one commit per kMaxRows events
// (docs/DESIGN.md, "SENT written late, never early", says why 32). A
// peer's later event of the same aggregate waits up to kWindow longer for
// the SENT it needs.
// Not thread-safe: the settle thread's.
class SentGrouping {
 public:
  static constexpr std::chrono::milliseconds kWindow{500};
  static constexpr size_t kMaxRows = 32;

  explicit SentGrouping(std::chrono::milliseconds window = kWindow) : window_(window) {}

  // Whether a batch of `rows` rows is held for the group (rather than
  // written at once): a larger one than kMaxRows never is.
  bool Holds(size_t rows, bool all_acked, bool claims_ended) const {
    return all_acked && !claims_ended && window_.count() > 0 && rows <= kMaxRows;
  }
  // Whether a held batch of `rows` rows fits in the group; else the group is
  // written first and the batch starts the next (a group never holds more
  // than kMaxRows rows).
  bool Fits(size_t rows) const { return rows_ + rows <= kMaxRows; }
  // A held batch of `rows` rows joined the group at `now`.
  void Add(size_t rows, Clock::TimePoint now) {
    if (batches_ == 0) first_ = now;
    ++batches_;
    rows_ += rows;
  }
  bool empty() const { return batches_ == 0; }
  // The acknowledged rows held: what a crash now would send again.
  size_t rows() const { return rows_; }
  // When the group is written at the latest.
  Clock::TimePoint due() const { return first_ + window_; }
  // The group is to be written now.
  bool Due(Clock::TimePoint now, bool claims_ended) const {
    return batches_ > 0 && (claims_ended || rows_ >= kMaxRows || now >= due());
  }
  // The group was written.
  void Clear() { batches_ = rows_ = 0; }

 private:
  const std::chrono::milliseconds window_;
  Clock::TimePoint first_{};
  size_t batches_ = 0;
  size_t rows_ = 0;
};

// The shutdown's grace for one service (README "Guarantees", docs/CONFIG.md):
// how long its Relay::Stop waits for the batches in flight to be published
// and settled. Half the lease (the producer's delivery timeout, which ends a
// second before the lease) plus 5 s for the settle, at most 60 s.
std::chrono::milliseconds StopGrace(const ServiceConfig& service);

}  // namespace outbox
