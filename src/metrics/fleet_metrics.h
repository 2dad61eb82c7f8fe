#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <map>
#include <string>

#include "common/mutex.h"

namespace outbox {

// The fleet's metrics (docs/METRICS.md "Fleet"), on the registry of the
// daemon's Metrics; made only when the config has a fleet block, so that a
// relay without one exports none of them. Thread-safe.
class FleetMetrics {
 public:
  // The rebalance kinds, each exported from the start at 0.
  static constexpr const char* kKinds[] = {"assigned",  "revoked", "lost",
                                           "suspended", "resumed", "resized"};

  explicit FleetMetrics(prometheus::Registry& registry);

  void SetMember(bool member) { member_->Set(member ? 1 : 0); }
  void SetShardsOwned(size_t shards) { shards_->Set(static_cast<double>(shards)); }
  // outbox_fleet_rebalances_total{kind}; `kind` one of kKinds.
  void AddRebalance(const std::string& kind) EXCLUDES(mu_);
  // outbox_service_owned{service}: 1 on the relay that serves it, 0 on the others.
  void SetOwned(const std::string& service, bool owned) EXCLUDES(mu_);
  // Drops the series of a service no longer in the file.
  void RemoveOwned(const std::string& service) EXCLUDES(mu_);

 private:
  prometheus::Gauge* member_;
  prometheus::Gauge* shards_;
  prometheus::Family<prometheus::Counter>* rebalances_;
  prometheus::Family<prometheus::Gauge>* owned_family_;

  Mutex mu_;
  std::map<std::string, prometheus::Counter*> rebalance_ GUARDED_BY(mu_);
  std::map<std::string, prometheus::Gauge*> owned_ GUARDED_BY(mu_);
};

}  // namespace outbox
