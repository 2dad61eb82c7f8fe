#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "config/config.h"
#include "fleet/ownership.h"
#include "fleet/service_runner.h"
#include "fleet/start_retries.h"
#include "metrics/fleet_metrics.h"
#include "metrics/service_run_metrics.h"

namespace outbox {

// The one unit that decides which services run on this relay
// (docs/DESIGN.md "Threads", docs/DEPLOY.md "A fleet"): *desired* is the
// file's services that this relay owns now (every one without a fleet), and
// the reconciler moves what runs (its ServiceRunner) toward it. Two inputs,
// each a level, never an edge: the file (SetFile, after a reload that
// loaded; a reload that failed changes nothing here) and the ownership
// (SetOwnership, from the fleet's group and its contact watchdog). It
// compares desired with what runs on every input and on a timer, so no
// change can be lost; a service that cannot start is retried with backoff
// (StartRetries), logged and counted once per cause; what runs, not what
// was asked for, is exported (outbox_service_running,
// outbox_service_owned).
//
// A shrinking ownership stops the claims of the services given away before
// SetOwnership returns (at most `claim_stop_limit`): the group hands a
// shard on only after that, so the next owner never meets live claims of
// this relay. Their in-flight batches settle afterwards, when the
// reconciler's thread stops the services.
//
// Thread-safety: SetFile, SetOwnership and the accessors from any thread;
// Start, Stop and Reconcile from the controlling thread (Reconcile before
// Start only). Lifetime: the runner and the metrics must outlive it.
class Reconciler {
 public:
  struct Options {
    ServiceRunner* runner = nullptr;
    prometheus::Registry* registry = nullptr;  // for outbox_service_running
    FleetMetrics* fleet_metrics = nullptr;     // outbox_service_owned; null without a fleet
    ClockPtr clock = DefaultClock();
    // How often what runs is compared with desired without an input: the
    // bound on a divergence no input reports.
    std::chrono::milliseconds tick{2000};
    // How long a shrinking ownership waits for claim loops to stop; a claim
    // round blocked longer (a hung database) ends on its own, and its rows
    // are under live leases that the next owner skips.
    std::chrono::milliseconds claim_stop_limit{5000};
  };

  Reconciler(Options options, const Config& file, const Ownership& ownership);
  ~Reconciler();  // Stop
  Reconciler(const Reconciler&) = delete;
  Reconciler& operator=(const Reconciler&) = delete;

  // One comparison and the starts and stops it calls for; returns the
  // services that could not start this time. The thread runs it; the
  // daemon also calls it once before Start, to fail at start without a
  // fleet.
  std::vector<StartFailure> Reconcile() EXCLUDES(mu_);
  void Start();
  // Ends the thread after the comparison in progress.
  void Stop() EXCLUDES(mu_);

  // A reload loaded `file` (validated, restart-only keys at their running
  // values). Returns the input's number, for WaitFollowed.
  uint64_t SetFile(const Config& file) EXCLUDES(mu_);
  // Waits until a comparison that saw input `input` has ended (what runs
  // follows it, but for services that could not start), or `deadline`.
  bool WaitFollowed(uint64_t input, Clock::TimePoint deadline) EXCLUDES(mu_);
  // The shards this relay holds now. Returns after the claims of every
  // running service it no longer owns have stopped (or claim_stop_limit).
  void SetOwnership(const Ownership& ownership) EXCLUDES(mu_);

  Ownership ownership() const EXCLUDES(mu_);

 private:
  void Run() EXCLUDES(mu_);
  // Applies what of `plan` is due; the services that could not start.
  std::vector<StartFailure> Act(ReloadPlan* plan);
  // The retries of services no longer wanted, or running as desired, go.
  void Remember(const Config& desired);
  // Drops from `plan` the services whose retry is not due yet.
  void Postpone(ReloadPlan* plan, Clock::TimePoint now) const;
  void Book(const std::vector<StartFailure>& failures, Clock::TimePoint now);
  // outbox_service_running and outbox_service_owned of the file's services.
  void Export() EXCLUDES(mu_, export_mu_);

  const Options options_;
  std::unique_ptr<ServiceRunMetrics> run_metrics_;
  StartRetries retries_;  // the reconciling thread only
  std::thread thread_;

  Mutex export_mu_;  // taken before mu_ and the runner's lock, never inside them
  mutable Mutex mu_;
  CondVar cv_{&mu_};
  Config file_ GUARDED_BY(mu_);
  Ownership ownership_ GUARDED_BY(mu_);
  bool dirty_ GUARDED_BY(mu_) = true;
  uint64_t inputs_ GUARDED_BY(mu_) = 0;    // SetFile and SetOwnership calls
  uint64_t followed_ GUARDED_BY(mu_) = 0;  // the inputs the last comparison saw
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::string> exported_ GUARDED_BY(mu_);  // services with series
};

}  // namespace outbox
