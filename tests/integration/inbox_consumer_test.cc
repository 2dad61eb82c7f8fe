// The example consumer (examples/inbox_consumer/, docs/CONSUMERS.md) as a
// process, against the test MariaDB and librdkafka's mock cluster: every
// event takes effect exactly once whatever is duplicated, killed or down.
// The verdict is SQL on the effect and inbox tables (CheckExactlyOnce),
// never the consumer's own log.
#include <catch2/catch.hpp>
#include <csignal>
#include <random>
#include <set>
#include <thread>

#include "support/consumer_harness.h"
#include "support/process.h"
#include "support/test_broker.h"
#include "support/wait.h"

using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

struct Rig : ConsumerRig {
  explicit Rig(const std::string& db_name)
      : ConsumerRig(db_name, {{kOrderTopic, 4}, {kOrderTopic + ".dlq", 1}}) {}
};

// How every scenario ends: `c` stops cleanly (SIGTERM: finish, commit, exit
// 0) and the inbox applied each of `events` once, in order per aggregate.
void CheckStoppedExactlyOnce(Rig& rig, ConsumerProcess& c, const std::vector<TestEvent>& events) {
  CHECK(c.Stop() == 0);
  INFO(c.Log());
  CHECK(rig.db.CheckExactlyOnce(events) == "");
  CHECK(rig.db.OutOfOrder() == 0);
}

// Consumer `name` met a database outage mid-stream: it was sent the first
// `before` of `events`, started and applied them; then the test MariaDB was
// stopped and the rest sent. `stalled`: it paused consumption `pauses` times
// within 60 s.
struct StalledByOutage {
  StalledByOutage(Rig& rig, const std::string& name, std::vector<TestEvent> all, size_t before,
                  int pauses)
      : events(std::move(all)), consumer(rig.Consumer(name)) {
    const auto split = events.begin() + static_cast<std::ptrdiff_t>(before);
    rig.producer.Send(kOrderTopic, std::vector<TestEvent>(events.begin(), split));
    REQUIRE(consumer.Start());
    REQUIRE(WaitFor([&] { return rig.db.Applied() >= static_cast<int64_t>(before); }, 60s));
    REQUIRE(outage.Begin());
    rig.producer.Send(kOrderTopic, std::vector<TestEvent>(split, events.end()));
    stalled = WaitFor([&] { return consumer.Count("pausing consumption") >= pauses; }, 60s);
  }
  const std::vector<TestEvent> events;
  ConsumerProcess consumer;
  DatabaseOutage outage;
  bool stalled = false;
};

// Sends 200 events and runs consumer "first" until `failpoint` (e.g.
// "after_db_commit:60") kills it with SIGKILL; returns the events.
std::vector<TestEvent> KilledAtFailpoint(Rig& rig, const std::string& failpoint) {
  auto events = MakeEvents(10, 20);
  rig.producer.Send(kOrderTopic, events);
  auto first = rig.Consumer("first");
  REQUIRE(first.Start({{"OUTBOX_CONSUMER_FAILPOINT", failpoint}}));
  CHECK(first.Wait(60s) == 128 + SIGKILL);
  return events;
}

}  // namespace

TEST_CASE(
    "a message produced twice and a batch published again by a relay killed mid-batch take "
    "effect once",
    "[consumer]") {
  Rig rig("inbox_dup_kafka");
  auto events = MakeEvents(20, 10);  // 200 events, outbox ids 1..200
  // Every tenth message produced twice in a row (a producer retry), and
  // events 51..100 again after 150 (a relay that published that batch, was
  // killed before it marked the rows SENT, and another replica published
  // them again once the lease ran out).
  std::vector<TestEvent> sent;
  for (size_t i = 0; i < events.size(); ++i) {
    sent.push_back(events[i]);
    if (i % 10 == 0) sent.push_back(events[i]);
    if (i == 149) sent.insert(sent.end(), events.begin() + 50, events.begin() + 100);
  }
  rig.producer.Send(kOrderTopic, sent);
  auto consumer = rig.Consumer("c1");
  REQUIRE(consumer.Start());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 200; }, 60s));
  // Every message handled, the duplicates after the last new event too.
  REQUIRE(WaitFor(
      [&] { return GroupLag(rig.cluster.bootstrap(), "fulfillment", kOrderTopic) == 0; }, 30s));
  CheckStoppedExactlyOnce(rig, consumer, events);
  INFO(consumer.Log());
  CHECK(consumer.Count("stopped: " + std::to_string(sent.size()) +
                       " message(s) handled: 200 "
                       "applied, " +
                       std::to_string(sent.size() - 200) + " duplicate(s) skipped") == 1);
}

