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

// This relay's place in its fleet (SPEC §3 "Fleet", docs/DEPLOY.md "A
// fleet"): the group membership, the shards it owns now, and the metrics,
// log lines and /readyz lines about them. Without a fleet block it owns
// every service and does nothing else.
//
// What runs is not decided here: an assignment change calls `on_change`,
// which queues it to the one thread that drives the ServiceSet (Reloader),
// and that thread asks Current().
//
// Thread-safety: Start and Stop from the daemon's thread; the rest from any.
// Lifetime: `metrics` must outlive it.
class Fleet {
 public:
  using MembershipPtr = std::unique_ptr<GroupMembership>;

  // `membership` is null exactly when `file` has no fleet block.
  Fleet(const Config& file, MembershipPtr membership, Metrics* metrics);
  ~Fleet();  // Stop

  // Joins the group; `on_change` is called (from the membership's thread)
  // after each assignment change. Ok at once without a fleet.
  Status Start(std::function<void()> on_change);
  // Leaves the group: its shards move to the other members at once.
  void Stop();

  bool enabled() const { return membership_ != nullptr; }
  // What this relay serves now.
  Ownership Current() const EXCLUDES(mu_);
  // The file's services changed (a reload): for the log lines, and
  // outbox_service_owned of services gone from it.
  void SetFile(const Config& file) EXCLUDES(mu_);
  // outbox_service_owned of every service of the file, after the services
  // have been started and stopped to match Current().
  void ExportOwned() EXCLUDES(mu_);
  // Appends the fleet's /readyz line to `body`; false when this relay is not
  // a member of its group (a member that owns nothing is ready).
  bool Readyz(std::string* body) const EXCLUDES(mu_);

 private:
  void OnAssignment(const GroupAssignment& a) EXCLUDES(mu_);

  const std::optional<FleetConfig> config_;
  const MembershipPtr membership_;
  std::unique_ptr<FleetMetrics> metrics_;  // null without a fleet
  std::function<void()> on_change_;        // set by Start, before the membership's thread

  mutable Mutex mu_;
  Ownership current_ GUARDED_BY(mu_);
  Config file_ GUARDED_BY(mu_);
  int reported_partitions_ GUARDED_BY(mu_) = 0;  // the count ShardProblems last ran for
};

}  // namespace outbox
