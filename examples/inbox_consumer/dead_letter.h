#pragma once

#include <librdkafka/rdkafka.h>

#include <string>

#include "consumer_config.h"

namespace inbox {

// Produces messages the consumer cannot process to their dead-letter topic
// (kafka.dead_letter_topic, "{topic}.dlq" by default): the original key,
// value and headers, plus `dlq_reason` (why), `dlq_source` ("topic/partition/
// offset" it was read from) and `dlq_consumer`. Idempotent producer,
// acks=all. Not thread-safe; used by the consumer loop only.
class DeadLetterProducer {
 public:
  explicit DeadLetterProducer(const ConsumerConfig& config);
  ~DeadLetterProducer();
  DeadLetterProducer(const DeadLetterProducer&) = delete;
  DeadLetterProducer& operator=(const DeadLetterProducer&) = delete;

  // False (and *error) if the producer could not be created.
  bool Start(std::string* error);

  // Sends `message` to `topic` and waits for the broker's acknowledgement
  // (at most message.timeout.ms, 30 s unless kafka.properties says
  // otherwise). False with *error when the broker did not take it: the
  // caller treats that as a broker failure and tries again later.
  // Serves the producer's callbacks (errors) without blocking; call it often.
  void Poll();

  bool Send(const rd_kafka_message_t* message, const std::string& topic, const std::string& reason,
            std::string* error);

 private:
  const ConsumerConfig& config_;
  rd_kafka_t* rk_ = nullptr;
};

// Routes librdkafka's own log lines into the consumer's log.
void KafkaLogToSpdlog(const rd_kafka_t* rk, int level, const char* fac, const char* buf);

}  // namespace inbox
