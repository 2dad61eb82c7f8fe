// The consumer's input edges (src/inbox/event.cc): UTF-8 as
// utf8mb4 stores it, and ids as the relay writes them.
#include "inbox/event.h"

#include <catch2/catch.hpp>

using outbox::inbox::ParsePositiveId;
using outbox::inbox::Utf8Length;

TEST_CASE("well-formed UTF-8 is counted in characters", "[consumer][utf8]") {
  CHECK(Utf8Length("") == 0);
  CHECK(Utf8Length("OrderPaid") == 9);
  CHECK(Utf8Length("\xC3\xA9t\xC3\xA9") == 3);  // été
  CHECK(Utf8Length("\xE2\x82\xAC") == 1);       // U+20AC
  CHECK(Utf8Length("\xED\x9F\xBF") == 1);       // U+D7FF, just below the surrogates
  CHECK(Utf8Length("\xEE\x80\x80") == 1);       // U+E000, just above them
  CHECK(Utf8Length("\xF0\x9F\x93\xA6") == 1);   // U+1F4E6, four bytes (utf8mb4)
  CHECK(Utf8Length("\xF4\x8F\xBF\xBF") == 1);   // U+10FFFF, the last code point
}

TEST_CASE(
    "malformed UTF-8 is refused: overlong forms and surrogates and beyond U+10FFFF and cut short",
    "[consumer][utf8]") {
  const char* bad[] = {
      "\xC0\xAF",          // overlong '/'
      "\xC1\xBF",          // overlong, C1 lead
      "\xE0\x80\xAF",      // overlong three-byte '/'
      "\xE0\x9F\xBF",      // overlong U+07FF
      "\xF0\x80\x80\xAF",  // overlong four-byte '/'
      "\xF0\x8F\xBF\xBF",  // overlong U+FFFF
      "\xED\xA0\x80",      // U+D800, a surrogate
      "\xED\xBF\xBF",      // U+DFFF, a surrogate
      "\xF4\x90\x80\x80",  // U+110000
      "\xF5\x80\x80\x80",  // F5 lead
      "\xF6\x80\x80\x80",  // F6 lead
      "\xF7\xBF\xBF\xBF",  // F7 lead
      "\xF8\x88\x80\x80\x80",
      "\xFF",
      "\x80",          // a continuation byte alone
      "a\xC3",         // cut short
      "\xE2\x82",      // cut short
      "\xE2\x28\xA1",  // a bad continuation
  };
  for (const char* s : bad) {
    INFO(s);
    CHECK(Utf8Length(s) == -1);
  }
}

TEST_CASE("ids are positive decimal BIGINTs of ASCII digits only", "[consumer]") {
  int64_t v = 0;
  CHECK(ParsePositiveId("42", &v));
  CHECK(v == 42);
  CHECK(ParsePositiveId("9223372036854775807", &v));
  CHECK(v == INT64_MAX);
  CHECK_FALSE(ParsePositiveId("9223372036854775808", &v));
  CHECK_FALSE(ParsePositiveId("99999999999999999999", &v));
  CHECK_FALSE(ParsePositiveId("0", &v));
  CHECK_FALSE(ParsePositiveId("", &v));
  CHECK_FALSE(ParsePositiveId("-1", &v));
  CHECK_FALSE(ParsePositiveId("+1", &v));
  CHECK_FALSE(ParsePositiveId(" 1", &v));
  CHECK_FALSE(ParsePositiveId("1\xD9\xA3", &v));  // an Arabic-Indic digit: bytes >= 0x80
  CHECK_FALSE(ParsePositiveId("\xB2", &v));       // superscript two in Latin-1
}

TEST_CASE("an event keeps a valid trace context and ignores an invalid one", "[consumer][trace]") {
  const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  outbox::inbox::Event ev;
  outbox::inbox::SetTraceContext(tp, "congo=t61rcWkgMzE", &ev);
  CHECK(ev.traceparent == tp);
  CHECK(ev.tracestate == "congo=t61rcWkgMzE");
  CHECK(ev.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
  const auto fields = outbox::inbox::TraceLogFields(ev);
  REQUIRE(fields.size() == 1);
  CHECK(fields[0].key() == "trace_id");
  CHECK(fields[0].value() == "4bf92f3577b34da6a3ce929d0e0e4736");
  // Invalid or absent: nothing is kept, tracestate neither; nothing is refused.
  for (const std::string& bad : {std::string(""), std::string("00-zz"), "ff" + tp.substr(2)}) {
    INFO(bad);
    outbox::inbox::SetTraceContext(bad, "congo=t61rcWkgMzE", &ev);
    CHECK(ev.traceparent.empty());
    CHECK(ev.tracestate.empty());
    CHECK(ev.trace_id.empty());
    CHECK(outbox::inbox::TraceLogFields(ev).empty());
  }
}
