#pragma once

// Reading a consumed Kafka message's headers, shared by outbox-check and the
// tests' consumer (tests/support/test_env.cc).

#include <librdkafka/rdkafka.h>

#include <string>
#include <utility>
#include <vector>

namespace outbox::tools {

// The headers of `message` in their order; a header without a value reads as
// "". Empty when the message has none.
std::vector<std::pair<std::string, std::string>> MessageHeaders(const rd_kafka_message_t* message);

}  // namespace outbox::tools
