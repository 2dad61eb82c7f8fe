#include "relay/housekeeping_loop.h"

namespace outbox {

HousekeepingLoop::HousekeepingLoop(const ServiceConfig& config, Housekeeper* housekeeper,
                                   const ClockPtr& clock)
    : config_(config), housekeeper_(housekeeper), clock_(clock), stop_(clock) {}

void HousekeepingLoop::set_heartbeat(HeartbeatPtr beat) {
  beat_ = beat;
  housekeeper_->set_heartbeat(std::move(beat));
}

Status HousekeepingLoop::RunRetention() {
  return housekeeper_->RunRetention([this](std::chrono::milliseconds d) {
    if (beat_) beat_->Beat();  // a batch was deleted: progress
    return stop_.SleepUntil(clock_->Now() + d);
  });
}

void HousekeepingLoop::Run() {
  auto next_retention = clock_->Now();
  const RetentionConfig& retention = config_.retention;
  while (!stop_.stopped()) {
    if (beat_) beat_->Beat();
    Status s = housekeeper_->Connect();
    if (s.ok()) (void)RefreshGauges();
    if (s.ok() && retention.sent_days && clock_->Now() >= next_retention) {
      (void)RunRetention();
      next_retention = clock_->Now() + std::chrono::seconds(retention.interval_s);
    }
    stop_.SleepUntil(clock_->Now() + std::chrono::milliseconds(config_.gauge_interval_ms));
  }
}

}  // namespace outbox
