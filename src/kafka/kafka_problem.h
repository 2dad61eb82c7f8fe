#pragma once

#include <librdkafka/rdkafka.h>

#include <string>
#include <string_view>

namespace outbox {

// Why the relay cannot use a Kafka cluster or a topic, in the words of the
// broker or librdkafka, with the class of the cause: what `check --connect`
// prints, /readyz shows and the log line's `cause` and `error` fields carry.
enum class KafkaCause {
  kNone,
  kBrokerDown,      // no broker answered (refused, unresolvable, timed out)
  kAuthentication,  // SASL: wrong mechanism, user or password
  kTls,             // TLS: handshake failed, certificate not trusted, CA unreadable
  kAuthorization,   // the principal may not write or describe (ACLs)
  kUnknownTopic,    // the topic does not exist and is not created on demand
  kOther,           // any other error the broker or librdkafka reported
};

struct KafkaProblem {
  KafkaCause cause = KafkaCause::kNone;
  std::string error;  // librdkafka's or the broker's text
  // Only what the relay saw (a metadata request without an answer, "1/1
  // brokers are down"), not librdkafka's account of why.
  bool generic = false;

  bool ok() const { return cause == KafkaCause::kNone; }
  // "authentication: <error> (<hint>)", "" when ok.
  std::string Describe() const;
};

// The cause of a librdkafka error (an error callback's code and text, a
// metadata answer's code).
KafkaCause ClassifyKafkaProblem(rd_kafka_resp_err_t err, std::string_view text);

// "authentication", "tls", ...: the `cause` field of log lines.
std::string_view ToLabel(KafkaCause cause);

// What to check for a cause, e.g. " (check security.protocol, sasl.* ...)".
std::string_view KafkaHint(KafkaCause cause);

}  // namespace outbox
