// The trace context and CloudEvents headers a row's message gets
// (src/relay/router.h; README "Message format"). The same rows through
// MariaDB and the broker: tests/integration/trace_context_test.cc.
#include <catch2/catch.hpp>
#include <vector>

#include "relay/router.h"
#include "relay/router_row.h"

using namespace outbox;

namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

const std::string kTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

using outbox::testing::RouterRow;

ServiceConfig CloudEvents() {
  ServiceConfig s;
  s.name = "shop";
  s.envelope = Envelope::kCloudEvents;
  return s;
}

// The headers after the five every message has.
Headers Extra(const Message& m) { return Headers(m.headers.begin() + 5, m.headers.end()); }

Message RouteOk(const Router& router, const OutboxRow& row) {
  std::string err;
  std::optional<Message> m = router.Route(row, &err);
  INFO(err);
  REQUIRE(m);
  return *m;
}

}  // namespace

TEST_CASE("a valid traceparent and its tracestate go out unchanged as headers of the same names",
          "[routing][trace]") {
  Router router{ServiceConfig{}};
  OutboxRow r = RouterRow();
  r.traceparent = kTraceparent;
  r.tracestate = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";
  CHECK(Extra(RouteOk(router, r)) ==
        Headers{{"traceparent", kTraceparent},
                {"tracestate", "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"}});
  // A later version's extra fields are the writer's business: sent as written.
  r.traceparent = "01" + kTraceparent.substr(2) + "-extra";
  r.tracestate.reset();
  CHECK(Extra(RouteOk(router, r)) == Headers{{"traceparent", *r.traceparent}});
}

