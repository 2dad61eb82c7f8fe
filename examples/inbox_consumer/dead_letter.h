#pragma once

#include <librdkafka/rdkafka.h>

#include <string>

#include "consumer_config.h"

namespace inbox {

// Produces messages the consumer cannot process to their dead-letter topic
// (kafka.dead_letter_topic, "{topic}.dlq" by default): the original key,
// value and headers, plus `dlq_reason` (why), `dlq_source` ("topic/partition/
// offset" it was read from), `dlq_consumer`, `dlq_attempts` (how often it
// was tried) and `dlq_at` (when it was dead-lettered, RFC 3339 UTC).
// Idempotent producer, acks=all. Not thread-safe; used by the consumer loop
// only.
class DeadLetterProducer {
 public:
  explicit DeadLetterProducer(const ConsumerConfig& config);
  ~DeadLetterProducer();
  DeadLetterProducer(const DeadLetterProducer&) = delete;
  DeadLetterProducer& operator=(const DeadLetterProducer&) = delete;

  // False (and *error) if the producer could not be created.
  bool Start(std::string* error);

  // Serves the producer's callbacks (errors) without blocking; call it often.
  void Poll();

  enum class Result {
    kSent,     // acknowledged by the broker
    kRefused,  // refused for good (IsPermanentRefusal): sending it again cannot help
    kFailed,   // not taken now (broker down, timeout): try again later
  };
  // Sends `message` to `topic` and waits for the broker's acknowledgement
  // (at most message.timeout.ms, 30 s unless kafka.properties says
  // otherwise). *error says why when it is not kSent.
  Result Send(const rd_kafka_message_t* message, const std::string& topic,
              const std::string& reason, int attempts, std::string* error);

 private:
  const ConsumerConfig& config_;
  rd_kafka_t* rk_ = nullptr;
};

// Errors with which a broker (or the producer itself) refuses a message for
// good: too large, not authorized, no such topic, an invalid record.
bool IsPermanentRefusal(rd_kafka_resp_err_t err);

// The time now as RFC 3339 UTC with milliseconds (the dlq_at header).
std::string NowRfc3339();

// Routes librdkafka's own log lines into the consumer's log.
void KafkaLogToSpdlog(const rd_kafka_t* rk, int level, const char* fac, const char* buf);

}  // namespace inbox
