#pragma once

// When a published batch may be settled: only after its claim's transaction
// ended. The claim publishes before it commits (OutboxStore::ClaimedFn), and
// under READ COMMITTED a settle's UPDATE does not wait for a row the claim
// still locks: it reads the row's last committed version (NEW, no lease),
// finds it not matching and skips it (a semi-consistent read), so the settle
// would be stale and the rows would go again after their lease.
//
// Not thread-safe: the SettleQueue keeps it under its mutex.

#include <cstdint>

namespace outbox {

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

}  // namespace outbox
