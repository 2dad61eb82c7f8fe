#include "common/liveness.h"

#include <cassert>
#include <cstdio>

namespace outbox {

Heartbeat::Heartbeat(ClockPtr clock, std::string name, std::chrono::milliseconds stall_limit)
    : clock_(std::move(clock)),
      name_(std::move(name)),
      stall_limit_(stall_limit),
      last_beat_(clock_->Now().time_since_epoch().count()) {}

void Heartbeat::Beat() {
  // Relaxed is enough: the value is a timestamp read on its own, it publishes
  // nothing else.
  last_beat_.store(clock_->Now().time_since_epoch().count(), std::memory_order_relaxed);
}

LivenessRegistry::LivenessRegistry(ClockPtr clock) : clock_(std::move(clock)) {}

HeartbeatPtr LivenessRegistry::Register(std::string name, std::chrono::milliseconds stall_limit) {
  assert(stall_limit.count() > 0);
  // The constructor is private to Heartbeat: no make_shared.
  HeartbeatPtr beat(new Heartbeat(clock_, std::move(name), stall_limit));
  MutexLock lock(&mu_);
  std::erase_if(beats_, [](const std::weak_ptr<Heartbeat>& w) { return w.expired(); });
  beats_.push_back(beat);
  return beat;
}

std::vector<Stall> LivenessRegistry::Stalled() const {
  const Clock::TimePoint now = clock_->Now();
  std::vector<Stall> stalls;
  MutexLock lock(&mu_);
  std::erase_if(beats_, [](const std::weak_ptr<Heartbeat>& w) { return w.expired(); });
  for (const auto& weak : beats_) {
    HeartbeatPtr beat = weak.lock();
    if (!beat) continue;
    const Clock::TimePoint last(Clock::Duration(beat->last_beat_.load(std::memory_order_relaxed)));
    const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(now - last);
    if (since > beat->stall_limit_) stalls.push_back({beat->name_, since, beat->stall_limit_});
  }
  return stalls;
}

std::vector<std::string> LivenessRegistry::Names() const {
  std::vector<std::string> names;
  MutexLock lock(&mu_);
  for (const auto& weak : beats_)
    if (HeartbeatPtr beat = weak.lock()) names.push_back(beat->name_);
  return names;
}

std::string DescribeStalls(const std::vector<Stall>& stalls) {
  std::string out;
  for (const auto& s : stalls) {
    char buf[96];
    std::snprintf(buf, sizeof buf, ": no progress for %.1f s (stall limit %.1f s)\n",
                  static_cast<double>(s.since_last_beat.count()) / 1000,
                  static_cast<double>(s.stall_limit.count()) / 1000);
    out += s.name + buf;
  }
  return out;
}

}  // namespace outbox
