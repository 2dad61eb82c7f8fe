#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace outbox {

struct Message {
  std::string topic;
  std::string key;
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;
};

enum class PublishResult {
  kAcked,        // the broker acknowledged it (acks=all)
  kRetryable,    // failed; worth another attempt later
  kPermanent,    // will never succeed as it is (too large, invalid topic)
  kNotAttempted  // not sent: an earlier message of its chain failed, or shutdown
};

struct PublishOutcome {
  PublishResult result = PublishResult::kNotAttempted;
  std::string reason;  // metric label: timeout, broker_down, message_too_large, ...
  std::string error;   // human-readable, for last_error and logs
};

// The seam for Kafka.
class Publisher {
 public:
  using DoneFn = std::function<void(std::vector<PublishOutcome>)>;
  virtual ~Publisher() = default;

  // Publishes `messages`. `chains` partitions their indexes into sequences
  // that must reach the broker in order: a chain's next message is sent only
  // after the previous one was acknowledged, and a failure marks the rest of
  // the chain kNotAttempted. A chain's message is not started later than
  // `budget` after the call (it is kNotAttempted instead), so that a batch
  // settles before its lease expires even when the broker is slow. `done` is
  // called exactly once, from any thread, with one outcome per message.
  virtual void Publish(std::vector<Message> messages, std::vector<std::vector<size_t>> chains,
                       std::chrono::milliseconds budget, DoneFn done) = 0;
  // True while the broker is believed reachable.
  virtual bool Healthy() const = 0;
};

using PublisherPtr = std::shared_ptr<Publisher>;

}  // namespace outbox
