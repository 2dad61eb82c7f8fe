#include "app/clusters.h"

#include <algorithm>

#include "common/log.h"

namespace outbox {

std::vector<ClusterFailure> CreateClusters(const Config& config, std::vector<Cluster>* clusters) {
  std::vector<Cluster> wanted;
  for (const auto& s : config.services) {
    auto it = std::find_if(wanted.begin(), wanted.end(),
                           [&](const Cluster& c) { return c.config == s.kafka; });
    if (it == wanted.end())
      wanted.push_back({s.kafka, s.lease_ms, nullptr});
    else
      it->min_lease_ms = std::min(it->min_lease_ms, s.lease_ms);
  }
  std::vector<ClusterFailure> failures;
  for (auto& c : wanted) {
    std::vector<std::string> warnings;
    auto props = ProducerProperties(c.config, "outbox-relay-" + config.instance_id, c.min_lease_ms,
                                    &warnings);
    for (const auto& w : warnings) LogWarn("config warning", {{"error", w}});
    std::string error;
    c.publisher = KafkaPublisher::Create(props, &error);
    if (!c.publisher) {
      failures.push_back({c.config, error});
      continue;
    }
    clusters->push_back(std::move(c));
  }
  return failures;
}

}  // namespace outbox
