#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.h"
#include "inbox/consumer_config.h"
#include "outbox/inbox/event.h"

namespace outbox::inbox {

// Reads and validates the relay's headers and key. False with *reason when
// the message cannot be an event: no retry can change that, so the caller
// dead-letters it at once. `check` kStrict also requires aggregate_version.
// The trace context is read first, so that it is set even when the rest
// does not parse.
bool ParseEvent(const rd_kafka_message_t* m, VersionCheck check, Event* event, std::string* reason);

// Sets ev's trace context from a message's traceparent and tracestate header
// values: kept when the traceparent is valid W3C trace context, else left
// empty. An invalid one is ignored, as OpenTelemetry's propagators ignore
// it: trace context is never a reason to refuse an event.
void SetTraceContext(std::string traceparent, std::string tracestate, Event* ev);

// The log fields of ev's trace context: trace_id when it has one.
std::vector<outbox::LogField> TraceLogFields(const Event& ev);

// The value of the last header `name`; *found false when there is none.
std::string HeaderValue(const rd_kafka_message_t* m, const char* name, bool* found);

// Characters in `s` if it is well-formed UTF-8 (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF), else -1. The columns are utf8mb4
// and their lengths count characters.
int64_t Utf8Length(std::string_view s);

// A positive BIGINT written in decimal ASCII digits, as the relay writes ids.
bool ParsePositiveId(std::string_view s, int64_t* out);

}  // namespace outbox::inbox
