#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace outbox::inbox {

using TopicPartition = std::pair<std::string, int32_t>;

// Which partitions wait, from which offset, and until when. A pure decision
// (no Kafka, no clock of its own: `now` comes in): the consumer pauses a
// partition and seeks it back when Hold says so, and resumes it when Due
// lists it. Only the partition whose message failed waits; the others go on,
// and the loop keeps polling, so the member never misses
// max.poll.interval.ms however long a wait lasts. Not thread-safe.
class PartitionGate {
 public:
  using TimePoint = outbox::Clock::TimePoint;
  using Ms = std::chrono::milliseconds;

  // A database or broker failure at `offset`: wait 200 ms, then 400 ms, ...
  // up to 10 s while it lasts (quick after a blip, about six tries a minute
  // in a long outage). Returns the wait.
  Ms Stall(const TopicPartition& tp, int64_t offset, TimePoint now);
  // Attempt `attempt` (from 1) at the message at `offset` failed and may be
  // tried again: wait 100 ms, 200 ms, ... up to 2 s. Returns the wait.
  Ms Retry(const TopicPartition& tp, int64_t offset, TimePoint now);
  // The message at `offset` was handed to the dead-letter producer: the
  // partition waits, without a deadline, until the broker answers. Finished
  // then lets it go on after the message (Due lists it at once); a Stall or
  // Retry sets a deadline again.
  void AwaitDeadLetter(const TopicPartition& tp, int64_t offset);
  // Failed attempts so far at the message at `offset` (0 for another offset).
  int Attempts(const TopicPartition& tp, int64_t offset) const;

  // The seek back to the held offset failed: the partition must not resume
  // before a seek succeeds. Due lists it again after the current wait.
  void SeekFailed(const TopicPartition& tp, TimePoint now);
  bool NeedsSeek(const TopicPartition& tp) const;
  // The seek back to the held offset succeeded.
  void Seeked(const TopicPartition& tp);

  bool Held(const TopicPartition& tp) const;
  int64_t HeldOffset(const TopicPartition& tp) const;
  // Held partitions whose wait is over, in order. The caller seeks those that
  // NeedsSeek, then resumes each with Resumed (or SeekFailed).
  std::vector<TopicPartition> Due(TimePoint now) const;
  void Resumed(const TopicPartition& tp);

  // The message at `offset` is finished (a partition waiting for its dead
  // letter goes on after it). True when its partition had
  // stalled since its last finished message (the consumer says "resumed").
  bool Finished(const TopicPartition& tp, int64_t offset);
  // The partition was revoked: its next owner starts at the committed offset.
  void Forget(const TopicPartition& tp) { state_.erase(tp); }

  size_t held() const;

 private:
  struct State {
    bool held = false;
    bool needs_seek = false;
    bool stalled = false;   // a stall since the last finished message
    bool awaiting = false;  // a dead letter's answer: no deadline
    int64_t offset = -1;    // the held (first unfinished) message
    TimePoint resume_at{};
    Ms stall_backoff{0};
    int64_t attempt_offset = -1;
    int attempts = 0;
  };
  void Hold(State* s, int64_t offset, TimePoint until);

  std::map<TopicPartition, State> state_;
};

}  // namespace outbox::inbox
