// The class of a Kafka problem from librdkafka's code and text (table).

#include "kafka/kafka_problem.h"

#include <catch2/catch.hpp>

using namespace outbox;

TEST_CASE(
    "librdkafka's errors are classed as authentication or TLS or authorization or unknown topic "
    "or broker down",
    "[kafka-problem]") {
  struct Row {
    rd_kafka_resp_err_t err;
    const char* text;
    KafkaCause cause;
  };
  const Row rows[] = {
      {RD_KAFKA_RESP_ERR__AUTHENTICATION, "SASL Handshake not supported by broker",
       KafkaCause::kAuthentication},
      {RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED, "", KafkaCause::kAuthentication},
      {RD_KAFKA_RESP_ERR__SSL, "certificate verify failed", KafkaCause::kTls},
      {RD_KAFKA_RESP_ERR__TRANSPORT, "SSL handshake failed: Disconnected", KafkaCause::kTls},
      {RD_KAFKA_RESP_ERR__TRANSPORT, "Disconnected (after 0ms in state SSL_HANDSHAKE)",
       KafkaCause::kTls},
      {RD_KAFKA_RESP_ERR__TRANSPORT, "Connect to ipv4#127.0.0.1:1 failed: Connection refused",
       KafkaCause::kBrokerDown},
      {RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "1/1 brokers are down", KafkaCause::kBrokerDown},
      {RD_KAFKA_RESP_ERR__RESOLVE, "Failed to resolve 'kafka:9092'", KafkaCause::kBrokerDown},
      {RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, "", KafkaCause::kAuthorization},
      {RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED, "", KafkaCause::kAuthorization},
      {RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, "", KafkaCause::kUnknownTopic},
      {RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, "", KafkaCause::kOther},
      {RD_KAFKA_RESP_ERR_NO_ERROR, "", KafkaCause::kNone},
  };
  for (const auto& r : rows) {
    INFO(rd_kafka_err2name(r.err) << " " << r.text);
    CHECK(ClassifyKafkaProblem(r.err, r.text) == r.cause);
  }
  CHECK(KafkaProblem{}.Describe().empty());
  CHECK(KafkaProblem{KafkaCause::kTls, "x"}.Describe().rfind("tls: x (check security.protocol",
                                                             0) == 0);
  CHECK(ToLabel(KafkaCause::kOther) == "broker_error");
}
