#include "inbox/partition_gate.h"

#include <algorithm>

namespace outbox::inbox {
namespace {

constexpr PartitionGate::Ms kStallInitialBackoff{200};
constexpr PartitionGate::Ms kStallMaxBackoff{10000};
constexpr PartitionGate::Ms kAttemptBackoff{100};
constexpr PartitionGate::Ms kMaxAttemptBackoff{2000};

}  // namespace

void PartitionGate::Hold(State* s, int64_t offset, TimePoint until) {
  // Only the first unfinished offset counts: messages after it were fetched
  // before the pause and are read again from there.
  if (!s->held || offset < s->offset) s->offset = offset;
  s->held = true;
  s->needs_seek = true;
  s->awaiting = false;
  s->resume_at = until;
}

void PartitionGate::AwaitDeadLetter(const TopicPartition& tp, int64_t offset) {
  State& s = state_[tp];
  Hold(&s, offset, TimePoint::max());
  s.awaiting = true;
}

PartitionGate::Ms PartitionGate::Stall(const TopicPartition& tp, int64_t offset, TimePoint now) {
  State& s = state_[tp];
  s.stall_backoff = s.stall_backoff.count() == 0 ? kStallInitialBackoff
                                                 : std::min(s.stall_backoff * 2, kStallMaxBackoff);
  s.stalled = true;
  Hold(&s, offset, now + s.stall_backoff);
  return s.stall_backoff;
}

PartitionGate::Ms PartitionGate::Retry(const TopicPartition& tp, int64_t offset, TimePoint now) {
  State& s = state_[tp];
  if (s.attempt_offset != offset) {
    s.attempt_offset = offset;
    s.attempts = 0;
  }
  ++s.attempts;
  const Ms wait =
      std::min(kAttemptBackoff * (1 << std::min(s.attempts - 1, 10)), kMaxAttemptBackoff);
  Hold(&s, offset, now + wait);
  return wait;
}

int PartitionGate::Attempts(const TopicPartition& tp, int64_t offset) const {
  auto it = state_.find(tp);
  return it != state_.end() && it->second.attempt_offset == offset ? it->second.attempts : 0;
}

void PartitionGate::SeekFailed(const TopicPartition& tp, TimePoint now) {
  State& s = state_[tp];
  s.held = true;
  s.needs_seek = true;
  s.stall_backoff = s.stall_backoff.count() == 0 ? kStallInitialBackoff
                                                 : std::min(s.stall_backoff * 2, kStallMaxBackoff);
  s.resume_at = now + s.stall_backoff;
}

bool PartitionGate::NeedsSeek(const TopicPartition& tp) const {
  auto it = state_.find(tp);
  return it != state_.end() && it->second.held && it->second.needs_seek;
}

void PartitionGate::Seeked(const TopicPartition& tp) {
  if (auto it = state_.find(tp); it != state_.end()) it->second.needs_seek = false;
}

bool PartitionGate::Held(const TopicPartition& tp) const {
  auto it = state_.find(tp);
  return it != state_.end() && it->second.held;
}

int64_t PartitionGate::HeldOffset(const TopicPartition& tp) const {
  auto it = state_.find(tp);
  return it != state_.end() && it->second.held ? it->second.offset : -1;
}

std::vector<TopicPartition> PartitionGate::Due(TimePoint now) const {
  std::vector<TopicPartition> out;
  for (const auto& [tp, s] : state_)
    if (s.held && !s.awaiting && now >= s.resume_at) out.push_back(tp);
  return out;
}

void PartitionGate::Resumed(const TopicPartition& tp) {
  State& s = state_[tp];
  s.held = false;
  s.needs_seek = false;
}

bool PartitionGate::Finished(const TopicPartition& tp, int64_t offset) {
  auto it = state_.find(tp);
  if (it == state_.end()) return false;
  const bool was_stalled = it->second.stalled;
  if (it->second.awaiting && it->second.offset == offset) {
    // Resume after the message (it was read again from its offset meanwhile).
    it->second.awaiting = false;
    it->second.offset = offset + 1;
    it->second.needs_seek = true;
    it->second.resume_at = TimePoint{};
  }
  if (it->second.attempt_offset <= offset) {
    it->second.attempt_offset = -1;
    it->second.attempts = 0;
  }
  it->second.stalled = false;
  it->second.stall_backoff = Ms{0};
  return was_stalled;
}

size_t PartitionGate::held() const {
  return static_cast<size_t>(
      std::count_if(state_.begin(), state_.end(), [](const auto& kv) { return kv.second.held; }));
}

}  // namespace outbox::inbox
