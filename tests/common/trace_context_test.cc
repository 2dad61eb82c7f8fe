#include "common/trace_context.h"

#include <catch2/catch.hpp>
#include <string>

using namespace outbox;

namespace {

// The W3C specification's own example.
const std::string kValid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

struct Case {
  const char* what;
  std::string value;
  bool valid;
  const char* why;  // part of TraceparentCheck::why when not valid
};

}  // namespace

TEST_CASE("a traceparent is valid exactly when W3C Trace Context says it is", "[trace]") {
  const std::string ids = "-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-";
  const Case cases[] = {
      {"the specification's example", kValid, true, ""},
      {"not sampled", "00" + ids + "00", true, ""},
      {"unknown flags", "00" + ids + "ff", true, ""},
      {"a later version with extra fields", "cc" + ids + "01-what-the-future-will-bring", true, ""},
      {"a later version of version 00's length", "01" + ids + "09", true, ""},
      {"empty", "", false, "shorter than 55"},
      {"one character short", kValid.substr(0, 54), false, "shorter than 55"},
      {"version 00 one character long", kValid + "0", false, "exactly 55"},
      {"version 00 with an extra field", kValid + "-x", false, "exactly 55"},
      {"version 00 far too long", kValid + std::string(1000, 'a'), false, "exactly 55"},
      {"version ff", "ff" + ids + "01", false, "version ff"},
      {"version not hex", "0g" + ids + "01", false, "version is not"},
      {"uppercase version", "0A" + ids + "01", false, "version is not"},
      {"a later version followed by no dash", "01" + ids + "01x", false, "followed by"},
      {"uppercase trace-id", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false,
       "trace-id is not"},
      {"uppercase parent-id", "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01", false,
       "parent-id is not"},
      {"uppercase flags", "00" + ids + "0A", false, "trace-flags are not"},
      {"all-zero trace-id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", false,
       "trace-id is all zeros"},
      {"all-zero parent-id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false,
       "parent-id is all zeros"},
      {"a non-hex trace-id", "00-4bf92f3577b34da6a3ce929d0e0e473z-00f067aa0ba902b7-01", false,
       "trace-id is not"},
      {"a non-hex parent-id", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b!-01", false,
       "parent-id is not"},
      {"underscores for dashes", "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", false,
       "'-' between"},
      {"a shifted field", "00-4bf92f3577b34da6a3ce929d0e0e47360-0f067aa0ba902b7-01", false,
       "'-' between"},
      {"a leading space", " " + kValid.substr(0, 54), false, "version is not"},
      {"a trailing space", kValid + " ", false, "exactly 55"},
      {"a NUL byte in it",
       std::string("00") + ids.substr(0, 10) + std::string(1, '\0') + ids.substr(11) + "01", false,
       "trace-id is not"},
  };
  for (const Case& c : cases) {
    INFO(c.what << ": \"" << c.value << "\"");
    const TraceparentCheck check = CheckTraceparent(c.value);
    CHECK(check.valid == c.valid);
    if (c.valid) {
      CHECK(check.trace_id == c.value.substr(3, 32));
      CHECK(check.parent_id == c.value.substr(36, 16));
      CHECK(std::string(check.why).empty());
    } else {
      CHECK(std::string(check.why).find(c.why) != std::string::npos);
      CHECK(check.trace_id.empty());
    }
  }
}