TEST_CASE(
    "a consumer killed -9 after the database commit and before the offset commit applies "
    "each event once after its restart",
    "[consumer]") {
  Rig rig("inbox_kill_after_commit");
  const auto events = KilledAtFailpoint(rig, "after_db_commit:60");
  // The 60th event committed, its offset not even stored.
  CHECK(rig.db.Applied() == 60);
  auto second = rig.Consumer("second");
  REQUIRE(second.Start());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 200; }, 60s));
  CheckStoppedExactlyOnce(rig, second, events);
  // The restart read again what the killed one had applied (at least the
  // 60th event): the inbox skipped it.
  INFO(second.Log());
  CHECK(second.Count("duplicate(s) skipped") == 1);
  CHECK(second.Count(" 0 duplicate(s) skipped") == 0);
}

TEST_CASE(
    "a consumer killed -9 before the database commit applies each event once after its "
    "restart",
    "[consumer]") {
  Rig rig("inbox_kill_before_commit");
  const auto events = KilledAtFailpoint(rig, "before_db_commit:60");
  // The 60th transaction died with its connection: rolled back.
  CHECK(WaitFor([&] { return rig.db.Applied() == 59; }, 10s));
  auto second = rig.Consumer("second");
  REQUIRE(second.Start());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 200; }, 60s));
  CheckStoppedExactlyOnce(rig, second, events);
}

TEST_CASE("a consumer killed -9 at random moments while events arrive applies each event once",
          "[consumer]") {
  Rig rig("inbox_kill_loop");
  auto events = MakeEvents(50, 12);  // 600 events
  std::mt19937 rng(20261201);
  std::thread writer([&] {
    TestProducer p(rig.cluster.bootstrap());
    for (size_t i = 0; i < events.size(); i += 30)
      p.Send(kOrderTopic, std::vector<TestEvent>(events.begin() + i,
                                                 events.begin() + std::min(i + 30, events.size())));
  });
  for (int round = 0; round < 5; ++round) {
    auto c = rig.Consumer("round" + std::to_string(round));
    REQUIRE(c.Start());
    std::this_thread::sleep_for(std::chrono::milliseconds(1500 + rng() % 2500));  // a random moment
    c.Kill();  // SIGKILL: wherever it is
  }
  writer.join();
  auto last = rig.Consumer("last");
  REQUIRE(last.Start());
  INFO(last.Log());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 600; }, 120s));
  CheckStoppedExactlyOnce(rig, last, events);
}

TEST_CASE(
    "two consumers in one group share the partitions through rebalances and apply each "
    "event once",
    "[consumer]") {
  // Both rebalance protocols: eager (revoke all, assign all) and cooperative.
  const std::string assignor =
      GENERATE(as<std::string>{}, "range,roundrobin", "cooperative-sticky");
  INFO("partition.assignment.strategy " << assignor);
  Rig rig("inbox_rebalance");
  auto events = MakeEvents(40, 10);  // 400 events
  ConsumerSpec spec;
  spec.properties_yaml = "partition.assignment.strategy: " + assignor;
  auto a = rig.Consumer("a", spec);
  auto b = rig.Consumer("b", spec);
  REQUIRE(a.Start());
  rig.producer.Send(kOrderTopic, std::vector<TestEvent>(events.begin(), events.begin() + 100));
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 50; }, 60s));
  REQUIRE(b.Start());  // a rebalance: a gives up some partitions
  REQUIRE(WaitFor([&] { return b.Count("assigned") > 0; }, 60s));
  rig.producer.Send(kOrderTopic,
                    std::vector<TestEvent>(events.begin() + 100, events.begin() + 300));
  CHECK(a.Stop() == 0);  // another: b takes them all
  rig.producer.Send(kOrderTopic, std::vector<TestEvent>(events.begin() + 300, events.end()));
  INFO(b.Log());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 400; }, 60s));
  CheckStoppedExactlyOnce(rig, b, events);
  CHECK(a.Count("revoked") >= 1);
}

