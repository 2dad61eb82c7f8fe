#include "fakes/fake_publisher.h"

#include <memory>

namespace outbox::testing {

void FakePublisher::Publish(std::vector<Message> messages, std::vector<std::vector<size_t>> chains,
                            std::chrono::milliseconds budget, DoneFn done) {
  Call call{std::move(messages), std::move(chains), std::move(done)};
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_;
    last_budget_ = budget;
    if (hold_) {
      held_.push_back(std::move(call));
      return;
    }
  }
  Run(std::move(call));
}

void FakePublisher::Run(Call call) {
  std::vector<PublishOutcome> out(call.messages.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& chain : call.chains) {
      bool failed = false;
      for (size_t mi : chain) {
        if (failed) {
          out[mi] = {PublishResult::kNotAttempted, "", "an earlier event of its chain failed"};
          continue;
        }
        out[mi] =
            decide_ ? decide_(call.messages[mi]) : PublishOutcome{PublishResult::kAcked, "", ""};
        if (out[mi].result == PublishResult::kAcked)
          acked_.push_back(call.messages[mi]);
        else
          failed = true;
      }
    }
  }
  call.done(std::move(out));
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
  std::vector<Call> calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    calls.swap(held_);
  }
  for (auto& c : calls) Run(std::move(c));
  return static_cast<int>(calls.size());
}

std::vector<Message> FakePublisher::acked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return acked_;
}

std::chrono::milliseconds FakePublisher::last_budget() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_budget_;
}

int FakePublisher::publish_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

void FailingPublisher::FailNext(int n, PublishResult result, std::string reason) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_ = n;
  result_ = result;
  reason_ = std::move(reason);
}

void FailingPublisher::Publish(std::vector<Message> messages,
                               std::vector<std::vector<size_t>> chains,
                               std::chrono::milliseconds budget, DoneFn done) {
  // Messages failed here never reach the target; the rest of their chain is
  // not attempted. What is left goes to the target as one call.
  auto out = std::make_shared<std::vector<PublishOutcome>>(messages.size());
  std::vector<Message> forward;
  std::vector<size_t> origin;  // forwarded index -> original index
  std::vector<std::vector<size_t>> forward_chains;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& chain : chains) {
      std::vector<size_t> fc;
      bool failed = false;
      for (size_t mi : chain) {
        if (failed) {
          (*out)[mi] = {PublishResult::kNotAttempted, "", "an earlier event of its chain failed"};
        } else if (fail_next_ > 0) {
          --fail_next_;
          (*out)[mi] = {result_, reason_, "injected failure: " + reason_};
          failed = true;
        } else {
          fc.push_back(forward.size());
          origin.push_back(mi);
          forward.push_back(std::move(messages[mi]));
        }
      }
      if (!fc.empty()) forward_chains.push_back(std::move(fc));
    }
  }
  target_->Publish(std::move(forward), std::move(forward_chains), budget,
                   [out, origin = std::move(origin),
                    done = std::move(done)](std::vector<PublishOutcome> results) {
                     for (size_t i = 0; i < results.size(); ++i)
                       (*out)[origin[i]] = std::move(results[i]);
                     done(std::move(*out));
                   });
}

}  // namespace outbox::testing
