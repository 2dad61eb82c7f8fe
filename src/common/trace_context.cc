#include "common/trace_context.h"

#include <algorithm>

namespace outbox {

namespace {

// "00-" + 32 + "-" + 16 + "-" + 2: version 00's length, and the prefix every
// later version shares.
constexpr size_t kTraceparentLength = 55;

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool AllLowerHex(std::string_view s) { return std::all_of(s.begin(), s.end(), IsLowerHex); }

bool AllZero(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; });
}

// What is wrong with the version field and the length that goes with it, or
// nullptr. REQUIRES: v.size() >= kTraceparentLength.
const char* VersionProblem(std::string_view v) {
  const std::string_view version = v.substr(0, 2);
  if (!AllLowerHex(version)) return "the version is not 2 lowercase hex digits";
  if (version == "ff") return "version ff is invalid";
  if (version == "00" && v.size() != kTraceparentLength)
    return "a version 00 traceparent has exactly 55 characters";
  // A later version may append fields, each after a '-'.
  if (v.size() > kTraceparentLength && v[kTraceparentLength] != '-')
    return "the trace-flags are followed by something other than '-'";
  return nullptr;
}

// What is wrong with the fields version 00 defines, or nullptr.
const char* FieldProblem(std::string_view v, TraceparentCheck* out) {
  if (v[2] != '-' || v[35] != '-' || v[52] != '-') return "a '-' between the fields is missing";
  const std::string_view trace_id = v.substr(3, 32);
  const std::string_view parent_id = v.substr(36, 16);
  if (!AllLowerHex(trace_id)) return "the trace-id is not 32 lowercase hex digits";
  if (AllZero(trace_id)) return "the trace-id is all zeros";
  if (!AllLowerHex(parent_id)) return "the parent-id is not 16 lowercase hex digits";
  if (AllZero(parent_id)) return "the parent-id is all zeros";
  if (!AllLowerHex(v.substr(53, 2))) return "the trace-flags are not 2 lowercase hex digits";
  out->trace_id = trace_id;
  out->parent_id = parent_id;
  return nullptr;
}

}  // namespace

TraceparentCheck CheckTraceparent(std::string_view value) {
  TraceparentCheck c;
  if (value.size() < kTraceparentLength) {
    c.why = "shorter than 55 characters";
    return c;
  }
  const char* problem = VersionProblem(value);
  if (problem == nullptr) problem = FieldProblem(value, &c);
  if (problem != nullptr) {
    c = TraceparentCheck{};
    c.why = problem;
    return c;
  }
  c.valid = true;
  return c;
}

}  // namespace outbox
