#pragma once

#include <array>
#include <chrono>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "relay/relay_units.h"
#include "relay/stall_limits.h"

namespace outbox {

// One service's relay: the owner of its units (RelayUnits) and of the three
// threads that run its loops (docs/DESIGN.md, "Threads"): the claim loop,
// the settle loop and the housekeeping loop. DbHealth collects every
// statement's outcome for /readyz.
// Thread-safety: Start/Stop from one controlling thread; StopClaims and the
// accessors from any thread.
class Relay {
 public:
  explicit Relay(RelayOptions options) : units_(std::move(options)) {}
  ~Relay() { Stop(std::chrono::milliseconds(0)); }

  void Start();
  // Stops claiming: returns once the claim loop has ended (a claim round in
  // progress finishes first; its batch is handed to the settle loop). The
  // in-flight batches go on settling until Stop. Idempotent.
  void StopClaims() EXCLUDES(claims_mu_);
  // StopClaims, then waits up to `grace` for in-flight batches to be
  // published and settled, then stops the threads.
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
  // Joins the claim thread: StopClaims may run on another thread than Stop.
  Mutex claims_mu_;
};

}  // namespace outbox
