// The chain rules in one place (src/relay/chain_publisher.h), over the fake
// broker and a fake clock: order within an aggregate, the cut after a
// failure, routing failures, the lease budget.
#include "relay/chain_publisher.h"

#include <catch2/catch.hpp>

#include "fakes/fake_clock.h"
#include "fakes/fake_publisher.h"

namespace outbox {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;
using testing::FakePublisher;

OutboxRow Row(int64_t id, int64_t aggregate, std::string topic_override = "") {
  OutboxRow r;
  r.id = id;
  r.aggregate = {"order", aggregate};
  r.event_type = "E";
  r.event_key = "E:" + std::to_string(id);
  r.payload = "{}";
  if (!topic_override.empty()) r.topic = topic_override;
  return r;
}

struct Rig {
  explicit Rig(Ordering ordering = Ordering::kPerAggregate)
      : clock(std::make_shared<FakeClock>()),
        broker(std::make_shared<FakePublisher>()),
        router(Config()),
        chains(broker, &router, ordering, clock) {}

  static ServiceConfig Config() {
    ServiceConfig c;
    c.name = "orders";
    return c;
  }

  // Publishes and returns the outcomes (the fake completes inline unless held).
  std::vector<PublishOutcome> Publish(const std::vector<OutboxRow>& rows,
                                      std::chrono::milliseconds budget = 10s) {
    std::vector<PublishOutcome> out;
    bool called = false;
    chains.Publish(rows, clock->Now() + budget, [&](std::vector<PublishOutcome> o) {
      CHECK_FALSE(called);
      called = true;
      out = std::move(o);
    });
    broker->CompleteAll();
    REQUIRE(called);
    return out;
  }

