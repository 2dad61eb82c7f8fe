#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace outbox {

// What the contact watchdog reads of one librdkafka statistics sample
// (statistics.interval.ms): the group's coordinator answering is its
// logical broker "GroupCoordinator" receiving responses.
struct ContactSample {
  int64_t ts_us = 0;           // librdkafka's monotonic clock when the sample was taken
  int64_t coordinator_rx = 0;  // responses received from the group's coordinator
  bool steady = false;         // cgrp.join_state "steady": heartbeats are due
};

// Parses a statistics JSON document; false when it has no consumer group
// (or is not one).
bool ParseContactSample(const std::string& json, ContactSample* sample);

// The watchdog on the group's coordinator (docs/DEPLOY.md "A fleet"): a
// member that heard nothing from the coordinator for `limit` while
// heartbeats were due must stop serving its shards by itself, before the
// group can hand them on, since it cannot learn that the group did; it
// serves them again once the coordinator answers twice (two samples with
// responses) and the assignment is still its own. Pure: it reads the
// samples' own clock, so a late sample is judged by when it was taken.
class GroupContact {
 public:
  enum class Change { kNone, kLost, kBack };

  explicit GroupContact(std::chrono::milliseconds limit) : limit_us_(limit.count() * 1000) {}

  // `assignment_lost`: librdkafka counts the assignment lost (its session
  // ended); the shards are not this member's to serve again then.
  Change Observe(const ContactSample& s, bool assignment_lost);
  // The group answered in another way (an assignment arrived).
  void Reset();
  bool lost() const { return lost_; }
  // Milliseconds without an answer as of the last sample.
  int64_t silence_ms() const { return (last_ts_us_ - since_us_) / 1000; }

 private:
  const int64_t limit_us_;
  bool seen_ = false;
  int64_t rx_ = 0;
  int64_t since_us_ = 0;  // the last answer (or the last time none was due)
  int64_t last_ts_us_ = 0;
  bool lost_ = false;
  int answers_ = 0;  // samples with answers since lost
};

}  // namespace outbox
