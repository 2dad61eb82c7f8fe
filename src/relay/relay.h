#pragma once

#include <array>
#include <chrono>
#include <string>
#include <thread>

#include "relay/relay_units.h"
#include "relay/stall_limits.h"

namespace outbox {

// One service's relay: the owner of its units (RelayUnits) and of the three
// threads that run its loops (docs/DESIGN.md, "Threads"): the claim loop,
// the settle loop and the housekeeping loop. DbHealth collects every
// statement's outcome for /readyz.
// Thread-safety: Start/Stop from one controlling thread; the accessors from
// any thread.
class Relay {
 public:
  explicit Relay(RelayOptions options) : units_(std::move(options)) {}
  ~Relay() { Stop(std::chrono::milliseconds(0)); }

  void Start();
  // Stops claiming, waits up to `grace` for in-flight batches to be published
  // and settled, then stops the threads.
  void Stop(std::chrono::milliseconds grace);

  // Ready: the database answers and the table is usable.
  bool DatabaseReady() const { return units_.health.up(); }
  std::string LastError() const { return units_.health.LastError(); }
  // With `wakeup: binlog`, for /readyz; empty with `wakeup: poll`.
  std::string WakeupStatus() const { return units_.claim.WakeupStatus(); }
  const std::string& name() const { return units_.config.name; }

 private:
  void SetHeartbeats(bool on);

  RelayUnits units_;
  std::array<std::thread, 3> threads_;  // claim, settle, housekeeping
};

}  // namespace outbox
