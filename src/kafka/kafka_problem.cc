#include "kafka/kafka_problem.h"

#include "common/enum_names.h"

namespace outbox {

namespace {

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// In KafkaCause's order (kafka_problem.h): a new value's label goes at the end.
constexpr const char* const kCauseLabels[] = {
    "", "broker_down", "authentication", "tls", "authorization", "unknown_topic", "broker_error"};
static_assert(NamesEveryValue(kCauseLabels, KafkaCause::kOther));

}  // namespace

KafkaCause ClassifyKafkaProblem(rd_kafka_resp_err_t err, std::string_view text) {
  switch (err) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
      return KafkaCause::kNone;
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
    case RD_KAFKA_RESP_ERR_UNSUPPORTED_SASL_MECHANISM:
    case RD_KAFKA_RESP_ERR_ILLEGAL_SASL_STATE:
      return KafkaCause::kAuthentication;
    case RD_KAFKA_RESP_ERR__SSL:
      return KafkaCause::kTls;
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
      return KafkaCause::kAuthorization;
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
      return KafkaCause::kUnknownTopic;
    case RD_KAFKA_RESP_ERR__TRANSPORT:
      // librdkafka reports a failed TLS handshake as a transport error
      // ("SSL handshake failed: ...") and SASL failures at connect in the
      // same way on some paths.
      if (Contains(text, "SSL") || Contains(text, "certificate")) return KafkaCause::kTls;
      if (Contains(text, "SASL")) return KafkaCause::kAuthentication;
      return KafkaCause::kBrokerDown;
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__RESOLVE:
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
      return KafkaCause::kBrokerDown;
    default:
      return KafkaCause::kOther;
  }
}

std::string_view ToLabel(KafkaCause cause) { return NameOf(kCauseLabels, cause, "broker_error"); }

std::string_view KafkaHint(KafkaCause cause) {
  switch (cause) {
    case KafkaCause::kBrokerDown:
      return " (are the brokers running and reachable at kafka.bootstrap_servers?)";
    case KafkaCause::kAuthentication:
      return " (check security.protocol, sasl.mechanism, sasl.username and sasl.password in "
             "kafka.properties against the broker's listener)";
    case KafkaCause::kTls:
      return " (check security.protocol and ssl.* in kafka.properties: ssl.ca.location must "
             "name a readable CA that signed the brokers' certificates)";
    case KafkaCause::kAuthorization:
      return " (the relay's principal needs WRITE and DESCRIBE on the topic, and IDEMPOTENT_WRITE "
             "on the cluster for Kafka before 3.0)";
    case KafkaCause::kUnknownTopic:
      return " (create the topic, or let the brokers create topics on first use)";
    case KafkaCause::kNone:
    case KafkaCause::kOther:
      break;
  }
  return "";
}

std::string KafkaProblem::Describe() const {
  if (ok()) return "";
  std::string out(ToLabel(cause));
  out.append(": ").append(error).append(KafkaHint(cause));
  return out;
}

}  // namespace outbox
