#include "metrics/fleet_metrics.h"

#include "metrics/families.h"

namespace outbox {

FleetMetrics::FleetMetrics(prometheus::Registry& registry) {
  member_ = &AddGauge(registry, "outbox_fleet_member",
                      "1 while the relay is a member of its fleet's group")
                 ->Add({});
  shards_ = &AddGauge(registry, "outbox_fleet_shards_owned",
                      "Shards (partitions of fleet.topic) assigned to this relay")
                 ->Add({});
  rebalances_ = AddCounter(registry, "outbox_fleet_rebalances_total",
                           "Assignment changes of this relay's shards, by kind");
  owned_family_ = AddGauge(registry, "outbox_service_owned",
                           "1 on the relay that serves the service, 0 on the fleet's other "
                           "members");
  MutexLock lock(&mu_);
  for (const char* kind : kKinds) rebalance_[kind] = &rebalances_->Add({{"kind", kind}});
}

void FleetMetrics::AddRebalance(const std::string& kind) {
  MutexLock lock(&mu_);
  auto it = rebalance_.find(kind);
  if (it != rebalance_.end()) it->second->Increment();
}

void FleetMetrics::SetOwned(const std::string& service, bool owned) {
  MutexLock lock(&mu_);
  prometheus::Gauge*& g = owned_[service];
  if (g == nullptr) g = &owned_family_->Add({{"service", service}});
  g->Set(owned ? 1 : 0);
}

void FleetMetrics::RemoveOwned(const std::string& service) {
  MutexLock lock(&mu_);
  auto it = owned_.find(service);
  if (it == owned_.end()) return;
  owned_family_->Remove(it->second);
  owned_.erase(it);
}

}  // namespace outbox
