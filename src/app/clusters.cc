#include "app/clusters.h"

#include <algorithm>

#include "common/log.h"

namespace outbox {

bool CreateClusters(const Config& config, std::vector<Cluster>* clusters) {
  for (const auto& s : config.services) {
    auto it = std::find_if(clusters->begin(), clusters->end(),
                           [&](const Cluster& c) { return c.config == s.kafka; });
    if (it == clusters->end())
      clusters->push_back({s.kafka, s.lease_ms, nullptr});
    else
      it->min_lease_ms = std::min(it->min_lease_ms, s.lease_ms);
  }
  for (auto& c : *clusters) {
    std::vector<std::string> warnings;
    auto props = ProducerProperties(c.config, "outbox-relay-" + config.instance_id, c.min_lease_ms,
                                    &warnings);
    for (const auto& w : warnings) LogWarn("config warning", {{"error", w}});
    std::string error;
    c.publisher = KafkaPublisher::Create(props, &error);
    if (!c.publisher) {
      LogError("cannot create the Kafka producer",
               {{"bootstrap_servers", c.config.bootstrap_servers}, {"error", error}});
      return false;
    }
  }
  return true;
}

std::shared_ptr<KafkaPublisher> PublisherFor(const std::vector<Cluster>& clusters,
                                             const ServiceConfig& service) {
  auto it = std::find_if(clusters.begin(), clusters.end(),
                         [&](const Cluster& c) { return c.config == service.kafka; });
  return it == clusters.end() ? nullptr : it->publisher;
}

}  // namespace outbox
