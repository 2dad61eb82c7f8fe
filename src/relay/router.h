#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/trace_context.h"
#include "config/config.h"
#include "config/topic_template.h"
#include "kafka/publisher.h"
#include "outbox/row.h"

namespace outbox {

// Turns a row into a Kafka message per README "How it works": key, value,
// headers, topic, and with `envelope: cloudevents` the CloudEvents Kafka
// binding's binary-mode attributes. Immutable after construction; thread-safe.
class Router {
 public:
  explicit Router(const ServiceConfig& service);

  // Returns the message, or nullopt with *error set when the row cannot be
  // routed (a permanent failure: invalid topic, headers column not an object
  // of strings or naming a header the relay sets, a CloudEvents attribute
  // that renders empty). Trace context never makes a row fail: an invalid
  // traceparent is left out (the settler counts it once the event is sent).
  std::optional<Message> Route(const OutboxRow& row, std::string* error) const;
  // The topic only (the row's topic column, event-type override, template).
  std::string TopicFor(const OutboxRow& row) const;

 private:
  // The CloudEvents attributes (`traced`: with the row's trace context as
  // the distributed-tracing extension); false with *error when ce_id,
  // ce_source or ce_type would be empty.
  bool AddCloudEvents(const OutboxRow& row, bool traced, Message* m, std::string* error) const;
  // Appends the row's `headers` column (a JSON object of strings) to *m's
  // headers; false with *error when it is not one or names a header the
  // relay sets itself.
  bool AddRowHeaders(const OutboxRow& row, Message* m, std::string* error) const;
  // True if a headers-column entry may not be named `name`: the first
  // `standard` headers of `m` (exact names), the trace context names when
  // the row has a traceparent, the CloudEvents names with that envelope
  // (those two in any case of letters).
  bool IsRelayHeader(std::string_view name, const OutboxRow& row, const Message& m,
                     size_t standard) const;

  std::string service_;
  TopicTemplate template_;
  std::map<std::string, std::string> overrides_;
  Envelope envelope_;
  TopicTemplate ce_source_;
  TopicTemplate ce_type_;
};

// True when the row's traceparent column holds a value (not NULL, not empty).
bool HasTraceparent(const OutboxRow& row);
// CheckTraceparent of the row's traceparent column; not valid, with an empty
// `why`, when it holds none.
TraceparentCheck RowTraceparent(const OutboxRow& row);

}  // namespace outbox
