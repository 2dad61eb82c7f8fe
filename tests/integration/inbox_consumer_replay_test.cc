// outbox-inbox-consumer dlq-replay end to end, against the mock cluster and
// a running consumer: dead letters go back to their source topic with their
// key, on the partition the Java client picks for it (murmur2, computed
// independently by outbox-check's JavaPartition), without their dlq_* headers; the inbox applies
// the new ones and skips the one that had been applied.
#include <catch2/catch.hpp>

#include "outbox_check.h"
#include "support/consumer_harness.h"
#include "support/process.h"
#include "support/test_broker.h"
#include "support/wait.h"

using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

const std::string kDlq = kOrderTopic + ".dlq";
constexpr int kPartitions = 4;

// The Java client's partition for a key, as outbox-check computes it.
using outbox::check::JavaPartition;

// `e` as the consumer dead-letters it.
RawMessage DeadLetter(const TestEvent& e, const std::string& reason) {
  RawMessage m = ToMessage(e);
  m.headers["dlq_reason"] = reason;
  m.headers["dlq_source"] = kOrderTopic + "/1/17";
  m.headers["dlq_consumer"] = "fulfillment";
  m.headers["dlq_attempts"] = "5";
  m.headers["dlq_at"] = "2026-01-01T00:00:00.000Z";
  return m;
}

}  // namespace

TEST_CASE(
    "dlq-replay sends dead letters to their aggregate's murmur2 partition without dlq headers "
    "and the inbox skips the one already applied",
    "[consumer][replay]") {
  TestBroker cluster;
  cluster.CreateTopic(kOrderTopic, kPartitions);
  cluster.CreateTopic(kDlq, 1);
  TempDir dir;
  ConsumerDatabase db("inbox_dlq_replay");
  TestProducer producer(cluster.bootstrap());
  auto events = MakeEvents(8, 2);  // outbox ids 1..16
  producer.Send(kOrderTopic, events);
  ConsumerProcess c(dir.path(), "c", cluster.bootstrap(), db.name());
  REQUIRE(c.Start());
  INFO(c.Log());
  REQUIRE(WaitFor([&] { return db.Applied() >= 16; }, 60s));

  // DLQ offsets: 0 an event that was applied after all, 1 and 3 new ones,
  // 2 one with another reason.
  const TestEvent applied = events[2], n1 = {.outbox_id = 500, .aggregate_id = 5},
                  n3 = {.outbox_id = 502, .aggregate_id = 7},
                  n2 = {.outbox_id = 501, .aggregate_id = 6};
  producer.Send(kDlq, DeadLetter(applied, "database: lock wait timeout"));
  producer.Send(kDlq, DeadLetter(n1, "database: lock wait timeout"));
  producer.Send(kDlq, DeadLetter(n3, "missing header event_key"));
  producer.Send(kDlq, DeadLetter(n2, "database: lock wait timeout"));

  auto replay = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {INBOX_CONSUMER_BINARY, "dlq-replay", "--config",
                                     c.config_path(),       "--from",     kDlq};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(
        argv, outbox::CurrentEnvironment({{"INBOX_TEST_DB_PASSWORD", ConsumerDatabase::kPassword}}),
        60s);
  };
  ProcessResult dry = replay({"--dry-run"});
  INFO(dry.out << dry.err);
  CHECK(dry.exit_code == 0);
  CHECK(dry.out.find("would send " + kDlq + "/0/0 -> " + kOrderTopic + " key 3") !=
        std::string::npos);
  CHECK(dry.out.find("4 would be sent, 0 skipped") != std::string::npos);
  CHECK(ConsumeAll(cluster.bootstrap(), {kOrderTopic}).size() == 16);  // nothing sent

  ProcessResult first = replay({"--reason", "database:", "--offsets", "0-1", "--rate", "50"});
  INFO(first.out << first.err);
  CHECK(first.exit_code == 0);
  CHECK(first.out.find("2 sent, 0 skipped") != std::string::npos);
  ProcessResult second = replay({"--reason", "database:", "--offsets", "2-"});
  INFO(second.out << second.err);
  CHECK(second.exit_code == 0);
  CHECK(second.out.find("1 sent, 1 skipped") != std::string::npos);

  const auto all = ConsumeAll(cluster.bootstrap(), {kOrderTopic});
  REQUIRE(all.size() == 19);
  for (const auto& m : all) {
    INFO("outbox_id " << m.headers.at("outbox_id") << " key " << m.key);
    CHECK(m.partition == JavaPartition(m.key, kPartitions));
    for (const auto& [name, value] : m.headers) CHECK(name.rfind("dlq_", 0) != 0);
  }
  REQUIRE(WaitFor([&] { return db.Applied() >= 18; }, 60s));
  REQUIRE(
      WaitFor([&] { return GroupLag(cluster.bootstrap(), "fulfillment", kOrderTopic) == 0; }, 30s));
  CHECK(c.Stop() == 0);
  auto want = events;
  want.push_back(n1);
  want.push_back(n2);
  CHECK(db.CheckExactlyOnce(want) == "");
  CHECK(c.Count("18 applied, 1 duplicate(s) skipped") == 1);
}
