#pragma once

#include <cstdint>
#include <string>

#include "outbox/inbox/observer.h"

namespace outbox::inbox {

// Tells two observers everything: the library's own metrics (http.listen)
// and the service's ConsumerOptions::observer. *first must not be null;
// *second may be. Both must outlive the tee.
class ObserverTee : public ConsumerObserver {
 public:
  ObserverTee(ConsumerObserver* first, ConsumerObserver* second) : a_(first), b_(second) {}

  void Outcome(const std::string& outcome, uint64_t n) override {
    a_->Outcome(outcome, n);
    if (b_) b_->Outcome(outcome, n);
  }
  void Stalled() override {
    a_->Stalled();
    if (b_) b_->Stalled();
  }
  void LostTransaction() override {
    a_->LostTransaction();
    if (b_) b_->LostTransaction();
  }
  void FailedAttempt() override {
    a_->FailedAttempt();
    if (b_) b_->FailedAttempt();
  }
  void HeldPartitions(int member, size_t n) override {
    a_->HeldPartitions(member, n);
    if (b_) b_->HeldPartitions(member, n);
  }
  void Lag(const std::string& topic, int32_t partition, int64_t lag) override {
    a_->Lag(topic, partition, lag);
    if (b_) b_->Lag(topic, partition, lag);
  }
  void ForgetPartition(const std::string& topic, int32_t partition) override {
    a_->ForgetPartition(topic, partition);
    if (b_) b_->ForgetPartition(topic, partition);
  }
  void Parked(int64_t version_gaps, int64_t undeliverable, int64_t oldest_gap_age_s) override {
    a_->Parked(version_gaps, undeliverable, oldest_gap_age_s);
    if (b_) b_->Parked(version_gaps, undeliverable, oldest_gap_age_s);
  }
  void Purged(uint64_t rows) override {
    a_->Purged(rows);
    if (b_) b_->Purged(rows);
  }
  void DatabaseUp(bool up) override {
    a_->DatabaseUp(up);
    if (b_) b_->DatabaseUp(up);
  }
  void SchemaLookup(const std::string& result) override {
    a_->SchemaLookup(result);
    if (b_) b_->SchemaLookup(result);
  }
  void SchemaRegistryUp(bool up) override {
    a_->SchemaRegistryUp(up);
    if (b_) b_->SchemaRegistryUp(up);
  }
  void ValueFailure(const std::string& reason) override {
    a_->ValueFailure(reason);
    if (b_) b_->ValueFailure(reason);
  }

 private:
  ConsumerObserver* const a_;
  ConsumerObserver* const b_;
};

}  // namespace outbox::inbox
