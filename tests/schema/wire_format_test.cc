#include "schema/wire_format.h"

#include <catch2/catch.hpp>

using namespace outbox;

TEST_CASE("the wire header is the magic byte then the schema id big-endian", "[schema]") {
  CHECK(WireHeader(1) == std::string("\0\0\0\0\1", 5));
  CHECK(WireHeader(0x01020304) == std::string("\0\1\2\3\4", 5));
  CHECK(WithWireHeader(258, "xy") == std::string("\0\0\0\1\2xy", 7));
}

TEST_CASE("a value's wire header reads back its schema id and body", "[schema]") {
  int32_t id = 0;
  std::string_view body;
  const std::string value = WithWireHeader(2147483647, "payload");
  REQUIRE(ParseWireHeader(value, &id, &body));
  CHECK(id == 2147483647);
  CHECK(body == "payload");
  CHECK_FALSE(ParseWireHeader(std::string("\0\0\0\1", 4), &id, &body));     // too short
  CHECK_FALSE(ParseWireHeader(std::string("\1\0\0\0\1x", 6), &id, &body));  // no magic byte
}
