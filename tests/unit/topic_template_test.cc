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

TEST_CASE("topic names follow Kafka's rules", "[routing]") {
  std::string why;
  CHECK(IsValidTopicName("outbox.event.Order_1-x", &why));
  CHECK_FALSE(IsValidTopicName("", &why));
  CHECK_FALSE(IsValidTopicName("..", &why));
  CHECK_FALSE(IsValidTopicName("a/b", &why));
  CHECK_FALSE(IsValidTopicName(std::string(250, 'a'), &why));
}
