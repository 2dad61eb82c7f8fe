#pragma once

#include <chrono>

#include "common/clock.h"
#include "common/liveness.h"
#include "config/config.h"
#include "relay/housekeeper.h"
#include "relay/stop_signal.h"

namespace outbox {

// The housekeeping thread (docs/DESIGN.md, "Threads"): every
// gauge_interval_ms the table gauges, and every retention.interval_s the
// retention of old SENT rows (Housekeeper), on its own connection. Run and
// the steps from one thread; Stop from any.
class HousekeepingLoop {
 public:
  // `*housekeeper` must outlive the loop.
  HousekeepingLoop(const ServiceConfig& config, Housekeeper* housekeeper, const ClockPtr& clock);

  void Run();
  void Stop() { stop_.Stop(); }

  Status RefreshGauges() { return housekeeper_->RefreshGauges(); }
  Status RunRetention();

  void set_heartbeat(HeartbeatPtr beat);

 private:
  const ServiceConfig& config_;
  Housekeeper* const housekeeper_;
  const ClockPtr clock_;
  StopSignal stop_;
  HeartbeatPtr beat_;
};

}  // namespace outbox