TEST_CASE("a poison message lands in the dead-letter topic with dlq_reason and the rest go on",
          "[consumer]") {
  Rig rig("inbox_poison");
  auto events = MakeEvents(5, 4);
  RawMessage no_key_header = ToMessage(events[0]);
  no_key_header.headers["event_key"] = std::nullopt;
  RawMessage bad_key = ToMessage(events[1]);
  bad_key.key = "order-2";
  RawMessage long_type = ToMessage(events[2]);
  long_type.headers["event_type"] = std::string(65, 'x');
  rig.producer.Send(kOrderTopic, std::vector<TestEvent>(events.begin(), events.begin() + 10));
  rig.producer.Send(kOrderTopic, no_key_header);
  rig.producer.Send(kOrderTopic, bad_key);
  rig.producer.Send(kOrderTopic, long_type);
  rig.producer.Send(kOrderTopic, std::vector<TestEvent>(events.begin() + 10, events.end()));
  auto c = rig.Consumer("c");
  REQUIRE(c.Start());
  REQUIRE(
      WaitFor([&] { return rig.db.Applied() >= 20 && c.Count("dead-letter topic") >= 3; }, 60s));
  CheckStoppedExactlyOnce(rig, c, events);
  auto dead = ConsumeAll(rig.cluster.bootstrap(), {kOrderTopic + ".dlq"});
  REQUIRE(dead.size() == 3);
  std::multiset<std::string> reasons;
  for (const auto& m : dead) {
    reasons.insert(m.headers.at("dlq_reason"));
    CHECK(m.headers.at("dlq_consumer") == "fulfillment");
    CHECK(m.headers.at("dlq_source").rfind(kOrderTopic + "/", 0) == 0);
    CHECK(m.headers.count("outbox_id") == 1);  // the original headers travel along
  }
  CHECK(reasons == std::multiset<std::string>{"missing header event_key",
                                              "the message key is not a decimal aggregate_id",
                                              "header event_type is longer than 64 characters"});
  for (const auto& m : dead) {
    CHECK(m.headers.at("dlq_attempts") == "1");  // headers that do not parse: no retry
    CHECK(m.headers.at("dlq_at").size() == std::string("2026-01-01T00:00:00.000Z").size());
  }
  CHECK(c.Count("failed attempt") == 1);
  CHECK(c.Count("3 failed attempt(s)") == 1);  // one per message: dead-lettered at once
}

TEST_CASE(
    "a topic_regex that also matches the dead-letter topic does not consume dead letters "
    "again",
    "[consumer]") {
  Rig rig("inbox_regex_dlq");
  auto events = MakeEvents(3, 2);
  RawMessage poison = ToMessage(events[0]);
  poison.headers["outbox_id"] = "not-a-number";
  rig.producer.Send(kOrderTopic, poison);
  rig.producer.Send(kOrderTopic, events);
  ConsumerSpec spec;
  spec.topics_yaml = "topic_regex: '^outbox\\.event\\..*'";  // as broad as it gets
  auto c = rig.Consumer("c", spec);
  REQUIRE(c.Start());
  REQUIRE(
      WaitFor([&] { return rig.db.Applied() >= 6 && c.Count("skipping messages of") > 0; }, 60s));
  REQUIRE(WaitFor(
      [&] { return GroupLag(rig.cluster.bootstrap(), "fulfillment", kOrderTopic + ".dlq") == 0; },
      30s));
  CheckStoppedExactlyOnce(rig, c, events);
  CHECK(ConsumeAll(rig.cluster.bootstrap(), {kOrderTopic + ".dlq"}).size() == 1);
  CHECK(c.Count("1 dead-lettered, 0 undeliverable (parked), 1 read from dead-letter topics") == 1);
}

TEST_CASE("version_check none applies a late event and counts it in out_of_order", "[consumer]") {
  Rig rig("inbox_version_none");
  auto event = [](int64_t outbox_id, const char* type) {
    TestEvent e;
    e.outbox_id = outbox_id;
    e.aggregate_id = 7;
    e.event_type = type;
    return e;
  };
  const TestEvent e10 = event(10, "OrderCreated"), e20 = event(20, "OrderPaid"),
                  e30 = event(30, "OrderShipped");
  rig.producer.Send(kOrderTopic, {e10, e30, e20, e30});  // 20 arrives late; 30 twice
  ConsumerSpec spec;
  spec.extra_yaml = "version_check: none";
  auto c = rig.Consumer("c", spec);
  REQUIRE(c.Start());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 3; }, 60s));
  CHECK(c.Stop() == 0);
  const std::string where = " FROM t_aggregate_effect WHERE aggregate_id = 7";
  CHECK(rig.db.QueryInt("SELECT applied" + where) == 3);
  CHECK(rig.db.QueryInt("SELECT last_outbox_id" + where) == 30);
  CHECK(rig.db.QueryInt("SELECT out_of_order" + where) == 1);  // the duplicate 30 is not counted
  // none keeps no version state: nothing is ever stale.
  CHECK(rig.db.QueryInt("SELECT COUNT(*) FROM t_inbox_aggregate") == 0);
}

TEST_CASE("a database outage stalls the consumer and it resumes without dead-lettering",
          "[consumer][outage][local-db]") {
  Rig rig("inbox_db_outage");
  StalledByOutage outage_met(rig, "c", MakeEvents(20, 10), 100, 2);
  auto& [events, c, outage, stalled] = outage_met;
  REQUIRE(outage.End());
  INFO(c.Log());
  CHECK(stalled);
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 200; }, 90s));
  CheckStoppedExactlyOnce(rig, c, events);
  CHECK(c.Count("resumed") >= 1);
  CHECK(c.Count("sent to dead-letter topic") == 0);
  CHECK(ConsumeAll(rig.cluster.bootstrap(), {kOrderTopic + ".dlq"}).empty());
}

