#include "outbox_load.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>

using namespace outbox::load;

TEST_CASE("the load plan gives every aggregate its events in id order from one writer", "[load]") {
  PlanOptions o;
  o.aggregates = 500;
  o.min_events = 2;
  o.max_events = 20;
  o.first_id = 1000;
  o.first_aggregate_id = 50;
  o.aggregate_types = {"Order", "Payment"};
  o.active = 37;
  o.seed = 42;
  Plan plan = MakePlan(o);
  REQUIRE(plan.aggregates.size() == 500);
  int64_t expected_events = 0;
  std::set<int> sizes;
  std::set<std::string> types;
  for (const auto& a : plan.aggregates) {
    CHECK(a.events >= 2);
    CHECK(a.events <= 20);
    expected_events += a.events;
    sizes.insert(a.events);
    types.insert(a.type);
  }
  CHECK(sizes.size() > 10);
  CHECK(types.size() == 2);
  REQUIRE(static_cast<int64_t>(plan.events.size()) == expected_events);
  std::map<int32_t, int32_t> next_seq;
  std::map<int32_t, int64_t> last_id;
  for (size_t i = 0; i < plan.events.size(); ++i) {
    const Event& e = plan.events[i];
    CHECK(e.id == 1000 + static_cast<int64_t>(i));
    CHECK(e.seq == next_seq[e.aggregate]++);  // events of an aggregate in id order
    last_id[e.aggregate] = e.id;
  }
  for (const auto& a : plan.aggregates) CHECK(a.id >= 50);
  CHECK(plan.aggregates.back().id == 549);
  // Interleaving: the first aggregate is not written in one run.
  CHECK(last_id[0] - plan.events.front().id >= plan.aggregates[0].events);
}

TEST_CASE("the same seed gives the same plan and another seed another", "[load]") {
  PlanOptions o;
  o.aggregates = 100;
  o.min_events = 1;
  o.max_events = 9;
  auto a = MakePlan(o), b = MakePlan(o);
  o.seed = 2;
  auto c = MakePlan(o);
  REQUIRE(a.events.size() == b.events.size());
  bool same = true;
  for (size_t i = 0; i < a.events.size(); ++i)
    same = same && a.events[i].aggregate == b.events[i].aggregate;
  CHECK(same);
  bool differs = a.events.size() != c.events.size();
  for (size_t i = 0; !differs && i < a.events.size(); ++i)
    differs = a.events[i].aggregate != c.events[i].aggregate;
  CHECK(differs);
}

TEST_CASE("event counts parse as N or MIN..MAX", "[load]") {
  int lo = 0, hi = 0;
  CHECK(ParseRange("4", &lo, &hi));
  CHECK((lo == 4 && hi == 4));
  CHECK(ParseRange("2..20", &lo, &hi));
  CHECK((lo == 2 && hi == 20));
  CHECK_FALSE(ParseRange("0", &lo, &hi));
  CHECK_FALSE(ParseRange("5..2", &lo, &hi));
  CHECK_FALSE(ParseRange("x", &lo, &hi));
  CHECK_FALSE(ParseRange("", &lo, &hi));
  CHECK(EventKey(EventType("Order", 0), 42, 0) == "OrderCreated-42-v0");
  CHECK(EventType("Order", 3) == "OrderShipped");
}
