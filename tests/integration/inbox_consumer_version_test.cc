// The example consumer's version check (version_check: none | newer |
// strict, docs/CONSUMERS.md "Order: the per-aggregate version check") against MariaDB and the
// mock cluster: duplicates, late events, reordered topics, a gap that fills
// and one that does not. The verdict is SQL on t_aggregate_effect and
// t_inbox_parked; out_of_order counts an event applied below the highest
// outbox_id applied, so 0 means the effects ran in version order.
#include <catch2/catch.hpp>

#include "support/consumer_harness.h"
#include "support/process.h"
#include "support/test_broker.h"
#include "support/wait.h"

using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

const std::string kShipped = "order.shipped";

struct Rig : ConsumerRig {
  explicit Rig(const std::string& db_name)
      : ConsumerRig(db_name, {{kOrderTopic, 2}, {kShipped, 2}}) {}
  ConsumerProcess Consumer(const std::string& check, const std::string& more = "") {
    ConsumerSpec spec;
    spec.topics_yaml = "topics: [" + kOrderTopic + ", " + kShipped + "]";
    spec.extra_yaml = "version_check: " + check + "\n" + more;
    return ConsumerRig::Consumer("c", spec);
  }
  // The counter handler's row of aggregate 7 (applied, out_of_order, last_outbox_id).
  int64_t Effect(const std::string& column) {
    return db.QueryInt("SELECT " + column + " FROM t_aggregate_effect WHERE aggregate_id = 7");
  }
  // The version check's own row of aggregate 7 (last_version, last_outbox_id, stale).
  int64_t Check(const std::string& column) {
    return db.QueryInt(
        "SELECT " + column +
        " FROM t_inbox_aggregate WHERE consumer = 'fulfillment' AND aggregate_id = 7");
  }
};

// Version v of aggregate 7; outbox ids grow with the version.
TestEvent V(int64_t v) {
  TestEvent e;
  e.outbox_id = 100 + v;
  e.aggregate_id = 7;
  e.version = v;
  return e;
}

}  // namespace

TEST_CASE("strict applies versions 1 3 2 4 of one aggregate as 1 2 3 4", "[consumer][version]") {
  Rig rig("inbox_strict_order");
  rig.producer.Send(kOrderTopic, {V(1), V(3), V(2), V(4)});
  auto c = rig.Consumer("strict");
  REQUIRE(c.Start());
  INFO(c.Log());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 4; }, 60s));
  CHECK(c.Stop() == 0);
  CHECK(rig.Effect("applied") == 4);
  CHECK(rig.Check("last_version") == 4);
  CHECK(rig.Effect("out_of_order") == 0);  // 3 waited for 2
  CHECK(rig.Check("stale") == 0);
  CHECK(rig.db.Parked("version_gap") == 0);
  CHECK(c.Count("version 2 filled the gap; 1 parked version(s) applied after it") == 1);
}

TEST_CASE("newer records version 2 after 3 as stale: in the inbox and not applied",
          "[consumer][version]") {
  Rig rig("inbox_newer_stale");
  rig.producer.Send(kOrderTopic, {V(1), V(3), V(2), V(4)});
  auto c = rig.Consumer("newer");
  REQUIRE(c.Start());
  INFO(c.Log());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 3 && rig.Check("stale") >= 1; }, 60s));
  CHECK(c.Stop() == 0);
  CHECK(rig.Effect("applied") == 3);
  CHECK(rig.Check("stale") == 1);
  CHECK(rig.Check("last_version") == 4);
  CHECK(rig.db.QueryInt("SELECT COUNT(*) FROM t_inbox") == 4);  // the stale one too
}

TEST_CASE("newer without aggregate_version compares outbox_id", "[consumer][version]") {
  Rig rig("inbox_newer_outbox_id");
  TestEvent a = V(1), b = V(2), d = V(3);
  a.version = b.version = d.version = 0;  // a relay on a table without the column
  rig.producer.Send(kOrderTopic, {a, d, b});
  auto c = rig.Consumer("newer");
  REQUIRE(c.Start());
  INFO(c.Log());
  REQUIRE(WaitFor([&] { return rig.Check("stale") >= 1; }, 60s));
  CHECK(c.Stop() == 0);
  CHECK(rig.Effect("applied") == 2);
  CHECK(rig.Effect("last_outbox_id") == 103);
  CHECK(rig.Check("last_outbox_id") == 103);
  CHECK(rig.Check("last_version") == 0);
}

TEST_CASE("duplicates of applied and of parked versions are skipped by the inbox",
          "[consumer][version]") {
  Rig rig("inbox_strict_duplicates");
  rig.producer.Send(kOrderTopic, {V(1), V(1), V(3), V(3), V(2), V(2), V(3)});
  auto c = rig.Consumer("strict");
  REQUIRE(c.Start());
  INFO(c.Log());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 3; }, 60s));
  REQUIRE(WaitFor(
      [&] { return GroupLag(rig.cluster.bootstrap(), "fulfillment", kOrderTopic) == 0; }, 30s));
  CHECK(c.Stop() == 0);
  CHECK(rig.Effect("applied") == 3);
  CHECK(rig.Check("stale") == 0);
  CHECK(rig.db.Parked("version_gap") == 0);
  CHECK(c.Count("3 applied, 4 duplicate(s) skipped, 0 stale, 1 parked (1 applied later)") == 1);
}

TEST_CASE("strict applies one aggregate's versions in order across two topics",
          "[consumer][version]") {
  Rig rig("inbox_strict_topics");
  // The relay routes OrderShipped to its own topic: the consumer reads the
  // two topics in no particular order relative to each other.
  rig.producer.Send(kShipped, {V(2), V(4), V(6)});
  rig.producer.Send(kOrderTopic, {V(1), V(3), V(5)});
  auto c = rig.Consumer("strict");
  REQUIRE(c.Start());
  INFO(c.Log());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 6; }, 60s));
  CHECK(c.Stop() == 0);
  CHECK(rig.Effect("applied") == 6);
  CHECK(rig.Check("last_version") == 6);
  CHECK(rig.Effect("out_of_order") == 0);
  CHECK(rig.db.Parked("version_gap") == 0);
}

TEST_CASE("a gap that does not fill keeps the later versions parked and is reported",
          "[consumer][version]") {
  Rig rig("inbox_strict_gap");
  rig.producer.Send(kOrderTopic, {V(1), V(3), V(4)});
  auto c = rig.Consumer("strict", "max_gap_age_s: 1");
  REQUIRE(c.Start());
  INFO(c.Log());
  REQUIRE(WaitFor([&] { return rig.db.Parked("version_gap") == 2; }, 60s));
  REQUIRE(WaitFor([&] { return c.Count("version gap older than max_gap_age_s") >= 1; }, 30s));
  CHECK(c.Count("Order 7: version 3 waits for version 2") >= 1);
  CHECK(rig.Effect("applied") == 1);
  CHECK(rig.Check("last_version") == 1);
  // The missing version arrives (a dead letter replayed, a relay's row
  // fixed): the gap fills in one transaction.
  rig.producer.Send(kOrderTopic, {V(2)});
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 4; }, 60s));
  CHECK(c.Stop() == 0);
  CHECK(rig.Check("last_version") == 4);
  CHECK(rig.Effect("out_of_order") == 0);
  CHECK(rig.db.Parked("version_gap") == 0);
}
