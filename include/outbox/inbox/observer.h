#pragma once

#include <cstdint>
#include <string>

#include "outbox/inbox/export.h"

namespace outbox::inbox {

// What the consumer reports as it goes: the seam between the loop and its
// metrics (the library's own Prometheus metrics are one). Called on the
// consumer's thread; with concurrency N, on each member's thread at once.
class OUTBOX_INBOX_EXPORT ConsumerObserver {
 public:
  virtual ~ConsumerObserver() = default;
  // One message finished: "applied", "duplicate", "stale", "parked",
  // "unparked" (a parked version applied when its gap filled),
  // "dead_lettered", "undeliverable" (a refused dead letter, parked),
  // "dead_letter_read" (a message of a dead-letter topic, skipped).
  virtual void Outcome(const std::string& outcome, uint64_t n = 1) = 0;
  // A database or broker failure paused a partition.
  virtual void Stalled() = 0;
  // A message could not be processed this time (it is tried again, or dead-lettered).
  virtual void FailedAttempt() = 0;
  // Partitions waiting (stalled or between attempts) at one member: with
  // concurrency N, `member` is 0..N-1 and each member reports its own.
  virtual void HeldPartitions(int member, size_t n) = 0;
  // Messages not yet read on one partition (high watermark - position).
  virtual void Lag(const std::string& topic, int32_t partition, int64_t lag) = 0;
  virtual void ForgetPartition(const std::string& topic, int32_t partition) = 0;
  // t_inbox_parked for this consumer, and inbox rows deleted by retention.
  virtual void Parked(int64_t version_gaps, int64_t undeliverable, int64_t oldest_gap_age_s) = 0;
  virtual void Purged(uint64_t rows) = 0;
  // The database answered the last housekeeping query.
  virtual void DatabaseUp(bool up) = 0;
  // The handler returned Ok on a transaction rolled back under it (a
  // deadlock or a lost connection it caught): rolled back, tried again.
  virtual void LostTransaction() {}
  // A schema id looked up in the Schema Registry (not in the cache):
  // `result` ok | unavailable | denied | not_found | invalid.
  virtual void SchemaLookup(const std::string& /*result*/) {}
  // The registry stopped answering (false; events wait) or answers again.
  virtual void SchemaRegistryUp(bool /*up*/) {}
  // A value that cannot be read is dead-lettered: `reason` unknown_schema |
  // unusable_schema | not_avro | invalid_json (docs/CONSUMERS.md).
  virtual void ValueFailure(const std::string& /*reason*/) {}
};

}  // namespace outbox::inbox
