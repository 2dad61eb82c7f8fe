#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "kafka/kafka_config.h"
#include "kafka/kafka_publisher.h"

namespace outbox {

// One Kafka producer per distinct cluster config, shared by the services that
// use that config.
struct Cluster {
  KafkaConfig config;
  int64_t min_lease_ms;  // the shortest lease of its services bounds delivery
  std::shared_ptr<KafkaPublisher> publisher;
};

// A cluster config whose producer cannot be created, and librdkafka's reason.
struct ClusterFailure {
  KafkaConfig config;
  std::string error;
};

// Creates the producers of the services of `config` into *clusters; the
// ones that cannot be created are left out and returned (the caller logs).
std::vector<ClusterFailure> CreateClusters(const Config& config, std::vector<Cluster>* clusters);

}  // namespace outbox
