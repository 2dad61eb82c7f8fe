#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace outbox::inbox {

// Where a message was read: topic/partition/offset.
struct Source {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::string ToString() const {
    return topic + "/" + std::to_string(partition) + "/" + std::to_string(offset);
  }
};

// One event as the relay publishes it (docs/CONSUMERS.md, "The algorithm"):
// the message's headers and key, validated before a handler sees them.
// The views (key, payload, body) are valid for the duration of the handler's call.
struct Event {
  std::string event_key;          // header event_key: the idempotency key
  std::string event_type;         // header event_type
  std::string aggregate_type;     // header aggregate_type
  int64_t aggregate_id = 0;       // the message key, decimal
  int64_t outbox_id = 0;          // header outbox_id: t_outbox.id, grows within an aggregate
  int64_t aggregate_version = 0;  // header aggregate_version; 0 when the relay sends none
  std::string_view key;           // the message key as sent
  std::string_view payload;       // the message value as sent, wire header included
  // The value's Schema Registry wire header (docs/CONSUMERS.md "Values with
  // a schema"): a value of 5 bytes or more whose first byte is 0 has one.
  int32_t schema_id = 0;  // the header's schema id; 0 when the value has no header
  std::string_view body;  // the value after the header; all of payload when it has none
  // The registry's type of the schema, "AVRO" or "JSON"; "" without a
  // schema_registry or without the header.
  std::string schema_type;
  // values.decode json: the value as JSON text, an Avro value decoded
  // (docs/FORMATS.md "Reading it back with the inbox library"), a JSON
  // Schema value's body as it is. "" with decode raw, or for a value
  // without the header (then `payload` is all there is).
  std::string json;
  // Every header of the message, in order, the ones above included.
  std::vector<std::pair<std::string, std::string>> headers;
  // W3C trace context of the transaction that wrote the event (headers
  // traceparent and tracestate), for a handler to continue its trace: set
  // only when the traceparent is valid, else all three are empty.
  std::string traceparent;
  std::string tracestate;
  std::string trace_id;  // the traceparent's trace-id: on every log line about the event
  // Where the message was read. A parked version applied when its gap
  // fills (version_check: strict) carries its own source, key, headers and
  // trace context, as read when it was parked.
  Source source;
};

}  // namespace outbox::inbox
