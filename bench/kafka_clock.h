#pragma once

// Timing events through Kafka for the latency measurement.
//
// The mock broker keeps the producer's CreateTime (it has no LogAppendTime),
// so the broker's acknowledgement instant is not in the message. We bracket
// it instead:
//   lower bound: the message's CreateTime, set by librdkafka in the relay when
//                the relay hands the message over (ms resolution); the ack
//                comes after it;
//   upper bound: the instant this consumer receives the message; a broker
//                serves a message only after it appended it, which is when it
//                acknowledges it (acks=all on one broker).
// ProbeConsumerDelay measures how far the upper bound lies above the true ack
// on this setup, with our own producer whose acks we can see.

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace outbox::bench {

struct Received {
  int64_t ts_us = 0;      // the payload's "ts_us" (insert time); 0 if absent
  int64_t seq = -1;       // the payload's "probe" number, for probes
  int64_t create_ms = 0;  // Kafka CreateTime
  int64_t recv_us = 0;    // wall clock when this consumer got it
};

// Creates `topic` on the broker with its default partition count. The mock
// broker finds a fetch offset by walking the partition's log from its start,
// so a topic that grows through the whole benchmark makes every later fetch
// (and the broker's one thread) slower: each measured run gets its own.
void CreateTopic(const std::string& bootstrap, const std::string& topic);

// Consumes `topic` (partitions 0..partitions-1) from its current end, in a
// thread, recording every message's timing. Thread-safe.
class TimingConsumer {
 public:
  // Throws std::runtime_error if the consumer cannot start.
  TimingConsumer(const std::string& bootstrap, const std::string& topic, int partitions);
  ~TimingConsumer();
  size_t count() const { return count_.load(); }
  std::vector<Received> Take();

 private:
  void Loop();
  rd_kafka_t* rk_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> count_{0};
  std::mutex mu_;
  std::vector<Received> got_;
  std::thread thread_;
};

struct ProbeResult {
  std::vector<double> ack_ms;        // produce call -> delivery report
  std::vector<double> recv_late_ms;  // delivery report -> received by the consumer
};

// Produces `n` probes at `rate`/s to `topic` with the relay's producer
// settings (idempotent, acks=all, linger.ms=5) and times each one's ack and
// its arrival at a TimingConsumer.
ProbeResult ProbeConsumerDelay(const std::string& bootstrap, const std::string& topic,
                               int partitions, int n, double rate);

// Parses the integer after "\"key\":" in a JSON text; -1 if absent.
int64_t JsonInt(const std::string& text, const std::string& key);

}  // namespace outbox::bench
