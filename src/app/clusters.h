#pragma once

#include <memory>
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

// Creates the producers. False (after an error log line) when one cannot be
// created.
bool CreateClusters(const Config& config, std::vector<Cluster>* clusters);

// The producer serving `service`. REQUIRES: CreateClusters succeeded.
std::shared_ptr<KafkaPublisher> PublisherFor(const std::vector<Cluster>& clusters,
                                             const ServiceConfig& service);

}  // namespace outbox
