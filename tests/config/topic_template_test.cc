#include "config/topic_template.h"

#include <catch2/catch.hpp>

using namespace outbox;

TEST_CASE("a topic template renders its placeholders", "[routing]") {
  TopicTemplate t;
  std::string err;
  REQUIRE(TopicTemplate::Parse("{service}.{aggregate_type}.{event_type}.v1", &t, &err));
  CHECK(t.Render("Order", "OrderPaid", "shop") == "shop.Order.OrderPaid.v1");
  CHECK_FALSE(TopicTemplate::Parse("x.{nope}", &t, &err));
  CHECK(err.find("unknown placeholder {nope}") != std::string::npos);
  CHECK_FALSE(TopicTemplate::Parse("x.{aggregate_type", &t, &err));
  CHECK_FALSE(TopicTemplate::Parse("", &t, &err));
}

TEST_CASE("a template whose fixed text can never be a topic name is refused", "[routing]") {
  TopicTemplate t;
  std::string err;
  CHECK_FALSE(TopicTemplate::Parse("order events.{aggregate_type}", &t, &err));
  CHECK(err ==
        "character ' ' at offset 5 of \"order events.{aggregate_type}\" can never be in a Kafka "
        "topic name (allowed: [A-Za-z0-9._-])");
  CHECK_FALSE(TopicTemplate::Parse(std::string("a\0b", 3), &t, &err));
  CHECK(err.find("'\\x00' at offset 1") != std::string::npos);
  REQUIRE(TopicTemplate::Parse("x.{service}", &t, &err));
  CHECK_FALSE(t.uses_row_fields());
  REQUIRE(TopicTemplate::Parse("x.{event_type}", &t, &err));
  CHECK(t.uses_row_fields());
}

TEST_CASE("topic names follow Kafka's rules", "[routing]") {
  std::string why;
  CHECK(IsValidTopicName("outbox.event.Order_1-x", &why));
  CHECK_FALSE(IsValidTopicName("", &why));
  CHECK_FALSE(IsValidTopicName("..", &why));
  CHECK_FALSE(IsValidTopicName("a/b", &why));
  CHECK_FALSE(IsValidTopicName(std::string(250, 'a'), &why));
}

TEST_CASE("a URI reference template allows URI characters and percent-encodes the row's values",
          "[routing][cloudevents]") {
  TopicTemplate t;
  std::string err;
  const auto uri = TopicTemplate::Syntax::kUriReference;
  REQUIRE(TopicTemplate::Parse("https://a.example:8443/{service}/{aggregate_type}?x=1&y=%2F#f", &t,
                               &err, uri));
  CHECK(t.Render("Order Line", "", "shop") ==
        "https://a.example:8443/shop/Order%20Line?x=1&y=%2F#f");
  CHECK(t.Render("a/b?c#d%e", "", "s") == "https://a.example:8443/s/a%2Fb%3Fc%23d%25e?x=1&y=%2F#f");
  CHECK(t.Render("\xc3\xa9~._-", "", "s").find("/s/%C3%A9~._-?") != std::string::npos);
  REQUIRE(TopicTemplate::Parse("/outbox/{event_type}", &t, &err, uri));
  CHECK(t.Render("", "", "s") == "/outbox/");
  CHECK_FALSE(TopicTemplate::Parse("/a b", &t, &err, uri));
  CHECK(err ==
        "character ' ' at offset 2 of \"/a b\" is not allowed in a URI reference (RFC "
        "3986): percent-encode it");
  CHECK_FALSE(TopicTemplate::Parse("/a%2", &t, &err, uri));
  CHECK(err == "'%' at offset 2 of \"/a%2\" does not start a %XX escape");
  CHECK_FALSE(TopicTemplate::Parse("/\"quoted\"", &t, &err, uri));
  CHECK_FALSE(TopicTemplate::Parse("", &t, &err, uri));
  CHECK(err == "template is empty");
}

TEST_CASE("a text template takes any printable text and the row's values as they are",
          "[routing][cloudevents]") {
  TopicTemplate t;
  std::string err;
  const auto text = TopicTemplate::Syntax::kText;
  REQUIRE(
      TopicTemplate::Parse("com.example/{aggregate_type} {event_type} \xc3\xa9", &t, &err, text));
  CHECK(t.Render("Order Line", "Paid/1", "s") == "com.example/Order Line Paid/1 \xc3\xa9");
  CHECK_FALSE(TopicTemplate::Parse("a\nb", &t, &err, text));
  CHECK(err == "control character '\\x0a' at offset 1 of \"a\nb\"");
}
