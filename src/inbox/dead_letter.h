#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "inbox/consumer_config.h"

namespace outbox::inbox {

// Produces messages the consumer cannot process to their dead-letter topic
// (kafka.dead_letter_topic, "{topic}.dlq" by default): the original key,
// value and headers, plus `dlq_reason` (why), `dlq_source` ("topic/partition/
// offset" it was read from), `dlq_consumer`, `dlq_attempts` (how often it
// was tried) and `dlq_at` (when it was dead-lettered, RFC 3339 UTC).
// Idempotent producer, acks=all. Asynchronous: Send hands the message over
// and returns; the broker's answer comes back from Poll, so waiting for it
// never blocks the consumer's poll loop (only the message's partition
// waits). Not thread-safe; used by the consumer loop only.
class DeadLetterProducer {
 public:
  // `clock`: the dlq_at header's time. `logs_on_poll`: librdkafka's lines
  // are logged by Poll, on the caller's thread, not from its own threads.
  DeadLetterProducer(const ConsumerConfig& config, outbox::ClockPtr clock,
                     bool logs_on_poll = false);
  ~DeadLetterProducer();
  DeadLetterProducer(const DeadLetterProducer&) = delete;
  DeadLetterProducer& operator=(const DeadLetterProducer&) = delete;

  // False (and *error) if the producer could not be created.
  bool Start(std::string* error);

  enum class Result {
    kSent,     // acknowledged by the broker
    kRefused,  // refused for good (IsPermanentRefusal): sending it again cannot help
    kFailed,   // not taken now (broker down, timeout): try again later
  };
  // The answer to the dead letter sent under `ticket`.
  struct Delivery {
    uint64_t ticket = 0;
    Result result = Result::kFailed;
    std::string error;  // why, when not kSent
  };

  // Hands `message` over for `topic` under `ticket` and returns at once.
  // Its Delivery comes from Poll: the broker's answer within
  // message.timeout.ms (30 s unless kafka.properties says otherwise), or at
  // the next Poll when the producer does not even take the message.
  void Send(const rd_kafka_message_t* message, const std::string& topic, const std::string& reason,
            int attempts, uint64_t ticket);

  // Serves the producer's callbacks, waiting at most `timeout_ms` for one;
  // returns the answers that arrived. Call it often.
  std::vector<Delivery> Poll(int timeout_ms = 0);

 private:
  static void OnDelivery(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque);
  // An idempotent producer in a fatal state takes nothing more: its
  // messages are reported failed and a new producer starts.
  bool Restart(std::string* error);

  const ConsumerConfig& config_;
  const outbox::ClockPtr clock_;
  const bool logs_on_poll_;
  rd_kafka_t* rk_ = nullptr;
  std::set<uint64_t> outstanding_;  // tickets sent, not yet answered
  std::vector<Delivery> delivered_;
};

// Errors with which a broker (or the producer itself) refuses a message for
// good: too large, not authorized, no such topic, an invalid record.
bool IsPermanentRefusal(rd_kafka_resp_err_t err);

// A Unix time as RFC 3339 UTC with milliseconds (the dlq_at header).
std::string Rfc3339(double unix_seconds);

// Routes librdkafka's own log lines into the consumer's log.
void KafkaLogLine(const rd_kafka_t* rk, int level, const char* fac, const char* buf);

}  // namespace outbox::inbox
