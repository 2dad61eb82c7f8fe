#include "app/systemd_notify.h"

#include <systemd/sd-daemon.h>

namespace outbox {

SystemdNotifier::SystemdNotifier(boost::asio::io_context& io, const LivenessRegistry& liveness)
    : liveness_(liveness), timer_(io) {
  uint64_t usec = 0;
  // > 0 only when WATCHDOG_USEC is set (and WATCHDOG_PID, if set, is ours).
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
    interval_ = std::chrono::microseconds(usec / 2);
}

void SystemdNotifier::Ready() {
  sd_notify(0, "READY=1\nSTATUS=serving");
  if (interval_.count() > 0) {
    Tick();
    Schedule();
  }
}

void SystemdNotifier::Stopping() {
  timer_.cancel();
  sd_notify(0, "STOPPING=1\nSTATUS=stopping: finishing in-flight events");
}

bool SystemdNotifier::Tick() {
  // Stalls are logged by the daemon's StallWatch; here they only hold back
  // the ping.
  if (!liveness_.Stalled().empty()) return false;
  sd_notify(0, "WATCHDOG=1");
  return true;
}

void SystemdNotifier::Schedule() {
  timer_.expires_after(interval_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    Tick();
    Schedule();
  });
}

}  // namespace outbox
