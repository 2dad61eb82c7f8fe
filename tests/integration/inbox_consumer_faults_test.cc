// The example consumer (examples/inbox_consumer/) when its dead letters
// cannot be delivered, when a seek fails and when the group rebalances in the
// middle of a stall or a transaction: a refusal for good is parked and the
// consumer goes on, a failure to deliver now stalls only its partition, and
// every event still takes effect once. The verdict is SQL on the inbox,
// effect and parked tables, and the dead-letter topic's content.
#include <catch2/catch.hpp>
#include <thread>

#include "support/consumer_harness.h"
#include "support/process.h"
#include "support/test_broker.h"
#include "support/wait.h"

using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

const std::string kInvoices = "outbox.event.Invoice";

struct Rig : ConsumerRig {
  explicit Rig(const std::string& db_name)
      : ConsumerRig(
            db_name,
            {{kOrderTopic, 4}, {kOrderTopic + ".dlq", 1}, {kInvoices, 1}, {kInvoices + ".dlq", 1}},
            2000000) {}
};

// A message that cannot be an event (no event_key header): a dead letter.
RawMessage Poison(int64_t aggregate_id, size_t value_bytes = 2) {
  TestEvent e;
  e.outbox_id = 999;
  e.aggregate_id = aggregate_id;
  RawMessage m = ToMessage(e);
  m.headers["event_key"] = std::nullopt;
  m.value = std::string(value_bytes, 'x');
  return m;
}

std::vector<TestEvent> Invoices(int n, int64_t first_id) {
  std::vector<TestEvent> out;
  for (int i = 0; i < n; ++i) {
    TestEvent e;
    e.outbox_id = first_id + i;
    e.aggregate_id = 1000;
    e.aggregate_type = "Invoice";
    e.event_type = "InvoiceIssued";
    out.push_back(e);
  }
  return out;
}

ConsumerSpec BothTopics() {
  ConsumerSpec spec;
  spec.topics_yaml = "topics: [" + kOrderTopic + ", " + kInvoices + "]";
  return spec;
}

int64_t InvoiceApplied(ConsumerDatabase& db) {
  return db.QueryInt(
      "SELECT COALESCE(SUM(applied), 0) FROM t_aggregate_effect WHERE aggregate_type = "
      "'Invoice'");
}

// A poison message at offset 0 of the Invoice topic, then three invoices.
std::vector<TestEvent> SendPoisonThenInvoices(Rig& rig, size_t poison_bytes = 2) {
  rig.producer.Send(kInvoices, Poison(1000, poison_bytes));
  auto invoices = Invoices(3, 1);
  rig.producer.Send(kInvoices, invoices);
  return invoices;
}

// The three invoices applied (within 60 s) and the group's lag on the
// Invoice topic 0: nothing of it, the poison message included, is left.
void RequireInvoicesCaughtUp(Rig& rig) {
  REQUIRE(WaitFor([&] { return InvoiceApplied(rig.db) >= 3; }, 60s));
  REQUIRE(WaitFor([&] { return GroupLag(rig.cluster.bootstrap(), "fulfillment", kInvoices) == 0; },
                  30s));
}

// Every Produce answered NOT_ENOUGH_REPLICAS until ClearProduceErrors:
// retriable, so a dead letter fails after the spec's message.timeout.ms (2 s).
ConsumerSpec RefuseDeadLetters(Rig& rig) {
  rig.cluster.PushProduceErrors(RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, 100000);
  ConsumerSpec spec = BothTopics();
  spec.properties_yaml = "message.timeout.ms: \"2000\"";
  return spec;
}

// How a run that stalled or raced ends: every one of `events` applied
// within `within` and the group's lag on the order topic 0; then each of
// `consumers`, in order, stops cleanly and each event took effect once.
void CheckCaughtUpOnce(Rig& rig, const std::vector<TestEvent>& events,
                       std::chrono::milliseconds within,
                       const std::vector<ConsumerProcess*>& consumers) {
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= static_cast<int64_t>(events.size()); }, within));
  REQUIRE(WaitFor(
      [&] { return GroupLag(rig.cluster.bootstrap(), "fulfillment", kOrderTopic) == 0; }, 30s));
  for (size_t i = 0; i < consumers.size(); ++i) {
    INFO("consumer " << i + 1 << " of " << consumers.size());
    CHECK(consumers[i]->Stop() == 0);
  }
  CHECK(rig.db.CheckExactlyOnce(events) == "");
}

}  // namespace

