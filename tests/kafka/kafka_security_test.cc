// Kafka security settings passed through to librdkafka, without a broker (the
// HTTP listener's default address: tests/http/http_server_test.cc).

#include <catch2/catch.hpp>

#include "kafka/kafka_config.h"
#include "kafka/kafka_publisher.h"

using namespace outbox;

namespace {

// A Kafka config that logs in as "relay" with password "kafka-secret".
KafkaConfig SaslConfig(const std::string& bootstrap, const std::string& protocol,
                       const std::string& mechanism) {
  KafkaConfig k;
  k.bootstrap_servers = bootstrap;
  k.properties = {{"security.protocol", protocol},
                  {"sasl.mechanism", mechanism},
                  {"sasl.username", "relay"},
                  {"sasl.password", "kafka-secret"}};
  return k;
}

}  // namespace

TEST_CASE("Kafka security.protocol and ssl.* and sasl.* properties pass through unchanged",
          "[security]") {
  KafkaConfig k = SaslConfig("broker:9093", "SASL_SSL", "SCRAM-SHA-512");
  k.properties.insert({{"ssl.ca.location", "/etc/ssl/kafka-ca.pem"},
                       {"ssl.certificate.location", "/etc/ssl/relay.pem"},
                       {"ssl.key.location", "/etc/ssl/relay.key"},
                       {"ssl.key.password", "key-secret"},
                       {"ssl.endpoint.identification.algorithm", "https"}});
  std::vector<std::string> warnings;
  auto p = ProducerProperties(k, "outbox-relay-test", 30000, &warnings);
  for (const auto& [key, value] : k.properties) {
    INFO(key);
    REQUIRE(p.count(key) == 1);
    CHECK(p.at(key) == value);
  }
  CHECK(p.at("bootstrap.servers") == "broker:9093");
  CHECK(p.at("enable.idempotence") == "true");
  CHECK(p.at("acks") == "all");
  CHECK(warnings.empty());

  // A weakening setting beside the secrets is warned about by name, and the
  // warning repeats no secret.
  k.properties["acks"] = "1";
  warnings.clear();
  (void)ProducerProperties(k, "outbox-relay-test", 30000, &warnings);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].rfind("kafka.properties.acks=1 weakens delivery", 0) == 0);
  CHECK(warnings[0].find("secret") == std::string::npos);
}

TEST_CASE("librdkafka accepts the SASL and TLS settings the relay passes and names a bad one",
          "[security]") {
  KafkaConfig k = SaslConfig("127.0.0.1:1", "SASL_PLAINTEXT", "PLAIN");
  std::vector<std::string> warnings;
  std::string err;
  auto ok = KafkaPublisher::Create(ProducerProperties(k, "t", 30000, &warnings), &err);
  CHECK(ok);
  CHECK(err.empty());
  k.properties["security.protocol"] = "SASL_TLS";
  auto bad = KafkaPublisher::Create(ProducerProperties(k, "t", 30000, &warnings), &err);
  CHECK_FALSE(bad);
  CHECK(err.rfind("kafka property security.protocol: ", 0) == 0);
  CHECK(err.find("kafka-secret") == std::string::npos);
  // One line: librdkafka ends some messages with a newline.
  k.properties = {{"linger.ms", "-5"}};
  auto range = KafkaPublisher::Create(ProducerProperties(k, "t", 30000, &warnings), &err);
  CHECK(range == nullptr);
  CHECK(err ==
        "kafka property linger.ms: Configuration property \"queue.buffering.max.ms\" value -5 "
        "is outside allowed range 0..900000");
}
