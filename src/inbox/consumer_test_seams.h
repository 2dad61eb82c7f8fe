#pragma once

#include <cstdint>
#include <functional>

#include "common/clock.h"

namespace outbox::inbox {

// Switches for the benchmark and the fault tests, kept out of the public
// options (outbox/inbox/consumer.h): only code of this repository sets
// them, through InboxConsumer (inbox_consumer.h).
struct TestSeams {
  // Benchmark only: false skips the inbox row (every delivery is applied).
  bool use_inbox = true;
  // Benchmark only: Run returns after this many messages were handled (0: never).
  uint64_t stop_after_messages = 0;
  // Failpoints (main.cc, OUTBOX_CONSUMER_FAILPOINT): called after the
  // effect and before COMMIT, and after COMMIT before the offset is stored.
  std::function<void()> before_db_commit;
  std::function<void()> after_db_commit;
  // The next this-many seeks report a failure for their partition
  // (elems[0].err), as a broker that lost the partition would.
  int failing_seeks = 0;
  // The consumer's time (backoffs, housekeeping, the stats line); null: the
  // steady clock (outbox::DefaultClock).
  outbox::ClockPtr clock;
};

}  // namespace outbox::inbox