  std::shared_ptr<FakeClock> clock;
  std::shared_ptr<FakePublisher> broker;
  Router router;
  ChainPublisher chains;
};

std::vector<std::string> AckedIds(const FakePublisher& broker) {
  std::vector<std::string> ids;
  for (const auto& m : broker.acked())
    for (const auto& [k, v] : m.headers)
      if (k == "outbox_id") ids.push_back(v);
  return ids;
}

TEST_CASE("an aggregate's events are sent one after the other in id order", "[relay][chains]") {
  Rig rig;
  rig.broker->hold(true);
  std::vector<PublishOutcome> out;
  rig.chains.Publish({Row(1, 7), Row(2, 8), Row(3, 7), Row(4, 7)}, rig.clock->Now() + 10s,
                     [&](std::vector<PublishOutcome> o) { out = std::move(o); });
  // One message per chain in flight: aggregate 7's first and aggregate 8's.
  CHECK(rig.broker->sends() == 2);
  CHECK(rig.broker->CompleteAll() == 4);
  REQUIRE(out.size() == 4);
  for (const auto& o : out) CHECK(o.result == PublishResult::kAcked);
  CHECK(AckedIds(*rig.broker) == std::vector<std::string>{"1", "2", "3", "4"});
}

TEST_CASE("a failure leaves the rest of its aggregate's chain not attempted", "[relay][chains]") {
  Rig rig;
  rig.broker->set_decide([](const Message& m) {
    for (const auto& [k, v] : m.headers)
      if (k == "outbox_id" && v == "2")
        return PublishOutcome{PublishResult::kRetryable, FailureReason::kTimeout, "timed out"};
    return PublishOutcome{PublishResult::kAcked, FailureReason::kNone, ""};
  });
  auto out = rig.Publish({Row(1, 7), Row(2, 7), Row(3, 7), Row(4, 8)});
  CHECK(out[0].result == PublishResult::kAcked);
  CHECK(out[1].result == PublishResult::kRetryable);
  CHECK(out[1].reason == FailureReason::kTimeout);
  CHECK(out[2].result == PublishResult::kNotAttempted);
  CHECK(out[2].error.find("earlier event of its aggregate failed") != std::string::npos);
  CHECK(out[3].result == PublishResult::kAcked);  // another aggregate goes on
}

TEST_CASE("with ordering none a failure holds back no other row", "[relay][chains]") {
  Rig rig(Ordering::kNone);
  rig.broker->set_decide([](const Message& m) {
    return m.value == "bad"
               ? PublishOutcome{PublishResult::kRetryable, FailureReason::kTimeout, "x"}
               : PublishOutcome{PublishResult::kAcked, FailureReason::kNone, ""};
  });
  auto rows = std::vector<OutboxRow>{Row(1, 7), Row(2, 7), Row(3, 7)};
  rows[0].payload = "bad";
  auto out = rig.Publish(rows);
  CHECK(out[0].result == PublishResult::kRetryable);
  CHECK(out[1].result == PublishResult::kAcked);
  CHECK(out[2].result == PublishResult::kAcked);
}

TEST_CASE("a row that cannot be routed fails for good and holds back its aggregate",
          "[relay][chains]") {
  Rig rig;
  auto out = rig.Publish({Row(1, 7, "spaces are not allowed"), Row(2, 7), Row(3, 8)});
  CHECK(out[0].result == PublishResult::kPermanent);
  CHECK(out[0].reason == FailureReason::kRouting);
  CHECK(out[1].result == PublishResult::kNotAttempted);
  CHECK(out[2].result == PublishResult::kAcked);
  CHECK(rig.broker->sends() == 1);
}

TEST_CASE("a batch in which nothing can be routed completes without the broker",
          "[relay][chains]") {
  Rig rig;
  auto out = rig.Publish({Row(1, 7, "bad topic")});
  REQUIRE(out.size() == 1);
  CHECK(out[0].result == PublishResult::kPermanent);
  CHECK(rig.broker->sends() == 0);
  CHECK(rig.Publish({}).empty());
}

TEST_CASE("no chain message starts after the lease budget ran out", "[relay][chains]") {
  for (auto elapsed : {13s, 15s}) {
    Rig rig;
    rig.broker->hold(true);
    std::vector<PublishOutcome> out;
    rig.chains.Publish({Row(1, 7), Row(2, 7), Row(3, 7), Row(4, 8)}, rig.clock->Now() + 14s,
                       [&](std::vector<PublishOutcome> o) { out = std::move(o); });
    CHECK(rig.broker->sends() == 2);  // the heads of both chains go at once
    rig.clock->Advance(elapsed);      // the broker is slow
    rig.broker->CompleteAll();
    REQUIRE(out.size() == 4);
    CHECK(out[0].result == PublishResult::kAcked);
    CHECK(out[3].result == PublishResult::kAcked);
    if (elapsed < 14s) {
      CHECK(out[1].result == PublishResult::kAcked);
      CHECK(out[2].result == PublishResult::kAcked);
    } else {
      // Acknowledged after the budget: the rest of the chain is released for
      // the next claim instead of outliving the lease.
      for (int i : {1, 2}) {
        CHECK(out[i].result == PublishResult::kNotAttempted);
        CHECK(out[i].error.find("lease budget") != std::string::npos);
      }
      CHECK(rig.broker->sends() == 2);
    }
  }
}

// A broker that acknowledges whatever it still holds when it is destroyed,
// as KafkaPublisher's destructor flushes its queue.
class AckOnDestroyPublisher : public Publisher {
 public:
  ~AckOnDestroyPublisher() override {
    for (auto& sent : held_) sent({PublishResult::kAcked, FailureReason::kNone, ""});
  }
  void Send(const Message&, SentFn sent) override { held_.push_back(std::move(sent)); }
  bool Healthy() const override { return true; }

