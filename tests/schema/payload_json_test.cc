#include "schema/payload_json.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace outbox;

TEST_CASE(
    "a payload reads as nlohmann::json::parse reads it: values and numbers and key order and "
    "a key given twice",
    "[schema]") {
  const std::vector<std::string> texts = {
      "null",
      "true",
      "0",
      "-0",
      "-7",
      "18446744073709551615",
      "18446744073709551616",
      "-9223372036854775809",
      "1.5e3",
      "-0.0",
      R"("a\u00e9\n\"b")",
      "[]",
      "{}",
      R"([1, [2, [3, {"a": []}]], "x"])",
      R"({"b": 1, "a": {"z": null, "y": [true, false]}, "c": "3"})",
      R"({"k": 1, "k": 2, "j": 0, "k": {"x": 3}})",
      R"({"é": 1, "e": 2, "E": 3, "": 4})",
      R"({"orderId": 1, "items": [{"sku": "A", "qty": 2}, {"sku": "B", "qty": 1}], "n": null})",
  };
  for (const std::string& text : texts) {
    INFO(text);
    PayloadJson doc;
    REQUIRE(doc.Parse(text));
    CHECK(doc.root().Dump() == nlohmann::json::parse(text).dump());
    CHECK(doc.root().ToJson() == nlohmann::json::parse(text));
  }
}

TEST_CASE("a payload that nlohmann::json does not accept is not read", "[schema]") {
  for (const std::string text : {"", " ", "{", "[1,]", R"({"a" 1})", "01", "1e999", "nul",
                                 "\"\x01\"", "{} {}", "\"\xff\""}) {
    INFO(text);
    CHECK_FALSE(nlohmann::json::accept(text));
    PayloadJson doc;
    CHECK_FALSE(doc.Parse(text));
  }
}

TEST_CASE("a payload's values are read by type and its members found by key", "[schema]") {
  PayloadJson doc;
  REQUIRE(doc.Parse(R"({"u": 3, "i": -3, "f": 2.5, "s": "text", "a": [1, "x"], "k": 1, "k": 9})"));
  const PayloadValue root = doc.root();
  PayloadValue v;
  REQUIRE(root.Find("u", &v));
  CHECK(v.is_number_unsigned());
  CHECK(v.Unsigned() == 3);
  CHECK(v.Double() == 3.0);
  REQUIRE(root.Find("i", &v));
  CHECK(v.is_number_integer());
  CHECK(v.Integer() == -3);
  REQUIRE(root.Find("f", &v));
  CHECK(v.is_number_float());
  CHECK(v.Float() == 2.5F);
  REQUIRE(root.Find("s", &v));
  CHECK(v.String() == "text");
  CHECK(v.String().data()[v.String().size()] == '\0');
  REQUIRE(root.Find("a", &v));
  REQUIRE(v.size() == 2);
  CHECK(v.At(1).String() == "x");
  REQUIRE(root.Find("k", &v));
  CHECK(v.Unsigned() == 9);
  CHECK_FALSE(root.Find("missing", &v));
  CHECK(root.size() == 6);
}
