#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

#include "common/liveness.h"

namespace outbox {

// The systemd notify protocol (Type=notify, WatchdogSec=): READY=1 once the
// daemon serves HTTP, WATCHDOG=1 every half watchdog period but only while no
// registered loop is stalled (what /healthz answers 200 for), STOPPING=1 on
// shutdown. Without NOTIFY_SOCKET (not under systemd) every call does
// nothing; without WATCHDOG_USEC there is no timer.
//
// Runs on `io`'s thread. `io` and `liveness` must outlive the notifier.
class SystemdNotifier {
 public:
  SystemdNotifier(boost::asio::io_context& io, const LivenessRegistry& liveness);

  // Sends READY=1 and starts the watchdog timer if systemd asked for one.
  void Ready();
  // Sends STOPPING=1 and stops the watchdog timer.
  void Stopping();
  // One watchdog period, as the timer runs it (a test seam).
  bool TickForTesting() { return Tick(); }

  // Half of WATCHDOG_USEC, or zero when the watchdog is off.
  std::chrono::microseconds interval() const { return interval_; }

 private:
  // One watchdog period: WATCHDOG=1 when nothing is stalled, else no ping,
  // so that systemd restarts the relay WatchdogSec later. Returns whether it
  // pinged.
  bool Tick();
  void Schedule();

  const LivenessRegistry& liveness_;
  boost::asio::steady_timer timer_;
  std::chrono::microseconds interval_{0};
};

}  // namespace outbox
