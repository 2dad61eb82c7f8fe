#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/failure_reason.h"

namespace outbox {

struct Message {
  std::string topic;
  std::string key;
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;
  // The row's schema_id column, for a value_format other than bytes
  // (docs/FORMATS.md); never sent as it is.
  std::optional<int32_t> schema_id = std::nullopt;
  // The end of its claim's publish budget (docs/DESIGN.md, "The lease
  // budget"): a message still in the producer's queue then, not yet on the
  // wire, is taken back (kNotAttempted, reason purged). max(): none.
  Clock::TimePoint queued_until = Clock::TimePoint::max();
};

enum class PublishResult {
  kAcked,        // the broker acknowledged it (acks=all)
  kRetryable,    // failed; worth another attempt later
  kPermanent,    // will never succeed as it is (too large, invalid topic)
  kNotAttempted  // not sent (an earlier message of its chain failed, the lease budget ran out,
                 // the producer's queue was full, it was purged from the producer's queue
                 // unsent): released without counting an attempt
};

struct PublishOutcome {
  PublishResult result = PublishResult::kNotAttempted;
  FailureReason reason = FailureReason::kNone;  // the metric label, kNone when acked
  std::string error;                            // human-readable, for last_error and logs
  // A failure whose request was on the wire: the broker may have written the
  // message (librdkafka's RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED), so its
  // retry may be a duplicate (outbox_duplicates_risk_total{cause="maybe_written"}).
  bool maybe_written = false;
};

// The seam for Kafka: produces single messages and classifies what became of
// them. Ordering (chains), the lease budget and batching are the relay's
// (src/relay/chain_publisher.h), not the publisher's.
class Publisher {
 public:
  using SentFn = std::function<void(PublishOutcome)>;
  virtual ~Publisher() = default;

  // Hands `message` to the producer. `sent` is called exactly once, from any
  // thread: with kAcked once the broker acknowledged it, else with the failure
  // — possibly before Send returns, when the producer refuses it at once.
  virtual void Send(const Message& message, SentFn sent) = 0;
  // True while the broker is believed reachable.
  virtual bool Healthy() const = 0;
};

using PublisherPtr = std::shared_ptr<Publisher>;

}  // namespace outbox
