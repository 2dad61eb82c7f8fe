#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "common/clock.h"
#include "inbox/consumer_config.h"

namespace outbox::inbox {

// outbox-inbox-consumer dlq-replay: sends the dead letters of one
// dead-letter topic back to the topic each was read from (its dlq_source
// header), with its original key, value and headers, the dlq_* headers
// removed, to the partition the Java client would choose for the key
// (murmur2, as the relay), so a replayed event lands behind its aggregate's
// other events. The consumer then processes it like any delivery: the
// inbox skips it if it had been applied.
struct ReplayOptions {
  std::string from;    // the dead-letter topic
  std::string reason;  // only dead letters whose dlq_reason starts with this ("" = all)
  int64_t first_offset = 0, last_offset = INT64_MAX;  // --offsets A-B, inclusive, per partition
  bool dry_run = false;                               // print, send nothing
  int rate = 0;                                       // messages per second at most; 0 = no limit
  outbox::ClockPtr clock;  // paces --rate and bounds a silent topic; null: the steady clock
};

// Parses "A-B" (either side may be empty: "100-", "-200"). False on bad input.
bool ParseOffsetRange(const std::string& s, int64_t* first, int64_t* last);

// Reads `from` from the start of every partition to its end as of the
// start, and replays what matches; one line per dead letter on `out`, a
// summary last. Returns the exit code: 0 when every matching dead letter
// was sent (or, dry, would be), 1 on a Kafka failure or a dead letter
// without a usable dlq_source.
int ReplayDeadLetters(const ConsumerConfig& config, const ReplayOptions& options,
                      std::ostream& out);

}  // namespace outbox::inbox
