#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "config/config.h"
#include "config/config_diff.h"

namespace outbox {

// A service the runner could not start, and why (the text names the cause
// and, where it can, the fix).
struct StartFailure {
  std::string service;
  std::string cause;
};

// The seam between the Reconciler, which decides what runs here, and what
// runs it (src/app/'s ServiceSet in production, a fake in tests).
//
// Thread-safety: Apply from the reconciler's thread only; StopClaims and
// Running from any thread, also while Apply runs.
class ServiceRunner {
 public:
  // May a service start claiming now? Asked by Apply right before a
  // service's claim loop starts, under the same lock StopClaims takes, so
  // that a start and a revocation never cross.
  using Gate = std::function<bool(const ServiceConfig&)>;

  virtual ~ServiceRunner() = default;

  // The config of what runs: the top-level keys of the last plan and every
  // service here, also one whose claims StopClaims stopped (it settles its
  // in-flight batches until Apply stops it).
  virtual Config Running() const = 0;
  // The services of Running() whose claim loops run.
  virtual std::vector<std::string> Claiming() const = 0;
  // Moves the running set toward `plan.config`: starts plan.added, stops
  // plan.removed, restarts plan.changed (a service whose claims were
  // stopped runs again only by a restart). A service that cannot be started
  // (its Kafka producer cannot be made) keeps what it had (not running, or
  // running its old config) and is returned; the rest of the plan applies.
  // REQUIRES: plan.error is empty.
  virtual std::vector<StartFailure> Apply(const ReloadPlan& plan, const Gate& may_claim) = 0;
  // Stops the claim loop of every service here that `may_claim` refuses,
  // also one Apply is stopping at that moment (in parallel; their in-flight
  // batches settle afterwards, when Apply stops the services). Returns once
  // every one has stopped claiming, or at `deadline` (in_time false then).
  struct ClaimStops {
    std::vector<std::string> services;
    bool in_time = true;
  };
  virtual ClaimStops StopClaims(const Gate& may_claim, Clock::TimePoint deadline) = 0;
};

}  // namespace outbox