 private:
  std::vector<SentFn> held_;
};

TEST_CASE(
    "a batch the broker still holds is freed with the broker after its ChainPublisher is gone",
    "[relay][chains]") {
  auto clock = std::make_shared<FakeClock>();
  auto broker = std::make_shared<FakePublisher>();
  broker->hold(true);
  const Router router(Rig::Config());
  auto batch_token = std::make_shared<int>(0);  // captured by `done`: lives as long as the batch
  const std::weak_ptr<int> batch_alive = batch_token;
  const std::weak_ptr<FakePublisher> broker_alive = broker;
  bool called = false;
  {
    ChainPublisher chains(broker, &router, Ordering::kPerAggregate, clock);
    chains.Publish({Row(1, 7), Row(2, 7)}, clock->Now() + 10s,
                   [&called, batch_token](std::vector<PublishOutcome>) { called = true; });
  }
  batch_token.reset();
  CHECK(broker->sends() == 1);
  CHECK_FALSE(batch_alive.expired());  // the held message keeps its batch
  // The broker goes without completing the message: nothing may keep the
  // broker and the batch alive in a cycle.
  broker.reset();
  CHECK(broker_alive.expired());
  CHECK(batch_alive.expired());
  CHECK_FALSE(called);
}

TEST_CASE("once the producer is gone the rest of a chain is released not attempted",
          "[relay][chains]") {
  auto clock = std::make_shared<FakeClock>();
  auto broker = std::make_shared<AckOnDestroyPublisher>();
  const Router router(Rig::Config());
  std::vector<PublishOutcome> out;
  {
    ChainPublisher chains(broker, &router, Ordering::kPerAggregate, clock);
    chains.Publish({Row(1, 7), Row(2, 7), Row(3, 8)}, clock->Now() + 10s,
                   [&](std::vector<PublishOutcome> o) { out = std::move(o); });
  }
  CHECK(out.empty());
  broker.reset();  // acknowledges rows 1 and 3 while it is being destroyed
  REQUIRE(out.size() == 3);
  CHECK(out[0].result == PublishResult::kAcked);
  CHECK(out[1].result == PublishResult::kNotAttempted);
  CHECK(out[1].error.find("producer was shut down") != std::string::npos);
  CHECK(out[2].result == PublishResult::kAcked);
}

}  // namespace
}  // namespace outbox

namespace outbox {
namespace {

TEST_CASE(
    "a claim's budget follows its lease: start by half the lease less a second and taken back "
    "from the producer's queue at half the lease",
    "[chains]") {
  const Clock::TimePoint claimed{std::chrono::seconds(100)};
  struct Row {
    int64_t lease_ms;
    std::chrono::milliseconds start_by, queued_until;
  };
  const Row rows[] = {{5000, 1500ms, 2500ms}, {30000, 14000ms, 15000ms}, {4000, 1000ms, 2000ms}};
  for (const auto& r : rows) {
    INFO("lease_ms " << r.lease_ms);
    const PublishBudget b = BudgetFor(claimed, r.lease_ms);
    CHECK(b.start_by - claimed == r.start_by);
    CHECK(b.queued_until - claimed == r.queued_until);
    // librdkafka fails a message on the wire message.timeout.ms (lease/2)
    // after it started: by the lease's last second at the latest.
    CHECK(b.start_by + std::chrono::milliseconds(r.lease_ms / 2) <=
          claimed + std::chrono::milliseconds(r.lease_ms) - 1s);
  }
}

TEST_CASE("every message of a batch carries its claim's queued_until to the publisher",
          "[chains]") {
  Rig rig;
  const PublishBudget budget{rig.clock->Now() + 1s, rig.clock->Now() + 2s};
  bool called = false;
  rig.chains.Publish({Row(1, 7), Row(2, 7), Row(3, 8)}, budget,
                     [&](std::vector<PublishOutcome>) { called = true; });
  rig.broker->CompleteAll();
  REQUIRE(called);
  REQUIRE(rig.broker->acked().size() == 3);
  for (const Message& m : rig.broker->acked()) CHECK(m.queued_until == budget.queued_until);
}

}  // namespace
}  // namespace outbox