TEST_CASE("an invalid traceparent is left out with its tracestate and the event is still routed",
          "[routing][trace]") {
  Router router{ServiceConfig{}};
  OutboxRow r = RouterRow();
  r.tracestate = "congo=t61rcWkgMzE";
  for (const std::string& bad : std::vector<std::string>{
           "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
           "ff" + kTraceparent.substr(2), kTraceparent + "-",
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"}) {
    INFO(bad);
    r.traceparent = bad;
    CHECK(Extra(RouteOk(router, r)).empty());
  }
  // No traceparent (NULL or empty): no trace headers, tracestate or not.
  r.traceparent = "";
  CHECK(Extra(RouteOk(router, r)).empty());
  r.traceparent.reset();
  CHECK(Extra(RouteOk(router, r)).empty());
}

TEST_CASE("with envelope cloudevents a message carries the binary-mode attributes after its own",
          "[routing][cloudevents]") {
  Router router(CloudEvents());
  OutboxRow r = RouterRow();
  r.aggregate_version = 2;
  const Message m = RouteOk(router, r);
  CHECK(m.key == "42");
  CHECK(m.value == R"({"a":1})");
  CHECK(m.headers == Headers{{"outbox_id", "7"},
                             {"event_key", "OrderPaid-42-2"},
                             {"event_type", "OrderPaid"},
                             {"aggregate_type", "Order"},
                             {"created_at", "2023-11-14T22:13:20Z"},
                             {"aggregate_version", "2"},
                             {"ce_specversion", "1.0"},
                             {"ce_id", "OrderPaid-42-2"},
                             {"ce_source", "/outbox/shop/Order"},
                             {"ce_type", "OrderPaid"},
                             {"ce_subject", "42"},
                             {"ce_time", "2023-11-14T22:13:20Z"},
                             {"content-type", "application/json"}});
}

TEST_CASE("with trace context the CloudEvents envelope carries the distributed-tracing extension",
          "[routing][cloudevents][trace]") {
  Router router(CloudEvents());
  OutboxRow r = RouterRow();
  r.traceparent = kTraceparent;
  r.tracestate = "congo=t61rcWkgMzE";
  const Headers extra = Extra(RouteOk(router, r));
  REQUIRE(extra.size() == 11);
  CHECK(Headers(extra.begin(), extra.begin() + 2) ==
        Headers{{"traceparent", kTraceparent}, {"tracestate", "congo=t61rcWkgMzE"}});
  CHECK(Headers(extra.end() - 2, extra.end()) ==
        Headers{{"ce_traceparent", kTraceparent}, {"ce_tracestate", "congo=t61rcWkgMzE"}});
  r.traceparent = "00-not-valid";
  CHECK(Extra(RouteOk(router, r)).size() == 7);  // the seven attributes, no trace
}

TEST_CASE("the CloudEvents source and type come from their templates and the source stays a URI",
          "[routing][cloudevents]") {
  ServiceConfig s = CloudEvents();
  s.topic = "events";
  s.cloudevents.source = "https://shop.example/{service}/{aggregate_type}?v=1";
  s.cloudevents.type = "com.example.{aggregate_type}.{event_type}";
  Router router(s);
  OutboxRow r = RouterRow();
  std::map<std::string, std::string> h;
  for (const auto& [k, v] : RouteOk(router, r).headers) h[k] = v;
  CHECK(h.at("ce_source") == "https://shop.example/shop/Order?v=1");
  CHECK(h.at("ce_type") == "com.example.Order.OrderPaid");
  // Row values are percent-encoded in the source (never in the type).
  r.aggregate.type = "Order Line/é";
  for (const auto& [k, v] : RouteOk(router, r).headers) h[k] = v;
  CHECK(h.at("ce_source") == "https://shop.example/shop/Order%20Line%2F%C3%A9?v=1");
  CHECK(h.at("ce_type") == "com.example.Order Line/é.OrderPaid");
}

TEST_CASE("a CloudEvents attribute that would be empty makes the row a routing error",
          "[routing][cloudevents]") {
  ServiceConfig s = CloudEvents();
  s.topic = "events";
  s.cloudevents.source = "{aggregate_type}";
  Router router(s);
  std::string err;
  OutboxRow r = RouterRow();
  r.event_key = "";
  CHECK_FALSE(router.Route(r, &err));
  CHECK(err == "CloudEvents attribute ce_id (the row's event_key) of row 7 is empty");
  r = RouterRow();
  r.aggregate.type = "";
  CHECK_FALSE(router.Route(r, &err));
  CHECK(err == "CloudEvents attribute ce_source (from cloudevents.source) of row 7 is empty");
  r = RouterRow();
  r.event_type = "";
  CHECK_FALSE(router.Route(r, &err));
  CHECK(err == "CloudEvents attribute ce_type (from cloudevents.type) of row 7 is empty");
  // The plain envelope has no such attributes: the same rows are routed.
  s.envelope = Envelope::kPlain;
  Router plain(s);
  r.aggregate.type = "";
  CHECK(plain.Route(r, &err));
}

TEST_CASE("a headers column naming a trace or CloudEvents header the relay sets fails the row",
          "[routing][cloudevents][trace]") {
  struct Case {
    Envelope envelope;
    bool traced;         // the row has a traceparent (valid or not)
    const char* header;  // in the row's headers column
    bool refused;
  };
  const Case cases[] = {
      {Envelope::kPlain, true, "traceparent", true},
      {Envelope::kPlain, true, "Tracestate", true},
      // A row without trace context keeps the names for its headers column.
      {Envelope::kPlain, false, "traceparent", false},
      {Envelope::kPlain, false, "ce_id", false},
      {Envelope::kCloudEvents, false, "ce_id", true},
      {Envelope::kCloudEvents, false, "CE_SOURCE", true},
      {Envelope::kCloudEvents, false, "ce_specversion", true},
      {Envelope::kCloudEvents, false, "ce_type", true},
      {Envelope::kCloudEvents, false, "ce_subject", true},
      {Envelope::kCloudEvents, false, "ce_time", true},
      {Envelope::kCloudEvents, false, "content-type", true},
      {Envelope::kCloudEvents, false, "Content-Type", true},
      {Envelope::kCloudEvents, false, "ce_datacontenttype", true},
      {Envelope::kCloudEvents, false, "ce_traceparent", true},
      {Envelope::kCloudEvents, false, "ce_tracestate", true},
      {Envelope::kCloudEvents, true, "traceparent", true},
      // Other attributes and extensions are the row's to add.
      {Envelope::kCloudEvents, false, "ce_dataschema", false},
      {Envelope::kCloudEvents, false, "ce_tenant", false},
      {Envelope::kCloudEvents, false, "traceparent", false},
  };
  for (const Case& c : cases) {
    ServiceConfig s = CloudEvents();
    s.envelope = c.envelope;
    Router router(s);
    OutboxRow r = RouterRow();
    if (c.traced) r.traceparent = "not a traceparent";
    r.headers = std::string(R"({")") + c.header + R"(":"x"})";
    INFO(ToString(c.envelope) << (c.traced ? " with" : " without") << " trace, " << c.header);
    std::string err;
    CHECK(router.Route(r, &err).has_value() == !c.refused);
    if (c.refused)
      CHECK(err == std::string("headers column of row 7: \"") + c.header +
                       "\" is a header the relay sets itself");
  }
}
