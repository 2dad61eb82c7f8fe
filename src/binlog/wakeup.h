#pragma once

// BinlogWakeup: the `wakeup: binlog` implementation of the claim loop's
// Wakeup seam (src/common/wakeup.h), woken by a WakeupHub subscription.
// Header-only.

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "binlog/wakeup_hub.h"
#include "common/clock.h"
#include "common/wakeup.h"

namespace outbox {
namespace binlog {

// The seam moved to src/common/wakeup.h (the relay may not include binlog/);
// these names keep the component's code and tests unchanged.
using outbox::ClaimAfterWakeup;
using outbox::kCommitRaceRetry;
using outbox::PollWakeup;
using outbox::WakeCause;
using Wakeup = outbox::WakeupSource;  // outbox::Wakeup is the config enum
using WakeupPtr = outbox::WakeupSourcePtr;
using outbox::WakeSignal;

// `wakeup: binlog`: woken by commits to its table (or database) and by every
// up/down change of its server's stream; polls every poll_interval while the
// stream is down and at least every safety_interval while it is up.
// REQUIRES: `hub` outlives this object.
class BinlogWakeup : public Wakeup {
 public:
  // The longest wait while the stream is up: it keeps
  // outbox_last_poll_timestamp_seconds (and the stalled-polling alert) true.
  static constexpr Clock::Duration kSafetyInterval = std::chrono::seconds(30);

  BinlogWakeup(ClockPtr clock, WakeupHub& hub, const BinlogOptions& options,
               const std::string& database, const std::string& table, Clock::Duration poll_interval,
               Clock::Duration safety_interval = kSafetyInterval)
      : signal_(std::make_shared<WakeSignal>(std::move(clock))),
        poll_interval_(poll_interval),
        safety_interval_(std::max(poll_interval, safety_interval)) {
    // The hub calls this on the stream's thread; the shared_ptr keeps the
    // signal valid however the destructors interleave.
    std::shared_ptr<WakeSignal> signal = signal_;
    subscription_ =
        hub.Subscribe(options, database, table, [signal](bool insert) { signal->Notify(insert); });
  }
  WakeCause WaitUntil(Clock::TimePoint deadline) override { return signal_->WaitUntil(deadline); }
  Clock::Duration MaxWait() const override {
    return subscription_->up() ? safety_interval_ : poll_interval_;
  }
  void Interrupt() override { signal_->Notify(); }
  bool binlog_up() const override { return subscription_->up(); }
  // Failover wiring (issue 25): the stream would stay on the demoted server
  // (its connection went there before the failover and stays open); a new
  // one follows mysql.host to the promoted server, from its end of log.
  void DatabaseServerChanged() override { subscription_->Reopen(); }
  std::string reason() const override { return subscription_->reason(); }
  StreamState state() const { return subscription_->state(); }

 private:
  std::shared_ptr<WakeSignal> signal_;
  const Clock::Duration poll_interval_;
  const Clock::Duration safety_interval_;
  SubscriptionPtr subscription_;  // last: unsubscribes before the rest goes
};

}  // namespace binlog
}  // namespace outbox
