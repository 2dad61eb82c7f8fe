#include "config/config_diff.h"

#include <algorithm>

namespace outbox {

namespace {

using SameFn = bool (*)(const ServiceConfig&, const ServiceConfig&);

struct ServiceKey {
  const char* name;
  SameFn same;
};

// Every key of a services[] entry (docs/CONFIG.md "services[]"), in its
// order. A field added to ServiceConfig without a line here still counts as
// a change (operator==), reported as "another key".
const ServiceKey kServiceKeys[] = {
    {"mysql", [](const ServiceConfig& a, const ServiceConfig& b) { return a.mysql == b.mysql; }},
    {"topic", [](const ServiceConfig& a, const ServiceConfig& b) { return a.topic == b.topic; }},
    {"topics", [](const ServiceConfig& a, const ServiceConfig& b) { return a.topics == b.topics; }},
    {"batch_size",
     [](const ServiceConfig& a, const ServiceConfig& b) { return a.batch_size == b.batch_size; }},
    {"poll_interval_ms",
     [](const ServiceConfig& a, const ServiceConfig& b) {
       return a.poll_interval_ms == b.poll_interval_ms;
     }},
    {"wakeup", [](const ServiceConfig& a, const ServiceConfig& b) { return a.wakeup == b.wakeup; }},
    {"lease_ms",
     [](const ServiceConfig& a, const ServiceConfig& b) { return a.lease_ms == b.lease_ms; }},
    {"ordering",
     [](const ServiceConfig& a, const ServiceConfig& b) { return a.ordering == b.ordering; }},
    {"dead_policy",
     [](const ServiceConfig& a, const ServiceConfig& b) { return a.dead_policy == b.dead_policy; }},
    {"retry", [](const ServiceConfig& a, const ServiceConfig& b) { return a.retry == b.retry; }},
    {"retention",
     [](const ServiceConfig& a, const ServiceConfig& b) { return a.retention == b.retention; }},
    {"kafka",
     [](const ServiceConfig& a, const ServiceConfig& b) {
       return a.kafka == b.kafka && a.kafka_override == b.kafka_override;
     }},
    {"max_inflight_batches",
     [](const ServiceConfig& a, const ServiceConfig& b) {
       return a.max_inflight_batches == b.max_inflight_batches;
     }},
    {"gauge_interval_ms",
     [](const ServiceConfig& a, const ServiceConfig& b) {
       return a.gauge_interval_ms == b.gauge_interval_ms;
     }},
    {"paused", [](const ServiceConfig& a, const ServiceConfig& b) { return a.paused == b.paused; }},
    {"shard", [](const ServiceConfig& a, const ServiceConfig& b) { return a.shard == b.shard; }},
    {"envelope",
     [](const ServiceConfig& a, const ServiceConfig& b) { return a.envelope == b.envelope; }},
    {"cloudevents",
     [](const ServiceConfig& a, const ServiceConfig& b) { return a.cloudevents == b.cloudevents; }},
    {"value_format",
     [](const ServiceConfig& a, const ServiceConfig& b) {
       return a.value == b.value && a.values == b.values;
     }},
};

const ServiceConfig* Find(const Config& c, const std::string& name) {
  auto it = std::find_if(c.services.begin(), c.services.end(),
                         [&](const ServiceConfig& s) { return s.name == name; });
  return it == c.services.end() ? nullptr : &*it;
}

// Sets `*value` back to `running` and notes `key` when they differ.
template <typename T>
void Keep(const char* key, const T& running, T* value, std::vector<std::string>* changed) {
  if (*value == running) return;
  changed->push_back(key);
  *value = running;
}

// The top-level keys only a restart applies: instance_id names the
// producers and the binlog server_id, http.listen is bound once, the logger
// is configured once, the producers are made from the kafka block, and the
// fleet's group is joined once.
void KeepRestartOnly(const Config& running, ReloadPlan* plan) {
  Config& c = plan->config;
  Keep("instance_id", running.instance_id, &c.instance_id, &plan->restart_only);
  Keep("http.listen", running.http_listen, &c.http_listen, &plan->restart_only);
  Keep("log.level", running.log_level, &c.log_level, &plan->restart_only);
  Keep("log.format", running.log_format, &c.log_format, &plan->restart_only);
  // The group is joined once; its topic's partitions are the shards.
  Keep("fleet", running.fleet, &c.fleet, &plan->restart_only);
  if (c.kafka == running.kafka) return;
  Keep("kafka", running.kafka, &c.kafka, &plan->restart_only);
  for (size_t i = 0; i < c.services.size(); ++i) {
    ServiceConfig& s = c.services[i];
    s.kafka = MergeKafka(c.kafka, s.kafka_override);
    if (s.kafka.bootstrap_servers.empty() && plan->error.empty())
      plan->error = "services[" + std::to_string(i) +
                    "].kafka.bootstrap_servers: would come from the changed top-level kafka "
                    "block, which only a restart applies; set it in the service or restart";
  }
}

}  // namespace

KafkaConfig MergeKafka(const KafkaConfig& base, const KafkaConfig& own) {
  KafkaConfig k = base;
  if (!own.bootstrap_servers.empty()) k.bootstrap_servers = own.bootstrap_servers;
  for (const auto& [key, value] : own.properties) k.properties[key] = value;
  if (own.schema_registry) k.schema_registry = own.schema_registry;
  return k;
}

std::vector<std::string> ChangedServiceKeys(const ServiceConfig& a, const ServiceConfig& b) {
  std::vector<std::string> keys;
  for (const ServiceKey& k : kServiceKeys)
    if (!k.same(a, b)) keys.emplace_back(k.name);
  if (keys.empty() && !(a == b)) keys.emplace_back("another key");
  return keys;
}

ReloadPlan PlanReload(const Config& running, const Config& loaded) {
  ReloadPlan plan;
  plan.config = loaded;
  KeepRestartOnly(running, &plan);
  for (const ServiceConfig& s : plan.config.services) {
    const ServiceConfig* old = Find(running, s.name);
    if (old == nullptr) {
      plan.added.push_back(s.name);
    } else if (*old == s) {
      plan.unchanged.push_back(s.name);
    } else {
      plan.changed.push_back({s.name, ChangedServiceKeys(*old, s)});
    }
  }
  for (const ServiceConfig& s : running.services)
    if (Find(plan.config, s.name) == nullptr) plan.removed.push_back(s.name);
  return plan;
}

}  // namespace outbox
