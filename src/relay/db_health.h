#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include "common/liveness.h"
#include "common/mutex.h"
#include "common/service_stats.h"
#include "common/status.h"

namespace outbox {

// One service's view of its database: the outcome of the last statement,
// for outbox_database_up, /readyz and the log (one warning when it goes
// down or its error changes, one info line when it comes back).
// Thread-safe: every unit of the service reports here.
class DbHealth {
 public:
  // `*metrics` must outlive the DbHealth.
  DbHealth(std::string service, ServiceStats* metrics);

  // Records a statement's outcome. `what` names it for the log ("poll",
  // "claim"). `settle`: the statement was the settle of a published batch,
  // which while failing keeps the service reported down whatever other
  // statements do: its rows wait in SENDING and claiming stops at
  // max_inflight_batches, so "database reachable again" after every
  // successful poll would be a lie.
  void Note(const Status& s, std::string_view what, bool settle = false) EXCLUDES(mu_);
  // Note(), then beats `beat` (null: no heartbeat). The units (Claimer,
  // Settler, Housekeeper) call it after every statement (docs/DESIGN.md,
  // "Errors and health"): a loop that runs several statements per iteration
  // shows progress between them, so its stall limit need cover only one.
  void NoteAndBeat(const Status& s, std::string_view what, const HeartbeatPtr& beat,
                   bool settle = false) EXCLUDES(mu_);

  bool up() const { return up_.load(); }
  std::string LastError() const EXCLUDES(mu_);

 private:
  const std::string service_;
  ServiceStats* const metrics_;

  std::atomic<bool> up_{false};  // written under mu_, read without it
  mutable Mutex mu_;
  std::string last_error_ GUARDED_BY(mu_);
  bool logged_down_ GUARDED_BY(mu_) = false;
  bool settle_failing_ GUARDED_BY(mu_) = false;
};

}  // namespace outbox
