#include "fakes/fake_publisher.h"

namespace outbox::testing {

void FakePublisher::Send(const Message& message, SentFn sent) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++sends_;
    if (hold_) {
      held_.push_back({message, std::move(sent)});
      return;
    }
  }
  Complete({message, std::move(sent)});
}

void FakePublisher::Complete(Held held) {
  PublishOutcome outcome{PublishResult::kAcked, FailureReason::kNone, ""};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (decide_) outcome = decide_(held.message);
    if (outcome.result == PublishResult::kAcked) acked_.push_back(held.message);
  }
  held.sent(std::move(outcome));  // outside the lock: it may Send the chain's next message
}

bool FakePublisher::Healthy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return healthy_;
}

void FakePublisher::set_decide(DecideFn decide) {
  std::lock_guard<std::mutex> lock(mu_);
  decide_ = std::move(decide);
}

void FakePublisher::set_healthy(bool healthy) {
  std::lock_guard<std::mutex> lock(mu_);
  healthy_ = healthy;
}

void FakePublisher::hold(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  hold_ = on;
}

int FakePublisher::CompleteAll() {
  int completed = 0;
  for (;;) {
    std::vector<Held> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held.swap(held_);
    }
    if (held.empty()) return completed;
    for (auto& h : held) Complete(std::move(h));
    completed += static_cast<int>(held.size());
  }
}

std::vector<Message> FakePublisher::acked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return acked_;
}

int FakePublisher::sends() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sends_;
}

void FailingPublisher::FailNext(int n, PublishResult result, FailureReason reason) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_ = n;
  result_ = result;
  reason_ = reason;
}

void FailingPublisher::Send(const Message& message, SentFn sent) {
  PublishOutcome injected;
  bool fail = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_next_ > 0) {
      --fail_next_;
      fail = true;
      injected = {result_, reason_, "injected failure: " + std::string(ToLabel(reason_))};
    }
  }
  if (fail)
    sent(std::move(injected));
  else
    target_->Send(message, std::move(sent));
}

}  // namespace outbox::testing
