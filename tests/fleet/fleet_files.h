#pragma once

// The config files of the fleet's unit tests: three services, a pinned to
// shard 0, b and c to shard 1.

#include <string>

#include "config/config_loader.h"

namespace outbox::testing {

inline Config FleetFile(const std::string& services, bool fleet = true) {
  return LoadConfigText(std::string(fleet ? "fleet: {group_id: g, topic: shards}\n" : "") +
                            "kafka: {bootstrap_servers: k:9092}\nservices:\n" + services,
                        "c.yaml")
      .config;
}

inline const std::string kThreeServices =
    "  - {name: a, shard: 0, mysql: {user: u, database: a}}\n"
    "  - {name: b, shard: 1, mysql: {user: u, database: b}}\n"
    "  - {name: c, shard: 1, mysql: {user: u, database: c}}\n";

inline bool Has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

}  // namespace outbox::testing
