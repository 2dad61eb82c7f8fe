#pragma once

#include <functional>
#include <mutex>
#include <vector>

#include "kafka/publisher.h"

namespace outbox::testing {

// An in-memory broker. In the default mode every message is acknowledged at
// once, chain by chain, as the real publisher would: a chain stops at its first
// failure and the rest of it is kNotAttempted. With hold(true), Publish only
// queues the call and the test completes it with CompleteAll().
// `decide` picks each message's outcome (default: acked).
// Thread-safe.
class FakePublisher : public Publisher {
 public:
  using DecideFn = std::function<PublishOutcome(const Message&)>;

  void Publish(std::vector<Message> messages, std::vector<std::vector<size_t>> chains,
               std::chrono::milliseconds budget, DoneFn done) override;
  bool Healthy() const override;

  void set_decide(DecideFn decide);
  void set_healthy(bool healthy);
  void hold(bool on);
  // Completes every held call. Returns how many calls were completed.
  int CompleteAll();

  // Messages acknowledged so far, in the order they were acknowledged.
  std::vector<Message> acked() const;
  int publish_calls() const;
  std::chrono::milliseconds last_budget() const;

 private:
  struct Call {
    std::vector<Message> messages;
    std::vector<std::vector<size_t>> chains;
    DoneFn done;
  };
  void Run(Call call);

  mutable std::mutex mu_;
  DecideFn decide_;
  bool healthy_ = true;
  bool hold_ = false;
  std::vector<Call> held_;
  std::vector<Message> acked_;
  int calls_ = 0;
  std::chrono::milliseconds last_budget_{0};
};

// Forwards to another publisher but fails the next `n` messages it is given
// with `result` (retryable unless said otherwise). Thread-safe.
class FailingPublisher : public Publisher {
 public:
  explicit FailingPublisher(PublisherPtr target) : target_(std::move(target)) {}

  void FailNext(int n, PublishResult result = PublishResult::kRetryable,
                std::string reason = "broker_down");
  void Publish(std::vector<Message> messages, std::vector<std::vector<size_t>> chains,
               std::chrono::milliseconds budget, DoneFn done) override;
  bool Healthy() const override { return target_->Healthy(); }

 private:
  PublisherPtr target_;
  std::mutex mu_;
  int fail_next_ = 0;
  PublishResult result_ = PublishResult::kRetryable;
  std::string reason_;
};

}  // namespace outbox::testing
