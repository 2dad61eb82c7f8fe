#include "relay/router.h"

#include <catch2/catch.hpp>

#include "kafka/kafka_config.h"
#include "relay/router_row.h"

using namespace outbox;
using outbox::testing::RouterRow;

TEST_CASE("a row becomes a message keyed by aggregate_id with the contract headers", "[routing]") {
  ServiceConfig s;
  s.name = "shop";
  Router router(s);
  std::string err;
  auto m = router.Route(RouterRow(), &err);
  REQUIRE(m);
  CHECK(m->topic == "outbox.event.Order");
  CHECK(m->key == "42");
  CHECK(m->value == R"({"a":1})");
  std::map<std::string, std::string> h(m->headers.begin(), m->headers.end());
  CHECK(h.at("outbox_id") == "7");
  CHECK(h.at("event_key") == "OrderPaid-42-2");
  CHECK(h.at("event_type") == "OrderPaid");
  CHECK(h.at("aggregate_type") == "Order");
  CHECK(h.at("created_at") == "2023-11-14T22:13:20Z");
  CHECK(h.count("aggregate_version") == 0);  // no aggregate_version column: no header
}

TEST_CASE("a row's aggregate_version becomes a header that its headers column cannot override",
          "[routing]") {
  ServiceConfig s;
  Router router(s);
  std::string err;
  OutboxRow r = RouterRow();
  r.aggregate_version = 2;
  auto m = router.Route(r, &err);
  REQUIRE(m);
  std::map<std::string, std::string> h(m->headers.begin(), m->headers.end());
  CHECK(h.at("aggregate_version") == "2");
  r.headers = R"({"aggregate_version":"9"})";
  CHECK_FALSE(router.Route(r, &err));
  CHECK(err.find("\"aggregate_version\" is a header the relay sets itself") != std::string::npos);
}

TEST_CASE("the topic column wins over the event-type override which wins over the template",
          "[routing]") {
  ServiceConfig s;
  s.name = "shop";
  s.topic = "{service}.{aggregate_type}";
  s.topics["OrderPaid"] = "order.paid";
  Router router(s);
  OutboxRow r = RouterRow();
  CHECK(router.TopicFor(r) == "order.paid");
  r.event_type = "OrderShipped";
  CHECK(router.TopicFor(r) == "shop.Order");
  r.topic = "special";
  CHECK(router.TopicFor(r) == "special");
}

TEST_CASE("bad headers columns and invalid topics are routing errors", "[routing]") {
  ServiceConfig s;
  Router router(s);
  std::string err;
  OutboxRow r = RouterRow();
  r.headers = R"({"trace":"abc"})";
  auto m = router.Route(r, &err);
  REQUIRE(m);
  CHECK(m->headers.back() == std::make_pair(std::string("trace"), std::string("abc")));
  r.headers = R"({"n":1})";
  CHECK_FALSE(router.Route(r, &err));
  CHECK(err.find("not a string") != std::string::npos);
  r.headers = "[1,2]";
  CHECK_FALSE(router.Route(r, &err));
  r.headers = "{not json";
  CHECK_FALSE(router.Route(r, &err));
  CHECK(err == "headers column of row 7 is not a JSON object of strings");
  r.headers = R"({"event_key":"spoofed"})";
  CHECK_FALSE(router.Route(r, &err));
  CHECK(err == "headers column of row 7: \"event_key\" is a header the relay sets itself");
  r.headers = "null";
  CHECK(router.Route(r, &err));
  r.headers.reset();
  r.topic = "bad topic!";
  CHECK_FALSE(router.Route(r, &err));
  CHECK(err.find("invalid topic") != std::string::npos);
  r.topic.reset();
  r.aggregate.type = "Ord er";
  CHECK_FALSE(router.Route(r, &err));
}

TEST_CASE("a partitioner other than murmur2 is warned about as breaking per-aggregate order",
          "[router]") {
  KafkaConfig k;
  k.bootstrap_servers = "broker:9092";
  std::vector<std::string> warnings;
  for (const char* same : {"murmur2", "murmur2_random"}) {
    k.properties = {{"partitioner", same}};
    warnings.clear();
    (void)ProducerProperties(k, "t", 30000, &warnings);
    CHECK(warnings.empty());
  }
  k.properties = {{"partitioner", "random"}};
  (void)ProducerProperties(k, "t", 30000, &warnings);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] ==
        "kafka.properties.partitioner=random breaks per-aggregate order: an aggregate's events no "
        "longer share one partition (nor the Java client's), so consumers can see them out of "
        "order");
}