TEST_CASE(
    "a dead letter over the producer's size limit is parked with its reason and its partition "
    "goes on",
    "[consumer]") {
  Rig rig("inbox_dlq_too_large");
  // About 1,000,000 bytes: a stock broker takes it (its limit is 1,048,588)
  // but the dead-letter producer's message.max.bytes (1,000,000) does not,
  // once the dlq_* headers are added.
  SendPoisonThenInvoices(rig, 999900);
  auto c = rig.Consumer("c", BothTopics());
  REQUIRE(c.Start());
  INFO(c.Log());
  RequireInvoicesCaughtUp(rig);
  CHECK(c.Stop() == 0);
  CHECK(rig.db.Parked("undeliverable") == 1);
  CHECK(rig.db.QueryInt("SELECT COUNT(*) FROM t_inbox_parked WHERE detail LIKE '%too large%' "
                        "AND detail LIKE '%missing header event_key%' AND source_topic = '" +
                        kInvoices + "' AND source_offset = 0 AND LENGTH(payload) = 999900") == 1);
  CHECK(ConsumeAll(rig.cluster.bootstrap(), {kInvoices + ".dlq"}).empty());
  CHECK(c.Count("parked in t_inbox_parked (reason undeliverable)") == 1);
  CHECK(c.Count("1 undeliverable (parked)") == 1);
}

TEST_CASE(
    "a dead-letter topic the consumer may not write parks the message and the consumer goes "
    "on",
    "[consumer][mock-faults]") {
  Rig rig("inbox_dlq_denied");
  SendPoisonThenInvoices(rig);
  // Every message is in: the next Produce request, the dead letter's, is denied.
  rig.cluster.PushProduceErrors(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, 1);
  auto c = rig.Consumer("c", BothTopics());
  REQUIRE(c.Start());
  INFO(c.Log());
  REQUIRE(WaitFor([&] { return InvoiceApplied(rig.db) >= 3; }, 60s));
  CHECK(c.Stop() == 0);
  CHECK(rig.db.QueryInt("SELECT COUNT(*) FROM t_inbox_parked WHERE reason = 'undeliverable' AND "
                        "detail LIKE '%authoriz%'") == 1);
  CHECK(ConsumeAll(rig.cluster.bootstrap(), {kInvoices + ".dlq"}).empty());
}

TEST_CASE(
    "a failed dead-letter produce stalls only its partition and the message is dead-lettered "
    "once the broker takes it",
    "[consumer][mock-faults]") {
  Rig rig("inbox_dlq_failed");
  const auto invoices = SendPoisonThenInvoices(rig);
  const auto orders = MakeEvents(8, 5, 100);
  rig.producer.Send(kOrderTopic, orders);
  const ConsumerSpec spec = RefuseDeadLetters(rig);
  auto c = rig.Consumer("c", spec);
  REQUIRE(c.Start());
  INFO(c.Log());
  // The Order partitions go on while the Invoice partition waits.
  REQUIRE(WaitFor([&] { return c.Count("pausing consumption of " + kInvoices + "/0") >= 2; }, 60s));
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 40; }, 60s));
  CHECK(InvoiceApplied(rig.db) == 0);
  CHECK(rig.db.Parked("undeliverable") == 0);
  rig.cluster.ClearProduceErrors();
  REQUIRE(WaitFor([&] { return InvoiceApplied(rig.db) >= 3; }, 60s));
  CHECK(c.Stop() == 0);
  auto all = orders;
  all.insert(all.end(), invoices.begin(), invoices.end());
  CHECK(rig.db.QueryInt("SELECT COUNT(*) FROM t_inbox") == 43);
  const auto dead = ConsumeAll(rig.cluster.bootstrap(), {kInvoices + ".dlq"});
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].headers.at("dlq_reason") == "missing header event_key");
  CHECK(dead[0].headers.at("dlq_source") == kInvoices + "/0/0");
  CHECK(rig.db.Parked("undeliverable") == 0);
}

