#pragma once

// Reading what landed in Kafka (the mock cluster) from a test: the one
// consumer the tests check messages with. tools/outbox_check.cc keeps a reader
// of its own on purpose (its verdict stays independent of the tests' code).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace outbox::testing {

struct ConsumedMessage {
  std::string topic;
  int partition;
  int64_t offset;
  std::string key;
  std::string value;
  std::map<std::string, std::string> headers;
  // The record's timestamp (ms since the epoch): with the producer's default
  // CreateTime, when the relay handed it to librdkafka; -1 when absent.
  int64_t timestamp_ms = -1;
};

// Reads every message of `topics` from the start of every partition to the
// high watermark (a topic that does not exist gives nothing). Throws
// std::runtime_error if no consumer can be made.
std::vector<ConsumedMessage> ConsumeAll(const std::string& bootstrap,
                                        const std::vector<std::string>& topics);

// How many messages of `topic` consumer group `group` has not committed yet
// (a partition without a commit counts from its low watermark); -1 when the
// committed offsets cannot be read.
int64_t GroupLag(const std::string& bootstrap, const std::string& group, const std::string& topic);

}  // namespace outbox::testing
