#include "inbox/event.h"

#include <algorithm>

#include "common/trace_context.h"

namespace outbox::inbox {
namespace {

bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

bool TextHeader(const rd_kafka_message_t* m, const char* name, int64_t max_chars, std::string* out,
                std::string* reason) {
  bool found = false;
  *out = HeaderValue(m, name, &found);
  const int64_t chars = Utf8Length(*out);
  if (!found || out->empty())
    *reason = std::string("missing header ") + name;
  else if (chars < 0)
    *reason = std::string("header ") + name + " is not UTF-8";
  else if (chars > max_chars)
    *reason = std::string("header ") + name + " is longer than " + std::to_string(max_chars) +
              " characters";
  else
    return true;
  return false;
}

}  // namespace

std::string HeaderValue(const rd_kafka_message_t* m, const char* name, bool* found) {
  rd_kafka_headers_t* hdrs = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  *found = rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
           rd_kafka_header_get_last(hdrs, name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR &&
           value != nullptr;
  return *found ? std::string(static_cast<const char*>(value), size) : std::string();
}

void SetTraceContext(std::string traceparent, std::string tracestate, Event* ev) {
  const outbox::TraceparentCheck check = outbox::CheckTraceparent(traceparent);
  if (!check.valid) {
    ev->traceparent.clear();
    ev->tracestate.clear();
    ev->trace_id.clear();
    return;
  }
  ev->trace_id = std::string(check.trace_id);
  ev->traceparent = std::move(traceparent);
  ev->tracestate = std::move(tracestate);
}

std::vector<outbox::LogField> TraceLogFields(const Event& ev) {
  if (ev.trace_id.empty()) return {};
  return {{"trace_id", ev.trace_id}};
}

bool ParsePositiveId(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 19 || !std::all_of(s.begin(), s.end(), IsAsciiDigit)) return false;
  uint64_t v = 0;
  for (char c : s) v = v * 10 + static_cast<uint64_t>(c - '0');  // 19 digits fit in 64 bits
  if (v == 0 || v > static_cast<uint64_t>(INT64_MAX)) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

namespace {

// A UTF-8 lead byte's sequence length and the range of the byte after it;
// false for a continuation byte, C0/C1 or F5-FF. RFC 3629 table 3.9: the
// second byte's range is what rules out overlong forms (C0, C1, E0 80-9F,
// F0 80-8F), surrogates (ED A0-BF) and code points above U+10FFFF (F4 90-BF).
bool LeadByte(unsigned char c, size_t* len, unsigned char* lo, unsigned char* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    *len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    *len = 3;
    if (c == 0xE0) *lo = 0xA0;
    if (c == 0xED) *hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    *len = 4;
    if (c == 0xF0) *lo = 0x90;
    if (c == 0xF4) *hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

// The length of the UTF-8 sequence at s[i] (a byte of 0x80 or more), or 0
// when it is not a valid one.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  size_t len = 0;
  unsigned char lo = 0, hi = 0;
  if (!LeadByte(static_cast<unsigned char>(s[i]), &len, &lo, &hi)) return 0;
  if (i + len > s.size()) return 0;
  const auto second = static_cast<unsigned char>(s[i + 1]);
  if (second < lo || second > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return len;
}

}  // namespace

int64_t Utf8Length(std::string_view s) {
  int64_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(s, i);
    if (len == 0) return -1;
    i += len;
  }
  return n;
}

namespace {

// What a handler sees of the message as it came: key, value, headers, source.
void SetMessageFields(const rd_kafka_message_t* m, Event* ev) {
  ev->key = m->key ? std::string_view(static_cast<const char*>(m->key), m->key_len) : "";
  ev->payload = m->payload ? std::string_view(static_cast<const char*>(m->payload), m->len) : "";
  ev->source = {rd_kafka_topic_name(m->rkt), m->partition, m->offset};
  ev->headers.clear();
  rd_kafka_headers_t* hdrs = nullptr;
  if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
  const char* name = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == 0; ++i)
    ev->headers.emplace_back(name, value ? std::string(static_cast<const char*>(value), size) : "");
}

}  // namespace

bool ParseEvent(const rd_kafka_message_t* m, VersionCheck check, Event* ev, std::string* reason) {
  SetMessageFields(m, ev);
  bool found = false;
  std::string traceparent = HeaderValue(m, "traceparent", &found);
  SetTraceContext(std::move(traceparent), HeaderValue(m, "tracestate", &found), ev);
  // Lengths are the columns' (sql/t_inbox.sql, sql/t_inbox_aggregate.sql):
  // a value that cannot be stored is this message's fault, found here.
  if (!TextHeader(m, "event_key", 128, &ev->event_key, reason) ||
      !TextHeader(m, "event_type", 64, &ev->event_type, reason) ||
      !TextHeader(m, "aggregate_type", 32, &ev->aggregate_type, reason))
    return false;
  const std::string outbox_id = HeaderValue(m, "outbox_id", &found);
  if (!ParsePositiveId(outbox_id, &ev->outbox_id)) {
    *reason = found ? "header outbox_id is not a positive decimal id" : "missing header outbox_id";
    return false;
  }
  const std::string version = HeaderValue(m, "aggregate_version", &found);
  ev->aggregate_version = 0;
  if (found && !ParsePositiveId(version, &ev->aggregate_version)) {
    *reason = "header aggregate_version is not a positive decimal number";
    return false;
  }
  if (!found && check == VersionCheck::kStrict) {
    *reason = "missing header aggregate_version (version_check: strict needs it)";
    return false;
  }
  if (!ParsePositiveId(ev->key, &ev->aggregate_id)) {
    *reason = "the message key is not a decimal aggregate_id";
    return false;
  }
  return true;
}

}  // namespace outbox::inbox
