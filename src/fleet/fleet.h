#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "config/config.h"
#include "fleet/ownership.h"
#include "kafka/group_membership.h"
#include "metrics/fleet_metrics.h"
#include "metrics/metrics.h"

namespace outbox {

// This relay's place in its fleet (docs/DEPLOY.md "A fleet"): the group
// membership, the shards it holds now, and the metrics, log lines and
// /readyz lines about them. Without a fleet block it owns every service and
// does nothing else.
//
// What runs is not decided here: each change of the shards (the group's
// assignment, or the membership's contact watchdog) is handed to `follow`
// (the Reconciler's SetOwnership), on the membership's thread, which
// returns once the claims of the services given away have stopped; only
// then does the membership give the shards back to the group.
//
// Thread-safety: Start and Stop from the daemon's thread; the rest from any.
// Lifetime: `metrics` must outlive it.
class Fleet {
 public:
  using MembershipPtr = std::unique_ptr<GroupMembership>;
  using Follow = std::function<void(const Ownership&)>;

  // `membership` is null exactly when `file` has no fleet block.
  Fleet(const Config& file, MembershipPtr membership, Metrics* metrics);
  ~Fleet();  // Stop

  // Joins the group; `follow` is called after each change of the shards.
  // Ok at once without a fleet.
  Status Start(Follow follow);
  // Leaves the group: its shards move to the other members at once.
  void Stop();

  // What this relay holds now.
  Ownership Current() const EXCLUDES(mu_);
  // The file's services changed (a reload): for the log lines naming them.
  void SetFile(const Config& file) EXCLUDES(mu_);
  // outbox_fleet_member from the membership as it is now (the daemon's
  // once-a-second tick): a level, whatever event was missed.
  void ExportMember();
  // outbox_service_owned and the other fleet series; null without a fleet.
  FleetMetrics* metrics() const { return metrics_.get(); }
  // Appends the fleet's /readyz line to `body`; false when this relay is not
  // a member of its group (a member that owns nothing is ready).
  bool Readyz(std::string* body) const EXCLUDES(mu_);

 private:
  void OnAssignment(const GroupAssignment& a) EXCLUDES(mu_);

  const std::optional<FleetConfig> config_;
  const MembershipPtr membership_;
  std::unique_ptr<FleetMetrics> metrics_;  // null without a fleet
  Follow follow_;                          // set by Start, before the membership's thread

  mutable Mutex mu_;
  Ownership current_ GUARDED_BY(mu_);
  Config file_ GUARDED_BY(mu_);
  int reported_partitions_ GUARDED_BY(mu_) = 0;  // the count ShardProblems last ran for
};

}  // namespace outbox
