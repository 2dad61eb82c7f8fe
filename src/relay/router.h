#pragma once

#include <optional>
#include <string>

#include "config/config.h"
#include "config/topic_template.h"
#include "kafka/publisher.h"
#include "outbox/row.h"

namespace outbox {

// Turns a row into a Kafka message per README "How it works": key, value, headers, topic.
// Immutable after construction; thread-safe.
class Router {
 public:
  explicit Router(const ServiceConfig& service);

  // Returns the message, or nullopt with *error set when the row cannot be
  // routed (a permanent failure: invalid topic, headers column not an object
  // of strings).
  std::optional<Message> Route(const OutboxRow& row, std::string* error) const;
  // The topic only (the row's topic column, event-type override, template).
  std::string TopicFor(const OutboxRow& row) const;

 private:
  // Appends the row's `headers` column (a JSON object of strings) to *m's
  // headers; false with *error when it is not one or names a header the
  // relay sets itself.
  static bool AddRowHeaders(const OutboxRow& row, Message* m, std::string* error);

  std::string service_;
  TopicTemplate template_;
  std::map<std::string, std::string> overrides_;
};

}  // namespace outbox