TEST_CASE(
    "a consumer stopped while its dead letter is unanswered leaves the message to the next "
    "start",
    "[consumer][mock-faults]") {
  Rig rig("inbox_dlq_stop");
  SendPoisonThenInvoices(rig);
  const ConsumerSpec spec = RefuseDeadLetters(rig);
  {
    auto c = rig.Consumer("c", spec);
    REQUIRE(c.Start());
    INFO(c.Log());
    REQUIRE(
        WaitFor([&] { return c.Count("pausing consumption of " + kInvoices + "/0") >= 1; }, 60s));
    CHECK(c.Stop() == 0);  // the dead letter is unanswered or failed: nothing stored
    CHECK(c.Count("sent to dead-letter topic") == 0);
  }
  CHECK(GroupLag(rig.cluster.bootstrap(), "fulfillment", kInvoices) == 4);
  CHECK(InvoiceApplied(rig.db) == 0);
  rig.cluster.ClearProduceErrors();
  auto d = rig.Consumer("d", spec);
  REQUIRE(d.Start());
  INFO(d.Log());
  RequireInvoicesCaughtUp(rig);
  CHECK(d.Stop() == 0);
  const auto dead = ConsumeAll(rig.cluster.bootstrap(), {kInvoices + ".dlq"});
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].headers.at("dlq_source") == kInvoices + "/0/0");
  CHECK(rig.db.Parked("undeliverable") == 0);
}

TEST_CASE("a failed seek keeps its partition stalled and no message is skipped", "[consumer]") {
  Rig rig("inbox_seek_fails");
  rig.db.SetConsumerGrants("SELECT");  // every transaction fails: the partitions stall
  auto events = MakeEvents(4, 25);
  rig.producer.Send(kOrderTopic, events);
  auto c = rig.Consumer("c");
  // The first 6 seeks do nothing and report failure; resuming without a
  // good seek would go on past the messages fetched meanwhile.
  REQUIRE(c.Start({{"OUTBOX_CONSUMER_FAILPOINT", "seek_error:6"}}));
  INFO(c.Log());
  REQUIRE(WaitFor([&] { return c.Count("cannot rewind") >= 6; }, 60s));
  rig.db.SetConsumerGrants("SELECT, INSERT, UPDATE, DELETE");
  CheckCaughtUpOnce(rig, events, 60s, {&c});
  CHECK(c.Count("sent to dead-letter topic") == 0);
}

TEST_CASE(
    "a rebalance during a stall hands the stalled partitions over and each event applies "
    "once",
    "[consumer]") {
  Rig rig("inbox_rebalance_stall");
  auto events = MakeEvents(20, 5);
  rig.producer.Send(kOrderTopic, std::vector<TestEvent>(events.begin(), events.begin() + 40));
  auto a = rig.Consumer("a");
  REQUIRE(a.Start());
  REQUIRE(WaitFor([&] { return rig.db.Applied() >= 40; }, 60s));
  rig.db.SetConsumerGrants("SELECT");
  rig.producer.Send(kOrderTopic, std::vector<TestEvent>(events.begin() + 40, events.end()));
  INFO(a.Log());
  REQUIRE(WaitFor([&] { return a.Count("pausing consumption") >= 4; }, 60s));
  auto b = rig.Consumer("b");
  REQUIRE(b.Start());  // a rebalance while a's partitions are stalled
  INFO(b.Log());
  REQUIRE(WaitFor([&] { return a.Count("revoked") >= 1 && b.Count("assigned") >= 1; }, 60s));
  REQUIRE(WaitFor([&] { return b.Count("pausing consumption") >= 1; }, 60s));
  rig.db.SetConsumerGrants("SELECT, INSERT, UPDATE, DELETE");
  CheckCaughtUpOnce(rig, events, 60s, {&a, &b});
  CHECK(ConsumeAll(rig.cluster.bootstrap(), {kOrderTopic + ".dlq"}).empty());
}

