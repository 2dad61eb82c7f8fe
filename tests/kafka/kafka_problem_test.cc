// The class of a Kafka problem from librdkafka's code and text, and when the
// producer's queue is taken back (tables).

#include "kafka/kafka_problem.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "kafka/kafka_publisher.h"

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

TEST_CASE(
    "the producer's queue is taken back while no broker is reachable and when a queued "
    "message's budget passed since the last purge",
    "[kafka-problem]") {
  using namespace std::chrono_literals;
  const Clock::TimePoint t{std::chrono::seconds(100)};
  struct Row {
    bool broker_up;
    std::multiset<Clock::TimePoint> deadlines;
    Clock::TimePoint purged_through;
    Clock::TimePoint now;
    const char* cause;
  };
  const Row rows[] = {
      {true, {}, {}, t, nullptr},
      {false, {}, {}, t, "broker_down"},
      {true, {t + 1s}, {}, t, nullptr},                           // not yet
      {true, {t - 1s, t + 1s}, {}, t, "budget_ended"},            // one passed
      {true, {t}, {}, t, "budget_ended"},                         // at its end
      {true, {t - 1s}, t - 500ms, t, nullptr},                    // purged (or on the wire) then
      {true, {t - 2s, t - 200ms}, t - 500ms, t, "budget_ended"},  // a later one passed
      {false, {t + 5s}, t, t, "broker_down"},
  };
  for (const auto& r : rows) {
    const char* got = DuePurge(r.broker_up, r.deadlines, r.purged_through, r.now);
    INFO("broker_up " << r.broker_up << " deadlines " << r.deadlines.size());
    CHECK(std::string(got ? got : "") == std::string(r.cause ? r.cause : ""));
  }
}