TEST_CASE("SIGTERM during a database outage exits 0 and the next consumer applies what was left",
          "[consumer][outage][local-db]") {
  Rig rig("inbox_db_outage_stop");
  StalledByOutage outage_met(rig, "first", MakeEvents(10, 5), 25, 1);
  auto& [events, first, outage, stalled] = outage_met;
  const int code = first.Stop();  // while the database is still down
  REQUIRE(outage.End());
  INFO(first.Log());
  CHECK(stalled);
  CHECK(code == 0);
  auto second = rig.Consumer("second");
  REQUIRE(second.Start());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 50; }, 90s));
  CHECK(second.Stop() == 0);
  CHECK(rig.db.CheckExactlyOnce(events) == "");
  CHECK(rig.db.OutOfOrder() == 0);
}

TEST_CASE("a broker outage stalls the consumer and it goes on when the broker is back",
          "[consumer][mock-faults]") {
  Rig rig("inbox_broker_outage");
  auto events = MakeEvents(10, 10);
  rig.producer.Send(kOrderTopic, std::vector<TestEvent>(events.begin(), events.begin() + 50));
  auto c = rig.Consumer("c");
  REQUIRE(c.Start());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 50; }, 60s));
  rig.cluster.SetAllBrokersDown(true);
  const bool reported = WaitFor([&] { return c.Count("] kafka: ") > 0; }, 30s);
  INFO(c.Log());
  REQUIRE(reported);
  rig.cluster.SetAllBrokersDown(false);
  // A new producer: the test's own may wait out its reconnect backoff.
  TestProducer(rig.cluster.bootstrap())
      .Send(kOrderTopic, std::vector<TestEvent>(events.begin() + 50, events.end()));
  INFO(c.Log());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 100; }, 90s));
  CheckStoppedExactlyOnce(rig, c, events);
}

TEST_CASE("a consumer started before its topic exists applies the events once the topic appears",
          "[consumer]") {
  TestBroker cluster;  // no topic yet: the first produce creates it
  TempDir dir;
  ConsumerDatabase db("inbox_late_topic");
  ConsumerProcess c(dir.path(), "c", cluster.bootstrap(), db.name());
  REQUIRE(c.Start());
  REQUIRE(WaitFor([&] { return c.Count("consumer fulfillment started") > 0; }, 30s));
  std::this_thread::sleep_for(2s);  // subscribed while the topic is missing
  auto events = MakeEvents(5, 4);
  TestProducer(cluster.bootstrap()).Send(kOrderTopic, events);
  INFO(c.Log());
  REQUIRE(WaitFor([&] { return db.Applied() >= 20; }, 60s));
  CHECK(c.Stop() == 0);
  CHECK(db.CheckExactlyOnce(events) == "");
}

TEST_CASE(
    "the consumer's lines about a message carry its trace_id and bad trace context is ignored",
    "[consumer][trace]") {
  Rig rig("inbox_trace");
  const std::string traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  auto events = MakeEvents(2, 2);
  RawMessage poison = ToMessage(events[0]);
  poison.headers["event_key"] = std::nullopt;
  poison.headers["traceparent"] = traceparent;
  std::vector<RawMessage> traced;
  for (size_t i = 1; i < events.size(); ++i) {
    traced.push_back(ToMessage(events[i]));
    // A valid context, then ones a propagator must ignore: none is a reason to refuse an event.
    traced.back().headers["traceparent"] =
        i == 1   ? traceparent
        : i == 2 ? "garbage"
                 : "00-" + std::string(32, '0') + "-" + "00f067aa0ba902b7-01";
  }
  rig.producer.Send(kOrderTopic, poison);
  for (const auto& m : traced) rig.producer.Send(kOrderTopic, m);
  auto c = rig.Consumer("c");
  REQUIRE(c.Start());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 3 && c.Count("dead-letter topic") >= 1; }, 60s));
  CHECK(c.Stop() == 0);
  INFO(c.Log());
  CHECK(rig.db.CheckExactlyOnce(std::vector<TestEvent>(events.begin() + 1, events.end())) == "");
  CHECK(c.Count("sent to dead-letter topic") == 1);
  CHECK(c.Count("trace_id=4bf92f3577b34da6a3ce929d0e0e4736") >= 1);
  CHECK(c.Count("trace_id=00000000000000000000000000000000") == 0);
  const auto dead = ConsumeAll(rig.cluster.bootstrap(), {kOrderTopic + ".dlq"});
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].headers.at("traceparent") == traceparent);  // the dead letter keeps its context
}
