#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace outbox {

// Kafka's murmur2 as the Java client computes it (Utils.murmur2), so that a
// service's default shard is the partition a Java producer would choose for
// the key `name`: an operator can find it with any Kafka tool.
uint32_t Murmur2(std::string_view data);

// The shard of `service` in a fleet whose topic has `partitions` partitions:
// services[].shard when set, else murmur2(name) mod partitions with the sign
// bit cleared, as the Java partitioner does. REQUIRES: partitions > 0.
int ShardOf(const ServiceConfig& service, int partitions);

// A line for each service whose services[].shard is not a partition of a
// topic with `partitions` partitions ("services[3].shard: 12 is beyond ...").
std::vector<std::string> ShardProblems(const Config& config, int partitions);

}  // namespace outbox
