#pragma once

// W3C Trace Context (https://www.w3.org/TR/trace-context/): the check of a
// `traceparent` value that the relay applies to a row's `traceparent` column
// and the inbox consumer to a message's `traceparent` header. The relay only
// propagates: it creates no spans, so it never builds a traceparent of its
// own. Pure functions; thread-safe.

#include <string_view>

namespace outbox {

// The result of checking one traceparent value. `trace_id` and `parent_id`
// point into the checked value (valid as long as it is).
struct TraceparentCheck {
  bool valid = false;
  std::string_view trace_id;   // 32 lowercase hex digits, when valid
  std::string_view parent_id;  // 16 lowercase hex digits, when valid
  const char* why = "";        // when not valid: what is wrong, for a log line
};

// Checks `value` as a traceparent header value:
//   version 00: exactly "00-" 32 hex "-" 16 hex "-" 2 hex, 55 characters;
//   a higher version (01..fe): its first 55 characters parse as version 00's
//     fields and are followed by the end of the value or by '-' (the rest is
//     that version's and is not looked at), as the specification's "Versioning
//     of traceparent" asks of a parser;
//   hex digits are lowercase (HEXDIGLC), version ff is invalid, and an
//   all-zero trace-id or parent-id is invalid.
// No whitespace is trimmed: a value is sent as it is or not at all.
TraceparentCheck CheckTraceparent(std::string_view value);

}  // namespace outbox
