#include "schema/schema_publisher.h"

#include <algorithm>

namespace outbox {

class SchemaPublisher::Core {
 public:
  explicit Core(Options options)
      : options_(std::move(options)),
        observer_(options_.observer != nullptr ? options_.observer.get() : &default_observer_) {}

  const Options& options() const { return options_; }
  // Encodes and hands on, holds, or fails `held`. Without `may_ask` (the
  // sender's thread: a claim transaction, a delivery callback) no registry
  // request is made; a message that needs one goes to the retrier at once.
  void Deliver(Held held, bool may_ask) EXCLUDES(mu_);
  void Run() EXCLUDES(mu_);
  // Ends Run and takes the messages still waiting.
  std::vector<Held> Stop() EXCLUDES(mu_);
  std::string Problem() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return problem_;
  }
  size_t Waiting() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return waiting_.size();
  }

 private:
  void NoteRegistry(const std::string& why) EXCLUDES(mu_);
  // The registry answered: no problem any more, once no other message
  // waits for it (one look under the lock). During a retry pass the waiting
  // are out of waiting_, so the pass's end decides (EndPass).
  void NoteAnswered() EXCLUDES(mu_);
  // The retrier's round: every waiting message delivered again.
  void RetryPass() REQUIRES(mu_);
  // Puts `*held` among the waiting (taken from *held), `urgent`: for the
  // retrier's next round at once; false when it cannot wait (the publisher
  // is going, or its budget ended).
  bool Hold(Held* held, bool urgent) EXCLUDES(mu_);

  const Options options_;
  SchemaPublisherObserver default_observer_;
  SchemaPublisherObserver* const observer_;  // options_.observer's, or default_observer_

  mutable Mutex mu_;
  CondVar cv_{&mu_};
  std::vector<Held> waiting_ GUARDED_BY(mu_);
  std::string problem_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  bool urgent_ GUARDED_BY(mu_) = false;   // a message waits for its first registry request
  bool in_pass_ GUARDED_BY(mu_) = false;  // RetryPass is delivering
  bool answered_in_pass_ GUARDED_BY(mu_) = false;
};

SchemaPublisher::SchemaPublisher(Options options)
    : core_(std::make_shared<Core>(std::move(options))),
      retrier_([core = core_] { core->Run(); }) {}

SchemaPublisher::~SchemaPublisher() {
  std::vector<Held> left = core_->Stop();
  // The last reference may go on the retrier itself (a completion it ran let
  // the relay go): the thread then ends on its own, keeping the core alive.
  if (retrier_.get_id() == std::this_thread::get_id())
    retrier_.detach();
  else
    retrier_.join();
  for (Held& h : left)
    h.sent({PublishResult::kNotAttempted, FailureReason::kSchemaRegistry,
            "not sent: the relay stopped while the schema registry did not answer"});
}

void SchemaPublisher::Send(const Message& message, SentFn sent) {
  const Clock::TimePoint cap = core_->options().clock->Now() + core_->options().max_wait;
  core_->Deliver({message, std::move(sent), std::min(message.queued_until, cap)},
                 /*may_ask=*/false);
}

bool SchemaPublisher::Healthy() const { return core_->options().inner->Healthy(); }

std::string SchemaPublisher::RegistryProblem() const { return core_->Problem(); }

size_t SchemaPublisher::Waiting() const { return core_->Waiting(); }

void SchemaPublisher::Core::Deliver(Held held, bool may_ask) {
  const EncodeResult r = options_.encoder->Encode(&held.message, may_ask);
  if (r.kind == EncodeResult::Kind::kAsk || r.kind == EncodeResult::Kind::kWait) {
    const bool ask = r.kind == EncodeResult::Kind::kAsk;
    if (!ask) NoteRegistry(r.error);
    if (Hold(&held, ask)) return;
    held.sent({PublishResult::kNotAttempted, FailureReason::kSchemaRegistry,
               "not sent: " + (ask ? std::string("the relay stopped") : r.error)});
    return;
  }
  // Bytes never ask the registry: only an answer says it is back.
  if (r.schema_id != 0 || r.kind == EncodeResult::Kind::kFail) NoteAnswered();
  if (r.kind == EncodeResult::Kind::kFail) {
    observer_->OnConversionFailure(r.reason, r.error);
    held.sent({PublishResult::kPermanent, FailureReason::kSchema, r.error});
    return;
  }
  // An answer that came after the claim's budget: handing the message over
  // now would let its outcome come after the lease.
  if (may_ask && options_.clock->Now() >= held.until) {
    held.sent({PublishResult::kNotAttempted, FailureReason::kSchemaRegistry,
               "not sent: the schema registry answered after the claim's publish budget"});
    return;
  }
  options_.inner->Send(held.message, std::move(held.sent));
}

bool SchemaPublisher::Core::Hold(Held* held, bool urgent) {
  MutexLock lock(&mu_);
  // Not past the budget (a first request is always made), not while going.
  if (stop_ || (!urgent && options_.clock->Now() >= held->until)) return false;
  waiting_.push_back(std::move(*held));
  urgent_ = urgent_ || urgent;
  cv_.SignalAll();
  return true;
}

void SchemaPublisher::Core::NoteAnswered() {
  {
    MutexLock lock(&mu_);
    if (problem_.empty()) return;
    if (in_pass_) {
      answered_in_pass_ = true;
      return;
    }
    if (!waiting_.empty()) return;
    problem_.clear();
  }
  observer_->OnRegistryChange("");
}

void SchemaPublisher::Core::RetryPass() {
  std::vector<Held> retry;
  retry.swap(waiting_);
  in_pass_ = true;
  mu_.Unlock();
  for (Held& h : retry) Deliver(std::move(h), /*may_ask=*/true);
  mu_.Lock();
  in_pass_ = false;
  // Answered for one message of the pass and none waits after it: a message
  // served from the cache before another one of the same pass waited again
  // does not say the registry is back.
  const bool back = answered_in_pass_ && waiting_.empty() && !problem_.empty();
  answered_in_pass_ = false;
  if (!back) return;
  problem_.clear();
  mu_.Unlock();
  observer_->OnRegistryChange("");
  mu_.Lock();
}

void SchemaPublisher::Core::NoteRegistry(const std::string& why) {
  {
    MutexLock lock(&mu_);
    if (problem_ == why) return;
    problem_ = why;
  }
  observer_->OnRegistryChange(why);
}

std::vector<SchemaPublisher::Held> SchemaPublisher::Core::Stop() {
  MutexLock lock(&mu_);
  stop_ = true;
  cv_.SignalAll();
  std::vector<Held> left;
  left.swap(waiting_);
  return left;
}

void SchemaPublisher::Core::Run() {
  mu_.Lock();
  while (!stop_) {
    if (waiting_.empty()) {
      // Idle: the first message held wakes it.
      options_.clock->WaitUntil(&mu_, &cv_, options_.clock->Now() + std::chrono::hours(1), [this] {
        mu_.AssertHeld();
        return stop_ || !waiting_.empty();
      });
      continue;
    }
    options_.clock->WaitUntil(&mu_, &cv_, options_.clock->Now() + options_.retry_every, [this] {
      mu_.AssertHeld();
      return stop_ || urgent_;
    });
    if (stop_) break;
    urgent_ = false;
    RetryPass();
  }
  mu_.Unlock();
}

}  // namespace outbox
