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
