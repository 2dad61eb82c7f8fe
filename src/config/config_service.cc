// One entry of `services` (docs/CONFIG.md "services") and the kafka blocks.

#include "config/config_parser.h"
#include "config/topic_template.h"

namespace outbox {
namespace config_internal {

namespace {

// The keys of a service's mapping.
const std::vector<std::string>& ServiceKeys() {
  static const std::vector<std::string> keys = {"name",
                                                "mysql",
                                                "topic",
                                                "topics",
                                                "batch_size",
                                                "poll_interval_ms",
                                                "wakeup",
                                                "lease_ms",
                                                "ordering",
                                                "dead_policy",
                                                "retry",
                                                "retention",
                                                "kafka",
                                                "max_inflight_batches",
                                                "gauge_interval_ms",
                                                "paused",
                                                "shard",
                                                "envelope",
                                                "cloudevents",
                                                "value_format",
                                                "payload_encoding",
                                                "schema",
                                                "values"};
  return keys;
}

}  // namespace

KafkaConfig Parser::Kafka(const YAML::Node& n, const std::string& path, const KafkaConfig& base,
                          std::vector<std::string>* warnings) const {
  KafkaConfig k = base;
  if (!n || n.IsNull()) return k;
  RequireMap(n, path);
  CheckKeys(n, path, {"bootstrap_servers", "properties", "schema_registry"});
  if (const YAML::Node sr = n["schema_registry"]; sr && !sr.IsNull())
    (void)Guard(
        [&] { k.schema_registry = SchemaRegistry(sr, path + ".schema_registry", warnings); });
  if (n["bootstrap_servers"]) {
    k.bootstrap_servers = Str(n["bootstrap_servers"], path + ".bootstrap_servers");
    if (k.bootstrap_servers.empty())
      Report(n["bootstrap_servers"].Mark(), path + ".bootstrap_servers", "must not be empty");
  }
  if (!n["properties"]) return k;
  for (auto& [key, value] : StringMap(n["properties"], path + ".properties")) {
    if (key == "bootstrap.servers")
      Report(n["properties"].Mark(), path + ".properties." + key,
             "set kafka.bootstrap_servers instead");
    // A transactional producer refuses every produce outside a
    // transaction (_STATE): each row would go DEAD after max_attempts.
    else if (key == "transactional.id")
      Report(n["properties"].Mark(), path + ".properties." + key,
             "the relay does not use Kafka transactions (its producer is idempotent; "
             "consumers deduplicate by event_key): remove it");
    else
      k.properties[key] = value;
  }
  return k;
}

ServiceConfig Parser::Service(const YAML::Node& n, const std::string& path,
                              const KafkaConfig& kafka, std::vector<std::string>* warnings) const {
  ServiceConfig s;
  RequireMap(n, path);
  CheckKeys(n, path, ServiceKeys());
  if (!n["name"]) Fail(n.Mark(), path + ".name", "is required");
  s.name = Str(n["name"], path + ".name");
  if (!IsServiceName(s.name))
    Report(n["name"].Mark(), path + ".name",
           "must be 1-64 characters of [A-Za-z0-9_.-] (got " + Quoted(s.name) + ")");
  (void)Guard([&] { s.mysql = Mysql(n, n["mysql"], path + ".mysql", warnings); });
  (void)Guard([&] { ServiceTopics(n, path, &s); });
  ServiceLoop(n, path, &s);
  if (const YAML::Node r = n["retry"]; r && !r.IsNull())
    (void)Guard([&] { ServiceRetry(r, path + ".retry", &s.retry); });
  if (const YAML::Node r = n["retention"]; r && !r.IsNull())
    (void)Guard([&] { ServiceRetention(r, path + ".retention", &s.retention); });
  if (Guard([&] { s.kafka = Kafka(n["kafka"], path + ".kafka", kafka, warnings); }) &&
      s.kafka.bootstrap_servers.empty())
    Report(n.Mark(), path + ".kafka.bootstrap_servers",
           "is required (here or in the top-level kafka block)");
  (void)Guard([&] { s.kafka_override = Kafka(n["kafka"], path + ".kafka", KafkaConfig{}); });
  if (n["max_inflight_batches"])
    s.max_inflight_batches =
        static_cast<int>(Int(n["max_inflight_batches"], path + ".max_inflight_batches", 1, 64));
  if (n["gauge_interval_ms"])
    s.gauge_interval_ms =
        static_cast<int>(Int(n["gauge_interval_ms"], path + ".gauge_interval_ms", 100, 600000));
  if (n["paused"]) s.paused = OneOf(n["paused"], path + ".paused", {"false", "true"}) == 1;
  // Beyond the topic's partitions is checked against the topic itself
  // (check --connect, and at start): its partition count is not in the file.
  if (n["shard"]) s.shard = static_cast<int>(Int(n["shard"], path + ".shard", 0, 99999));
  (void)Guard([&] { ServiceEnvelope(n, path, &s, warnings); });
  (void)Guard([&] { ServiceValues(n, path, &s); });
  return s;
}

// topic (a template) and topics (literal names per event_type).
void Parser::ServiceTopics(const YAML::Node& n, const std::string& path, ServiceConfig* s) const {
  if (n["topic"]) s->topic = Str(n["topic"], path + ".topic");
  const YAML::Mark mark = n["topic"] ? n["topic"].Mark() : n.Mark();
  TopicTemplate t;
  std::string err;
  if (!TopicTemplate::Parse(s->topic, &t, &err)) Fail(mark, path + ".topic", err);
  // The shortest topic it can render: every row-dependent placeholder empty.
  std::string fixed = t.Render("", "", s->name);
  std::string why;
  if (!t.uses_row_fields() && !IsValidTopicName(fixed, &why))
    Fail(mark, path + ".topic", "renders an invalid Kafka topic name: " + why);
  if (fixed.size() > 249)
    Fail(mark, path + ".topic",
         "renders topic names of at least " + std::to_string(fixed.size()) +
             " characters; Kafka allows 249");
  const YAML::Node topics = n["topics"];
  if (!topics) return;
  s->topics = StringMap(topics, path + ".topics");
  for (const auto& kv : topics) {
    const std::string event_type = kv.first.Scalar();
    const std::string& topic = s->topics[event_type];
    if (IsValidTopicName(topic, &why)) continue;
    if (topic.find('{') != std::string::npos)
      why += " (topics values are topic names taken literally; placeholders work only in topic)";
    Report(kv.second.Mark(), path + ".topics." + event_type, why);
  }
}

// How the service's loop claims: batch size, polling, wake-up, lease, order.
void Parser::ServiceLoop(const YAML::Node& n, const std::string& path, ServiceConfig* s) const {
  if (n["batch_size"])
    s->batch_size = static_cast<int>(Int(n["batch_size"], path + ".batch_size", 1, 10000));
  if (n["poll_interval_ms"])
    s->poll_interval_ms =
        static_cast<int>(Int(n["poll_interval_ms"], path + ".poll_interval_ms", 1, 60000));
  if (n["wakeup"])
    s->wakeup = static_cast<WakeupMode>(OneOf(n["wakeup"], path + ".wakeup", {"poll", "binlog"}));
  // Leases are whole seconds in the DATETIME column, and the lease token is
  // the lease's end, so a lease must span at least two seconds.
  if (n["lease_ms"]) s->lease_ms = Int(n["lease_ms"], path + ".lease_ms", 2000, 86400000);
  if (n["ordering"])
    s->ordering =
        static_cast<Ordering>(OneOf(n["ordering"], path + ".ordering", {"per_aggregate", "none"}));
  if (n["dead_policy"])
    s->dead_policy =
        static_cast<DeadPolicy>(OneOf(n["dead_policy"], path + ".dead_policy", {"block", "skip"}));
}

void Parser::ServiceRetry(const YAML::Node& r, const std::string& rp, RetryConfig* retry) const {
  RequireMap(r, rp);
  CheckKeys(r, rp, {"max_attempts", "initial_backoff_ms", "max_backoff_ms"});
  if (r["max_attempts"])
    retry->max_attempts = static_cast<int>(Int(r["max_attempts"], rp + ".max_attempts", 1, 1000));
  if (r["initial_backoff_ms"])
    retry->initial_backoff_ms =
        Int(r["initial_backoff_ms"], rp + ".initial_backoff_ms", 1, 86400000);
  if (r["max_backoff_ms"])
    retry->max_backoff_ms = Int(r["max_backoff_ms"], rp + ".max_backoff_ms", 1, 86400000);
  if (retry->max_backoff_ms < retry->initial_backoff_ms)
    Report(r["max_backoff_ms"] ? r["max_backoff_ms"].Mark() : r.Mark(), rp + ".max_backoff_ms",
           "must be >= initial_backoff_ms (" + std::to_string(retry->initial_backoff_ms) + ")");
}

void Parser::ServiceRetention(const YAML::Node& r, const std::string& rp,
                              RetentionConfig* retention) const {
  RequireMap(r, rp);
  CheckKeys(r, rp, {"sent_days", "batch_rows", "pause_ms", "interval_s"});
  if (r["sent_days"])
    retention->sent_days = static_cast<int>(Int(r["sent_days"], rp + ".sent_days", 1, 36500));
  if (r["batch_rows"])
    retention->batch_rows = static_cast<int>(Int(r["batch_rows"], rp + ".batch_rows", 1, 100000));
  if (r["pause_ms"])
    retention->pause_ms = static_cast<int>(Int(r["pause_ms"], rp + ".pause_ms", 0, 60000));
  if (r["interval_s"])
    retention->interval_s = static_cast<int>(Int(r["interval_s"], rp + ".interval_s", 1, 86400));
}

}  // namespace config_internal
}  // namespace outbox
