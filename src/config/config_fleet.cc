// The fleet block (docs/CONFIG.md "fleet") and services[].shard.

#include "config/config_parser.h"
#include "config/topic_template.h"

namespace outbox {
namespace config_internal {

FleetConfig Parser::Fleet(const YAML::Node& n, const KafkaConfig& kafka) const {
  FleetConfig f;
  RequireMap(n, "fleet");
  CheckKeys(n, "fleet", {"group_id", "topic", "session_timeout_ms", "static_membership", "kafka"});
  for (const char* key : {"group_id", "topic"})
    if (!n[key]) Report(n.Mark(), std::string("fleet.") + key, "is required");
  if (n["group_id"]) {
    f.group_id = Str(n["group_id"], "fleet.group_id");
    if (f.group_id.empty()) Report(n["group_id"].Mark(), "fleet.group_id", "must not be empty");
  }
  if (n["topic"]) {
    f.topic = Str(n["topic"], "fleet.topic");
    std::string why;
    if (!IsValidTopicName(f.topic, &why)) Report(n["topic"].Mark(), "fleet.topic", why);
  }
  // Kafka's brokers accept 6 s to 30 min by default
  // (group.min/max.session.timeout.ms); a broker configured otherwise may
  // refuse a value inside these bounds, which the relay then logs.
  if (n["session_timeout_ms"])
    f.session_timeout_ms =
        static_cast<int>(Int(n["session_timeout_ms"], "fleet.session_timeout_ms", 1000, 1800000));
  if (n["static_membership"])
    f.static_membership =
        OneOf(n["static_membership"], "fleet.static_membership", {"false", "true"}) == 1;
  f.kafka = Kafka(n["kafka"], "fleet.kafka", kafka);
  if (f.kafka.bootstrap_servers.empty())
    Report(n.Mark(), "fleet.kafka.bootstrap_servers",
           "is required (here or in the top-level kafka block)");
  return f;
}

void Parser::CheckShards(const YAML::Node& services, const Config& c) const {
  if (c.fleet) return;
  for (size_t i = 0; i < c.services.size(); ++i) {
    if (!c.services[i].shard) continue;
    Report(services[i]["shard"].Mark(), "services[" + std::to_string(i) + "].shard",
           "needs a fleet block: without one every relay serves every service");
  }
}

}  // namespace config_internal
}  // namespace outbox
