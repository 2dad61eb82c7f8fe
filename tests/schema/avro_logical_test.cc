#include "schema/avro_logical.h"

#include <catch2/catch.hpp>

using namespace outbox;

TEST_CASE("RFC 3339 timestamps become microseconds since the epoch", "[schema]") {
  struct Case {
    const char* text;
    int64_t micros;
  };
  const Case cases[] = {
      {"1970-01-01T00:00:00Z", 0},
      {"2024-05-01T12:30:00Z", 1714566600000000},
      {"2024-05-01T14:30:00.123+02:00", 1714566600123000},
      {"2024-05-01 12:30:00.1234567z", 1714566600123456},
      {"1969-12-31T23:59:59.5Z", -500000},
  };
  for (const Case& c : cases) {
    int64_t micros = 0;
    INFO(c.text);
    REQUIRE(ParseTimestampMicros(c.text, &micros));
    CHECK(micros == c.micros);
  }
  int64_t ignored = 0;
  for (const char* bad : {"2024-05-01", "2024-05-01T12:30:00", "2024-13-01T00:00:00Z",
                          "2024-05-01T12:30:00.Z", "yesterday"}) {
    INFO(bad);
    CHECK_FALSE(ParseTimestampMicros(bad, &ignored));
  }
}

TEST_CASE("dates become days since the epoch", "[schema]") {
  int32_t days = 0;
  REQUIRE(ParseDateDays("2024-05-01", &days));
  CHECK(days == 19844);
  REQUIRE(ParseDateDays("1969-12-31", &days));
  CHECK(days == -1);
  CHECK_FALSE(ParseDateDays("2024-05-01T00:00:00Z", &days));
}

TEST_CASE("uuid text is 8-4-4-4-12 hexadecimal digits", "[schema]") {
  CHECK(IsUuidText("123e4567-e89b-12d3-a456-426614174000"));
  CHECK(IsUuidText("123E4567-E89B-12D3-A456-426614174000"));
  CHECK_FALSE(IsUuidText("123e4567e89b12d3a456426614174000"));
  CHECK_FALSE(IsUuidText("123e4567-e89b-12d3-a456-42661417400g"));
}

TEST_CASE("decimals become their unscaled two's complement bytes", "[schema]") {
  struct Case {
    const char* text;
    int scale;
    int64_t fixed;
    std::string bytes;
  };
  const Case cases[] = {
      {"12.34", 2, 0, std::string("\x04\xd2", 2)},  // 1234
      {"-12.34", 2, 0, std::string("\xfb\x2e", 2)},
      {"0", 2, 0, std::string("\0", 1)},
      {"1.5", 2, 0, std::string("\x00\x96", 2)},  // 150: 0x96 needs a sign byte
      {"1e2", 0, 0, std::string("\x64", 1)},
      {"12.340", 2, 0, std::string("\x04\xd2", 2)},  // a trailing zero is no extra place
      {"-1", 0, 4, std::string("\xff\xff\xff\xff", 4)},
      {"1", 0, 3, std::string("\0\0\1", 3)},
  };
  for (const Case& c : cases) {
    std::string out, why;
    INFO(c.text);
    REQUIRE(DecimalToBytes(c.text, 10, c.scale, c.fixed, &out, &why));
    CHECK(out == c.bytes);
  }
}

TEST_CASE("a decimal that the schema cannot hold says why", "[schema]") {
  std::string out, why;
  CHECK_FALSE(DecimalToBytes("1.234", 10, 2, 0, &out, &why));
  CHECK(why == "has more than 2 decimal places (the schema's scale)");
  CHECK_FALSE(DecimalToBytes("123456", 5, 0, 0, &out, &why));
  CHECK(why == "has more than 5 digits (the schema's precision)");
  CHECK_FALSE(DecimalToBytes("70000", 10, 0, 2, &out, &why));
  CHECK(why == "does not fit in the schema's fixed of 2 bytes");
  CHECK_FALSE(DecimalToBytes("12,5", 10, 2, 0, &out, &why));
  CHECK_FALSE(DecimalToBytes("abc", 10, 2, 0, &out, &why));
  CHECK(why == "is not a decimal number");
}
