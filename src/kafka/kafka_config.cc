#include "kafka/kafka_config.h"

#include <algorithm>

namespace outbox {

namespace {

// A warning for each kafka.properties override `k`=`v` that weakens what
// the relay promises.
void WarnOfOverride(const std::string& k, const std::string& v, int64_t min_lease_ms,
                    std::vector<std::string>* warnings) {
  if ((k == "enable.idempotence" && v != "true") || (k == "acks" && v != "all" && v != "-1")) {
    warnings->push_back("kafka.properties." + k + "=" + v +
                        " weakens delivery: SENT will no longer mean acknowledged by all "
                        "in-sync replicas");
  }
  // murmur2 and murmur2_random differ only for a null key, which the relay
  // never sends; anything else breaks README "How it works"'s Java-compatible partition.
  if (k == "partitioner" && v != "murmur2_random" && v != "murmur2") {
    warnings->push_back("kafka.properties.partitioner=" + v +
                        " breaks per-aggregate order: an aggregate's events no longer share "
                        "one partition (nor the Java client's), so consumers can see them out "
                        "of order");
  }
  if ((k == "message.timeout.ms" || k == "delivery.timeout.ms" || k == "request.timeout.ms")) {
    try {
      if (std::stoll(v) >= min_lease_ms)
        warnings->push_back("kafka.properties." + k + "=" + v + " is not below lease_ms (" +
                            std::to_string(min_lease_ms) +
                            "): a slow delivery can outlive its lease and be sent twice");
    } catch (...) {
      // librdkafka reports the bad value itself.
    }
  }
}

}  // namespace

std::map<std::string, std::string> ProducerProperties(const KafkaConfig& kafka,
                                                      const std::string& client_id,
                                                      int64_t min_lease_ms,
                                                      std::vector<std::string>* warnings) {
  int64_t timeout_ms = std::max<int64_t>(1000, min_lease_ms / 2);
  std::map<std::string, std::string> p = {
      {"bootstrap.servers", kafka.bootstrap_servers},
      {"client.id", client_id},
      // SENT means durable: every in-sync replica has it, written once.
      {"enable.idempotence", "true"},
      {"acks", "all"},
      // Same key, same partition as the Java client (murmur2).
      {"partitioner", "murmur2_random"},
      // Batching without the wait: a claimed batch reaches the producer at
      // once, so its messages batch anyway; what linger.ms adds is latency
      // for the single events of a quiet service (librdkafka's default 5 ms
      // is a third of the p50 at 1-100 events/s, and drains are no slower
      // at 1: docs/BENCHMARKS.md "Wake-up").
      {"linger.ms", "1"},
      // The claim's budget (src/relay/chain_publisher.h, PublishBudget): a
      // message handed over by lease/2 - 1 s after its claim is failed by
      // lease - 1 s, on the wire or not; the broker waits for the replicas
      // no longer than the producer waits for it.
      {"message.timeout.ms", std::to_string(timeout_ms)},
      {"request.timeout.ms", std::to_string(timeout_ms)},
      // Bounded by max_inflight_batches * batch_size per service anyway.
      {"queue.buffering.max.messages", "1000000"},
      {"log.connection.close", "false"},
      {"socket.keepalive.enable", "true"},
  };
  for (const auto& [k, v] : kafka.properties) {
    WarnOfOverride(k, v, min_lease_ms, warnings);
    p[k] = v;
  }
  return p;
}

}  // namespace outbox
