#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "kafka/publisher.h"

namespace outbox::testing {

// An in-memory broker. By default every message is acknowledged at once,
// inside Send. With hold(true), Send only queues the message and the test
// completes the queue with CompleteAll(). `decide` picks each message's
// outcome (default: acked). The chain rules are the ChainPublisher's, not
// this fake's. Thread-safe.
class FakePublisher : public Publisher {
 public:
  using DecideFn = std::function<PublishOutcome(const Message&)>;

  void Send(const Message& message, SentFn sent) override;
  bool Healthy() const override;

  void set_decide(DecideFn decide);
  void set_healthy(bool healthy);
  void hold(bool on);
  // Completes every held message, and those that their completions send
  // meanwhile (the next message of a chain). Returns how many it completed.
  int CompleteAll();

  // Messages acknowledged so far, in the order they were acknowledged.
  std::vector<Message> acked() const;
  int sends() const;

 private:
  struct Held {
    Message message;
    SentFn sent;
  };
  void Complete(Held held);

  mutable std::mutex mu_;
  DecideFn decide_;
  bool healthy_ = true;
  bool hold_ = false;
  std::vector<Held> held_;
  std::vector<Message> acked_;
  int sends_ = 0;
};

// Forwards to another publisher but fails the next `n` messages it is given
// with `result` (retryable unless said otherwise), as leveldb's EnvWrapper
// overrides one call. Thread-safe.
class FailingPublisher : public Publisher {
 public:
  explicit FailingPublisher(PublisherPtr target) : target_(std::move(target)) {}

  void FailNext(int n, PublishResult result = PublishResult::kRetryable,
                FailureReason reason = FailureReason::kBrokerDown);
  void Send(const Message& message, SentFn sent) override;
  bool Healthy() const override { return target_->Healthy(); }

 private:
  PublisherPtr target_;
  std::mutex mu_;
  int fail_next_ = 0;
  PublishResult result_ = PublishResult::kRetryable;
  FailureReason reason_ = FailureReason::kBrokerDown;
};

}  // namespace outbox::testing