TEST_CASE(
    "two consumers processing the same partition at once during a rebalance apply each event "
    "once",
    "[consumer]") {
  Rig rig("inbox_same_partition");
  auto events = MakeEvents(8, 10);
  rig.producer.Send(kOrderTopic, events);
  ConsumerSpec spec;
  // a holds its 30th transaction open for 10 s, past max.poll.interval.ms:
  // the group evicts it and gives its partitions to b, which reads the same
  // message while a's transaction is still open (its inbox insert waits for
  // a's row lock, or times out and retries).
  spec.properties_yaml = "max.poll.interval.ms: \"7000\"";
  auto b = rig.Consumer("b", spec);
  auto a = rig.Consumer("a", spec);
  REQUIRE(a.Start({{"OUTBOX_CONSUMER_FAILPOINT", "before_db_commit:30:10000"}}));
  INFO(a.Log());
  REQUIRE(WaitFor([&] { return a.Count("failpoint before_db_commit: sleeping") == 1; }, 60s));
  REQUIRE(b.Start());
  INFO(b.Log());
  CheckCaughtUpOnce(rig, events, 90s, {&a, &b});
  // b met a's event: as a duplicate once a committed.
  CHECK(b.Count(" 0 duplicate(s) skipped") == 0);
}

TEST_CASE(
    "a value the database refuses is retried max_attempts times with the partition paused and "
    "then dead-lettered with dlq_attempts",
    "[consumer]") {
  Rig rig("inbox_db_refuses_value");
  // event_type fits the header check (64 characters) but not this column:
  // the insert fails with 1406 (data too long), a refusal of this value.
  rig.db.Exec("ALTER TABLE t_inbox MODIFY event_type varchar(13) NOT NULL");
  TestEvent refused;
  refused.outbox_id = 1;
  refused.aggregate_id = 1000;
  refused.aggregate_type = "Invoice";
  refused.event_type = "InvoiceCancelled";  // 16 characters
  rig.producer.Send(kInvoices, {refused});
  const auto invoices = Invoices(2, 2);
  rig.producer.Send(kInvoices, invoices);
  const auto orders = MakeEvents(5, 3, 100);
  rig.producer.Send(kOrderTopic, orders);
  ConsumerSpec spec = BothTopics();
  spec.max_attempts = 4;
  auto c = rig.Consumer("c", spec);
  REQUIRE(c.Start());
  INFO(c.Log());
  const bool done =
      WaitFor([&] { return InvoiceApplied(rig.db) >= 2 && rig.db.Applied() >= 17; }, 60s);
  CHECK(c.Stop() == 0);
  INFO(c.Log());
  REQUIRE(done);
  const auto dead = ConsumeAll(rig.cluster.bootstrap(), {kInvoices + ".dlq"});
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].headers.at("dlq_attempts") == "4");
  CHECK(dead[0].headers.at("dlq_reason").find("MySQL error 1406") != std::string::npos);
  CHECK(dead[0].headers.at("event_key") == refused.Key());
  CHECK(c.Count("after 4 attempt(s)") == 1);
  CHECK(c.Count("4 failed attempt(s)") == 1);
  CHECK(c.Count("pausing consumption") == 0);  // a refused value is no outage
}

TEST_CASE("a dead-letter topic that does not exist parks the message and the consumer goes on",
          "[consumer][mock-faults]") {
  Rig rig("inbox_dlq_missing");
  rig.producer.Send(kInvoices, Poison(1000));
  const auto invoices = Invoices(2, 1);
  rig.producer.Send(kInvoices, invoices);
  // As a broker without auto.create.topics.enable answers for a topic nobody created.
  rig.cluster.SetTopicError(kInvoices + ".dlq", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
  auto c = rig.Consumer("c", BothTopics());
  REQUIRE(c.Start());
  const bool done = WaitFor([&] { return InvoiceApplied(rig.db) >= 2; }, 60s);
  CHECK(c.Stop() == 0);
  INFO(c.Log());
  REQUIRE(done);
  CHECK(rig.db.QueryInt("SELECT COUNT(*) FROM t_inbox_parked WHERE reason = 'undeliverable' AND "
                        "detail LIKE '%nknown topic%'") == 1);
  CHECK(c.Count("pausing consumption") == 0);
}
