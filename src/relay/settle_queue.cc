#include "relay/settle_queue.h"

namespace outbox {

uint64_t SettleQueue::BeginClaim() {
  MutexLock lock(&mu_);
  return gate_.Open();
}

void SettleQueue::AddInflight() {
  MutexLock lock(&mu_);
  ++inflight_;
}

void SettleQueue::EndClaim(uint64_t round) {
  MutexLock lock(&mu_);
  gate_.Close(round);
  cv_.SignalAll();
}

void SettleQueue::Push(PublishedBatch done,
                       const std::function<void(const PublishedBatch&)>& on_delivered) {
  MutexLock alive(&life_mu_);
  if (closed_) return;  // the relay is gone: the rows' leases expire
  if (on_delivered) on_delivered(done);
  MutexLock lock(&mu_);
  published_.push_back(std::move(done));
  cv_.SignalAll();
}

void SettleQueue::Close() {
  MutexLock alive(&life_mu_);  // waits out a completion in progress
  closed_ = true;
}

PublishedBatch* SettleQueue::Front(Clock::TimePoint deadline) {
  MutexLock lock(&mu_);
  clock_->WaitUntil(&mu_, &cv_, deadline, [this] {
    mu_.AssertHeld();
    // A group held while the claims end (a stop) is written at once.
    return FrontAdmitted() || halted_ || (claims_ended_ && grouped_ > 0);
  });
  return FrontAdmitted() ? &published_.front() : nullptr;
}

void SettleQueue::Pop() {
  MutexLock lock(&mu_);
  published_.pop_front();
  --inflight_;
  cv_.SignalAll();
}

void SettleQueue::PopGrouped() {
  MutexLock lock(&mu_);
  published_.pop_front();
  ++grouped_;
  cv_.SignalAll();
}

void SettleQueue::GroupSettled(int n) {
  MutexLock lock(&mu_);
  grouped_ -= n;
  inflight_ -= n;
  cv_.SignalAll();
}

bool SettleQueue::claims_ended() const {
  MutexLock lock(&mu_);
  return claims_ended_;
}

int SettleQueue::inflight() const {
  MutexLock lock(&mu_);
  return inflight_ - grouped_;
}

int SettleQueue::unsettled() const {
  MutexLock lock(&mu_);
  return inflight_;
}

void SettleQueue::WaitRoom(int max, Clock::TimePoint deadline, const std::function<bool()>& stop) {
  MutexLock lock(&mu_);
  clock_->WaitUntil(&mu_, &cv_, deadline, [this, max, &stop] {
    mu_.AssertHeld();
    return halted_ || inflight_ - grouped_ < max || stop();
  });
}

void SettleQueue::Notify() {
  MutexLock lock(&mu_);
  cv_.SignalAll();
}

bool SettleQueue::WaitEmpty(Clock::TimePoint deadline) {
  MutexLock lock(&mu_);
  return clock_->WaitUntil(&mu_, &cv_, deadline, [this] {
    mu_.AssertHeld();
    return inflight_ == 0;
  });
}

void SettleQueue::ClaimsEnded() {
  MutexLock lock(&mu_);
  claims_ended_ = true;
  cv_.SignalAll();
}

bool SettleQueue::Drained() const {
  MutexLock lock(&mu_);
  return claims_ended_ && inflight_ == 0 && published_.empty();
}

void SettleQueue::Halt() {
  MutexLock lock(&mu_);
  halted_ = true;
  cv_.SignalAll();
}

bool SettleQueue::halted() const {
  MutexLock lock(&mu_);
  return halted_;
}

void SettleQueue::Sleep(Clock::TimePoint deadline) {
  MutexLock lock(&mu_);
  clock_->WaitUntil(&mu_, &cv_, deadline, [this] {
    mu_.AssertHeld();
    return halted_;
  });
}

}  // namespace outbox
