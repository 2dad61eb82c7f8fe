// The example consumer's line per event (examples/inbox_consumer/value_printer.h).
#include "value_printer.h"

#include <catch2/catch.hpp>

using outbox::inbox::Event;

namespace {

Event WithKey(const std::string& key) {
  Event e;
  e.event_key = key;
  return e;
}

}  // namespace

TEST_CASE("the printer shows the schema id with the JSON or the bytes after the header",
          "[value-printer]") {
  Event json = WithKey("OrderPaid-1-1");
  json.schema_id = 7;
  json.schema_type = "AVRO";
  json.json = R"({"order_id":42})";
  CHECK(example::DescribeValue(json) ==
        R"(event OrderPaid-1-1: schema id 7 (AVRO), JSON {"order_id":42})");
  Event raw = WithKey("OrderPaid-1-2");
  const std::string body("\x54\x02\x00", 3);
  raw.schema_id = 7;
  raw.body = body;
  CHECK(example::DescribeValue(raw) == R"(event OrderPaid-1-2: schema id 7, 3 bytes: T\x02\x00)");
  Event plain = WithKey("OrderPaid-1-3");
  plain.payload = "{}";
  CHECK(example::DescribeValue(plain) == "event OrderPaid-1-3: no schema id, payload {}");
}

TEST_CASE("the printer escapes what is not printable and cuts a long value", "[value-printer]") {
  CHECK(example::Printable("a\\b\n", 10) == R"(a\x5cb\x0a)");
  CHECK(example::Printable(std::string(300, 'x'), 200) ==
        std::string(200, 'x') + "... (300 bytes)");
  CHECK(example::Printable("", 200).empty());
}
