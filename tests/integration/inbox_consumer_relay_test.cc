// The two halves together, as a user runs them: the real relay, killed -9
// while it drains, leaves duplicates in Kafka; the example consumer, killed
// -9 at random moments and restarted, applies every event of t_outbox
// exactly once and in order per aggregate — checked with SQL against the
// outbox table, not against the consumer's own log.
#include <catch2/catch.hpp>
#include <csignal>
#include <memory>
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

// Every row of the outbox table, as the events the consumer must apply.
std::vector<TestEvent> OutboxEvents(TestDatabase& db) {
  std::vector<TestEvent> out;
  const int64_t n = db.QueryInt("SELECT COUNT(*) FROM t_outbox");
  for (int64_t id = 1; id <= n; ++id) {
    TestEvent e;
    e.outbox_id = id;
    e.aggregate_id =
        db.QueryInt("SELECT aggregate_id FROM t_outbox WHERE id = " + std::to_string(id));
    e.event_key = db.QueryString("SELECT event_key FROM t_outbox WHERE id = " + std::to_string(id));
    out.push_back(e);
  }
  return out;
}

// The relay's topic of Order events (4 partitions) and the consumer's
// dead-letter topic.
void CreateOrderTopics(TestBroker& cluster) {
  cluster.CreateTopic(kOrderTopic, 4);
  cluster.CreateTopic(kOrderTopic + ".dlq", 1);
}

}  // namespace

TEST_CASE(
    "relays and consumers killed -9 at random moments still apply every outbox event "
    "exactly once and in order per aggregate",
    "[consumer][relay][mock-faults]") {
  TestBroker cluster;
  CreateOrderTopics(cluster);
  cluster.SetRtt(15);  // slow the publishing down, so that kills land mid-batch
  TestDatabase outbox("inbox_e2e_outbox");
  outbox.InsertEvents(100, 15);  // 1,500 events, ids 1..1500, interleaved aggregates
  ConsumerDatabase inbox("inbox_e2e_consumer");
  TempDir dir;
  // Short leases: a killed relay's batch is reclaimed (and published again)
  // 2 s later. Small batches, one in flight: more kills land mid-batch.
  const std::string yaml = RelayConfigYaml(
      outbox, "e2e", cluster.bootstrap(),
      "batch_size: 25\nmax_inflight_batches: 1\nlease_ms: 2000\npoll_interval_ms: 20\n");
  const std::string config = dir.Write("relay.yaml", yaml);
  std::mt19937 rng(15);

  // The relay and the consumer run at once, each killed -9 at random moments
  // and restarted, until the outbox is drained: the relay every 0.8-2 s, the
  // consumer in one round of three (a restarted member waits out the dead
  // one's session timeout, 6 s, before it gets partitions).
  int relay_kills = 0, consumer_kills = 0;
  std::unique_ptr<ConsumerProcess> consumer;
  const auto deadline = std::chrono::steady_clock::now() + 150s;
  for (int round = 0; Unsent(outbox) > 0 && std::chrono::steady_clock::now() < deadline; ++round) {
    ChildProcess relay({OUTBOX_BINARY, "run", "--config", config}, ChildEnv(RelayChildEnv()));
    if (!consumer) {
      consumer = std::make_unique<ConsumerProcess>(dir.path(), "c" + std::to_string(round),
                                                   cluster.bootstrap(), inbox.name());
      REQUIRE(consumer->Start());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(800 + rng() % 1200));  // a random moment
    relay.Signal(SIGKILL);
    relay.Wait(10s);
    ++relay_kills;
    if (rng() % 3 == 0) {
      consumer->Kill();
      consumer.reset();
      ++consumer_kills;
    }
  }
  REQUIRE(Unsent(outbox) == 0);
  if (consumer) {
    consumer->Kill();
    ++consumer_kills;
  }
  // One last consumer that runs to the end.
  ConsumerProcess last(dir.path(), "last", cluster.bootstrap(), inbox.name());
  REQUIRE(last.Start());
  REQUIRE(WaitFor([&] { return inbox.Applied() >= 1500; }, 120s));
  REQUIRE(
      WaitFor([&] { return GroupLag(cluster.bootstrap(), "fulfillment", kOrderTopic) == 0; }, 60s));
  CHECK(last.Stop() == 0);

  const auto messages = ConsumeAll(cluster.bootstrap(), {kOrderTopic});
  std::set<std::string> keys;
  for (const auto& m : messages) keys.insert(m.headers.at("event_key"));
  WARN("relay killed " << relay_kills << " time(s), consumer " << consumer_kills << " time(s); "
                       << messages.size() << " messages in Kafka for " << keys.size()
                       << " events: " << messages.size() - keys.size() << " duplicate(s)");
  CHECK(keys.size() == 1500);
  const auto events = OutboxEvents(outbox);
  REQUIRE(events.size() == 1500);
  INFO(last.Log());
  CHECK(inbox.CheckExactlyOnce(events) == "");
  CHECK(inbox.OutOfOrder() == 0);
}

TEST_CASE(
    "a table with aggregate_version is listed by check --connect and the relay sends it and a "
    "strict "
    "consumer applies every version in order",
    "[consumer][relay]") {
  TestBroker cluster;
  CreateOrderTopics(cluster);
  TestDatabase outbox("inbox_version_outbox", ", aggregate_version bigint null");
  outbox.InsertEvents(5, 4);  // ids 1..20, aggregates 1..5 interleaved: versions 1..4 each
  outbox.Exec("UPDATE t_outbox SET aggregate_version = FLOOR((id - 1) / 5) + 1");
  ConsumerDatabase inbox("inbox_version_consumer");
  TempDir dir;
  const std::string config =
      dir.Write("relay.yaml", RelayConfigYaml(outbox, "v", cluster.bootstrap(), ""));
  ProcessResult check = RunProcess({OUTBOX_BINARY, "check", "--connect", "--config", config},
                                   ChildEnv(RelayChildEnv()), 60s);
  INFO(check.out);
  CHECK(check.out.find("optional columns: aggregate_version") != std::string::npos);
  {
    ChildProcess relay({OUTBOX_BINARY, "run", "--config", config}, ChildEnv(RelayChildEnv()));
    REQUIRE(WaitFor([&] { return Unsent(outbox) == 0; }, 60s));
    relay.Signal(SIGTERM);
    relay.Wait(30s);
  }
  const auto messages = ConsumeAll(cluster.bootstrap(), {kOrderTopic});
  REQUIRE(messages.size() == 20);
  for (const auto& m : messages) {
    const int64_t id = std::stoll(m.headers.at("outbox_id"));
    CHECK(m.headers.at("aggregate_version") == std::to_string((id - 1) / 5 + 1));
  }
  ConsumerSpec spec;
  spec.extra_yaml = "version_check: strict";
  ConsumerProcess c(dir.path(), "c", cluster.bootstrap(), inbox.name(), spec);
  REQUIRE(c.Start());
  INFO(c.Log());
  REQUIRE(WaitFor([&] { return inbox.Applied() >= 20; }, 60s));
  CHECK(c.Stop() == 0);
  CHECK(inbox.CheckExactlyOnce(OutboxEvents(outbox)) == "");
  CHECK(inbox.QueryInt("SELECT COUNT(*) FROM t_inbox_aggregate WHERE last_version = 4") == 5);
  CHECK(inbox.QueryInt("SELECT COALESCE(SUM(stale), 0) FROM t_inbox_aggregate") == 0);
  CHECK(inbox.Parked("version_gap") == 0);
}
