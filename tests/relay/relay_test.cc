// The relay's state transitions, driven step by step with a fake table, a fake
// broker and a fake clock. The same transitions are tested against MariaDB and
// the mock Kafka cluster in tests/integration/relay_e2e_test.cc.
#include "relay/relay.h"

#include <catch2/catch.hpp>
#include <thread>

#include "relay/relay_rig.h"
#include "support/log_capture.h"

namespace outbox {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;
using testing::FakeRow;
using testing::FakeTable;

std::string Header(const Message& m, const std::string& name) {
  for (const auto& [k, v] : m.headers)
    if (k == name) return v;
  return "";
}

ServiceConfig TestConfig(Ordering ordering = Ordering::kNone) {
  ServiceConfig c;
  c.name = "orders";
  c.ordering = ordering;
  c.batch_size = 100;
  c.lease_ms = 30000;
  c.retry.max_attempts = 3;
  c.retry.initial_backoff_ms = 1000;
  c.retry.max_backoff_ms = 4000;
  return c;
}

// One relay over a fake table and broker (RelayRig) of TestConfig() unless
// told otherwise. `table` may be shared with a second relay (another replica).
struct Rig : testing::RelayRig {
  explicit Rig(ServiceConfig c = TestConfig(), std::shared_ptr<FakeTable> shared = nullptr,
               std::shared_ptr<FakeClock> shared_clock = nullptr, StoreFactory factory = nullptr)
      : RelayRig(std::move(c), std::move(shared), std::move(shared_clock), std::move(factory)) {}

  // One `event_type` event each for aggregates order/0 to order/n-1.
  void InsertOrders(int n, const std::string& event_type) {
    for (int i = 0; i < n; ++i) table->Insert("order", i, event_type);
  }
};

TEST_CASE("a row is marked SENT only after the broker acknowledged it", "[relay]") {
  Rig rig;
  int64_t id = rig.table->Insert("order", 42, "OrderPaid", R"({"total":10})");
  rig.broker->hold(true);

  REQUIRE(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);
  CHECK(rig.table->Get(id).status == "SENDING");
  CHECK(rig.relay->settle.SettleOrGroup(0ms).count == 0);
  CHECK(rig.table->Get(id).status == "SENDING");

  rig.clock->Advance(250ms);
  REQUIRE(rig.broker->CompleteAll() == 1);
  CHECK(rig.relay->settle.SettleOrGroup(0ms).count == 1);
  CHECK(rig.table->Get(id).status == "SENT");

  auto acked = rig.broker->acked();
  REQUIRE(acked.size() == 1);
  CHECK(acked[0].topic == "outbox.event.order");
  CHECK(acked[0].key == "42");
  CHECK(acked[0].value == R"({"total":10})");
  CHECK(Header(acked[0], "outbox_id") == std::to_string(id));
  CHECK(Header(acked[0], "event_type") == "OrderPaid");
  CHECK(rig.m().Published("outbox.event.order") == 1);
  CHECK(rig.relay->queue->inflight() == 0);
}

TEST_CASE("a retryable failure returns the row to NEW with a jittered exponential backoff",
          "[relay]") {
  Rig rig;
  int64_t id = rig.table->Insert("order", 1, "OrderCreated");
  rig.faults->FailNext(1, PublishResult::kRetryable, FailureReason::kTimeout);

  const int64_t t0 = rig.clock->UnixMs();
  rig.Step();
  FakeRow row = rig.table->Get(id);
  CHECK(row.status == "NEW");
  CHECK(row.row.retry_count == 1);
  CHECK(row.last_error == "injected failure: timeout");
  // Equal jitter around the first step (1000 ms): somewhere in [500, 1000].
  CHECK(row.next_retry_at_ms >= t0 + 500);
  CHECK(row.next_retry_at_ms <= t0 + 1000);
  CHECK(rig.m().Failures("timeout") == 1);

  // Not due yet: the idle poll finds nothing to claim.
  CHECK(rig.Step() == ClaimRound::kIdle);
  CHECK(rig.broker->acked().empty());

  rig.clock->Advance(1000ms);
  rig.Step();
  CHECK(rig.table->Get(id).status == "SENT");
  CHECK(rig.table->Get(id).row.retry_count == 1);
}

TEST_CASE("the backoff doubles per failure up to max_backoff_ms", "[relay]") {
  Rig rig;
  int64_t id = rig.table->Insert("order", 1, "OrderCreated");
  rig.config.retry.max_attempts = 10;
  Rig many(rig.config, rig.table, rig.clock);
  many.faults->FailNext(4);
  const int64_t bases[] = {1000, 2000, 4000, 4000};
  for (int64_t base : bases) {
    const int64_t t = many.clock->UnixMs();
    many.Step();
    FakeRow row = many.table->Get(id);
    REQUIRE(row.status == "NEW");
    CHECK(row.next_retry_at_ms - t >= base / 2);
    CHECK(row.next_retry_at_ms - t <= base);
    many.clock->Advance(std::chrono::milliseconds(base));
  }
  many.Step();
  CHECK(many.table->Get(id).status == "SENT");
  CHECK(many.table->Get(id).row.retry_count == 4);
}

TEST_CASE("a row whose attempts run out becomes DEAD with the last error", "[relay]") {
  Rig rig;  // max_attempts 3
  int64_t id = rig.table->Insert("order", 7, "OrderPaid");
  rig.faults->FailNext(100, PublishResult::kRetryable, FailureReason::kBrokerDown);
  for (int attempt = 1; attempt <= 3; ++attempt) {
    rig.Step();
    rig.clock->Advance(5s);
  }
  FakeRow row = rig.table->Get(id);
  CHECK(row.status == "DEAD");
  CHECK(row.row.retry_count == 3);
  CHECK(row.last_error == "attempts exhausted (3): injected failure: broker_down");
  CHECK(rig.m().Value(ServiceStats::Counter::kEventsDead) == 1);
  CHECK(rig.m().Failures("broker_down") == 3);

  // DEAD is final: nothing claims it again.
  rig.clock->Advance(60s);
  CHECK(rig.Step() == ClaimRound::kIdle);
  CHECK(rig.table->Get(id).status == "DEAD");
}

TEST_CASE("a permanent failure makes the row DEAD at once and the rest of the batch flows",
          "[relay]") {
  Rig rig;
  int64_t bad = rig.table->Insert("order", 1, "OrderCreated");
  int64_t good = rig.table->Insert("order", 2, "OrderCreated");
  rig.faults->FailNext(1, PublishResult::kPermanent, FailureReason::kMessageTooLarge);
  rig.Step();
  CHECK(rig.table->Get(bad).status == "DEAD");
  CHECK(rig.table->Get(bad).row.retry_count == 1);
  CHECK(rig.table->Get(bad).last_error == "injected failure: message_too_large");
  CHECK(rig.table->Get(good).status == "SENT");
  CHECK(rig.m().Value(ServiceStats::Counter::kEventsDead) == 1);
  CHECK(rig.m().Failures("message_too_large") == 1);
}

TEST_CASE("a row whose topic cannot be routed goes DEAD without reaching the broker", "[relay]") {
  Rig rig;
  int64_t bad = rig.table->Insert("order", 1, "OrderCreated");
  int64_t good = rig.table->Insert("order", 2, "OrderCreated");
  FakeRow r = rig.table->Get(bad);
  r.row.topic = "spaces are not allowed";
  rig.table->Put(bad, r);
  rig.Step();
  CHECK(rig.table->Get(bad).status == "DEAD");
  CHECK(rig.table->Get(bad).last_error.find("invalid topic") != std::string::npos);
  CHECK(rig.table->Get(good).status == "SENT");
  REQUIRE(rig.broker->acked().size() == 1);
  CHECK(rig.broker->acked()[0].key == "2");
}

TEST_CASE("a settle whose lease was taken over is counted as stale and not applied", "[relay]") {
  Rig a;
  Rig b(TestConfig(), a.table, a.clock);
  int64_t id = a.table->Insert("order", 5, "OrderShipped");

  a.broker->hold(true);  // relay A stalls between publishing and settling
  a.relay->claim.ClaimOnce();
  REQUIRE(a.table->Get(id).status == "SENDING");

  a.clock->Advance(31s);  // A's lease expires; B reclaims and delivers
  b.Step();
  REQUIRE(a.table->Get(id).status == "SENT");
  CHECK(b.m().Value(ServiceStats::Counter::kLeasesReclaimed) == 1);

  // A comes back and settles its (now stale) claim as a retry: not applied.
  a.faults->FailNext(0);
  a.broker->set_decide([](const Message&) {
    return PublishOutcome{PublishResult::kRetryable, FailureReason::kTimeout, "late failure"};
  });
  a.broker->CompleteAll();
  CHECK(a.relay->settle.SettleOrGroup(0ms).count == 1);
  CHECK(a.table->Get(id).status == "SENT");
  CHECK(a.table->Get(id).row.retry_count == 0);
  CHECK(a.m().Value(ServiceStats::Counter::kStaleTransitions) == 1);
}

TEST_CASE("leases that expired together are reclaimed by a round that read the head", "[relay]") {
  for (Ordering ordering : {Ordering::kNone, Ordering::kPerAggregate}) {
    INFO("ordering " << ToString(ordering));
    Rig a(TestConfig(ordering));
    Rig b(TestConfig(ordering), a.table, a.clock);
    b.relay->claim.ClaimOnce();  // an empty table: B's next round reads the head
    a.InsertOrders(3, "OrderPaid");
    a.broker->hold(true);  // A claims all three and stalls
    a.relay->claim.ClaimOnce();
    REQUIRE(a.table->CountStatus("SENDING") == 3);
    a.clock->Advance(31s);  // A's leases expire, no NEW row is left
    b.relay->claim.ClaimOnce();
    CHECK(b.m().Value(ServiceStats::Counter::kLeasesReclaimed) == 3);
    CHECK(b.relay->settle.SettleOrGroup(0ms).count == 1);
    CHECK(a.table->CountStatus("SENT") == 3);
  }
}

TEST_CASE("a stale settle is counted as neither published nor DEAD", "[relay]") {
  for (PublishResult late : {PublishResult::kAcked, PublishResult::kPermanent}) {
    Rig a;
    Rig b(TestConfig(), a.table, a.clock);
    int64_t id = a.table->Insert("order", 5, "OrderShipped");
    a.broker->hold(true);
    a.relay->claim.ClaimOnce();
    a.clock->Advance(31s);  // A's lease expires; B reclaims and delivers
    b.Step();
    REQUIRE(a.table->Get(id).status == "SENT");
    a.broker->set_decide([late](const Message&) {
      return PublishOutcome{
          late,
          late == PublishResult::kAcked ? FailureReason::kNone : FailureReason::kMessageTooLarge,
          late == PublishResult::kAcked ? "" : "too large"};
    });
    a.broker->CompleteAll();
    CHECK(a.relay->settle.SettleOrGroup(0ms).count == 1);
    CHECK(a.table->Get(id).status == "SENT");
    CHECK(a.m().Value(ServiceStats::Counter::kStaleTransitions) == 1);
    CHECK(a.m().Value(ServiceStats::Counter::kEventsDead) == 0);
    CHECK(a.m().Published("outbox.event.order") == 0);
    CHECK(b.m().Published("outbox.event.order") == 1);
  }
}

TEST_CASE("a batch whose claim fails to commit after it was published is claimed again",
          "[relay][ordering]") {
  for (Ordering ordering : {Ordering::kNone, Ordering::kPerAggregate}) {
    INFO("ordering " << ToString(ordering));
    Rig rig(TestConfig(ordering));
    std::vector<int64_t> ids;
    for (int i = 0; i < 3; ++i)
      ids.push_back(rig.table->Insert("order", 1, "E", std::to_string(i)));
    ids.push_back(rig.table->Insert("order", 2, "E", "b"));
    rig.broker->hold(true);
    // The claim's rows go to the broker before its commit, which is lost.
    rig.table->FailClaimCommits(1);
    CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kFailed);
    CHECK(rig.relay->queue->inflight() == 1);
    // Every row a chain of its own, or the two aggregates. first messages.
    CHECK(rig.broker->sends() == (ordering == Ordering::kNone ? 4 : 2));
    for (int64_t id : ids) CHECK(rig.table->Get(id).status == "NEW");
    // Acknowledged, but the rows were never this relay's: nothing counted as
    // published, nothing marked SENT.
    rig.broker->CompleteAll();
    rig.broker->hold(false);
    CHECK(rig.relay->settle.SettleOrGroup(0ms).count == 1);
    CHECK(rig.m().Value(ServiceStats::Counter::kStaleTransitions) == 4);
    CHECK(rig.m().Published("outbox.event.order") == 0);
    for (int64_t id : ids) CHECK(rig.table->Get(id).status == "NEW");
    // The next rounds publish them again: duplicates, each after its first
    // copy, and aggregate 1's first copies in id order.
    for (int i = 0; i < 3; ++i) rig.Step();
    for (int64_t id : ids) CHECK(rig.table->Get(id).status == "SENT");
    CHECK(rig.m().Published("outbox.event.order") == 4);
    std::vector<std::string> order1;
    for (const auto& m : rig.broker->acked())
      if (m.key == "1") order1.push_back(m.value);
    CHECK(order1 == std::vector<std::string>{"0", "1", "2", "0", "1", "2"});
  }
}

// Runs `during_claim` inside every claim's transaction, after the relay's
// before_commit (the batch is published); a settle in that moment is
// recorded and refused instead of waiting on the table (which the claim
// holds).
struct InClaim {
  std::function<void()> during_claim;
  bool in_claim = false;
  int settles_in_claim = 0;
};
class InClaimStore : public testing::OutboxStoreWrapper {
 public:
  InClaimStore(std::shared_ptr<OutboxStore> target, std::shared_ptr<InClaim> state)
      : OutboxStoreWrapper(std::move(target)), state_(std::move(state)) {}
  Status ClaimDue(int limit, int64_t lease_ms, bool include_expired, ClaimedBatch* out,
                  const ClaimedFn& before_commit) override {
    return OutboxStoreWrapper::ClaimDue(limit, lease_ms, include_expired, out, Wrap(before_commit));
  }
  Status ClaimIds(const std::vector<int64_t>& ids, int64_t lease_ms, const ChooseFn& choose,
                  ClaimedBatch* out, const ClaimedFn& before_commit) override {
    return OutboxStoreWrapper::ClaimIds(ids, lease_ms, choose, out, Wrap(before_commit));
  }
  Status Settle(const std::string& lease_token, const std::vector<SettleOp>& ops,
                SettleResult* result) override {
    if (state_->in_claim) {
      ++state_->settles_in_claim;
      return Status::Unavailable("settled while the claim was open");
    }
    return OutboxStoreWrapper::Settle(lease_token, ops, result);
  }

 private:
  ClaimedFn Wrap(const ClaimedFn& before_commit) {
    return [this, before_commit](const ClaimedBatch& claimed) {
      before_commit(claimed);
      state_->in_claim = true;
      if (state_->during_claim) state_->during_claim();
      state_->in_claim = false;
    };
  }
  std::shared_ptr<InClaim> state_;
};

TEST_CASE("a batch published before its claim committed is settled only after the claim ended",
          "[relay]") {
  for (Ordering ordering : {Ordering::kNone, Ordering::kPerAggregate}) {
    INFO("ordering " << ToString(ordering));
    auto clock = std::make_shared<FakeClock>();
    auto table = std::make_shared<FakeTable>(clock);
    auto state = std::make_shared<InClaim>();
    Rig rig(TestConfig(ordering), table, clock, [table, state] {
      return std::make_unique<InClaimStore>(std::make_unique<testing::FakeStore>(table), state);
    });
    int settled_in_claim = -1;
    // The broker acknowledges at once: the batch is complete before the
    // claim's commit, and the settle thread would find it.
    state->during_claim = [&] { settled_in_claim = rig.relay->settle.SettleOrGroup(0ms).count; };
    // Two rows: a batch claim (one row alone, ClaimRow, publishes after its
    // commit).
    int64_t id = table->Insert("order", 1, "OrderCreated");
    int64_t other = table->Insert("order", 2, "OrderCreated");
    rig.relay->claim.ClaimOnce();
    CHECK(settled_in_claim == 0);
    CHECK(state->settles_in_claim == 0);
    CHECK(rig.relay->settle.SettleOrGroup(0ms).count == 1);
    CHECK(table->Get(id).status == "SENT");
    CHECK(table->Get(other).status == "SENT");
    CHECK(rig.m().Value(ServiceStats::Counter::kStaleTransitions) == 0);
  }
}

// A Rig whose stores fail the next `*failures` settles.
struct FailingSettleRig {
  FailingSettleRig()
      : clock(std::make_shared<FakeClock>()),
        table(std::make_shared<FakeTable>(clock)),
        failures(std::make_shared<std::atomic<int>>(0)),
        rig(TestConfig(), table, clock, [t = table, f = failures] {
          return std::make_unique<testing::FailingSettleStore>(
              std::make_unique<testing::FakeStore>(t), f);
        }) {}

  std::shared_ptr<FakeClock> clock;
  std::shared_ptr<FakeTable> table;
  std::shared_ptr<std::atomic<int>> failures;
  Rig rig;
};

TEST_CASE("a settle that fails on the database keeps the batch and applies it later", "[relay]") {
  FailingSettleRig f;
  Rig& rig = f.rig;
  auto& table = f.table;
  auto& failures = f.failures;
  int64_t id = table->Insert("order", 3, "OrderPaid");

  *failures = 2;
  rig.relay->claim.ClaimOnce();
  CHECK(rig.relay->settle.SettleOrGroup(0ms).count == 0);
  CHECK(rig.m().Value(ServiceStats::Gauge::kDatabaseUp) == 0);
  CHECK_FALSE(rig.relay->health.up());
  CHECK(rig.relay->health.LastError() == "injected: lost connection to server");
  CHECK(rig.relay->settle.SettleOrGroup(0ms).count == 0);
  CHECK(table->Get(id).status == "SENDING");
  CHECK(rig.relay->queue->inflight() == 1);

  CHECK(rig.relay->settle.SettleOrGroup(0ms).count == 1);
  CHECK(table->Get(id).status == "SENT");
  CHECK(rig.m().Value(ServiceStats::Gauge::kDatabaseUp) == 1);
  CHECK(rig.relay->queue->inflight() == 0);
}

TEST_CASE("a settle that keeps failing keeps the service not ready while other statements succeed",
          "[relay]") {
  FailingSettleRig f;
  Rig& rig = f.rig;
  auto& table = f.table;
  f.failures->store(1000);
  int64_t id = table->Insert("order", 3, "OrderPaid");
  rig.relay->claim.ClaimOnce();
  CHECK(rig.relay->settle.SettleOrGroup(0ms).count == 0);
  // Polls and gauge reads work, the settle still fails: not ready, and the
  // reason stays the settle's.
  for (int i = 0; i < 3; ++i) {
    CHECK(rig.relay->settle.SettleOrGroup(0ms).count == 0);
    rig.relay->claim.ClaimOnce();
    REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
    CHECK_FALSE(rig.relay->health.up());
    CHECK(rig.m().Value(ServiceStats::Gauge::kDatabaseUp) == 0);
    CHECK(rig.relay->health.LastError() == "injected: lost connection to server");
  }
  CHECK(table->Get(id).status == "SENDING");

  f.failures->store(0);
  CHECK(rig.relay->settle.SettleOrGroup(0ms).count == 1);
  CHECK(table->Get(id).status == "SENT");
  CHECK(rig.relay->health.up());
  CHECK(rig.m().Value(ServiceStats::Gauge::kDatabaseUp) == 1);
  CHECK(rig.relay->health.LastError().empty());
}

TEST_CASE("a database that is down fails the round and is reported and then recovers", "[relay]") {
  Rig rig;
  int64_t id = rig.table->Insert("order", 3, "OrderPaid");
  rig.table->set_down(true);
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kFailed);
  CHECK_FALSE(rig.relay->housekeeping.RefreshGauges().ok());
  CHECK(rig.m().Value(ServiceStats::Gauge::kDatabaseUp) == 0);
  CHECK(rig.table->Get(id).status == "NEW");

  rig.table->set_down(false);
  rig.Step();
  CHECK(rig.table->Get(id).status == "SENT");
  CHECK(rig.m().Value(ServiceStats::Gauge::kDatabaseUp) == 1);
}

TEST_CASE("a full batch asks for another round at once", "[relay]") {
  ServiceConfig c = TestConfig();
  c.batch_size = 2;
  Rig rig(c);
  rig.InsertOrders(5, "OrderCreated");
  CHECK(rig.Step() == ClaimRound::kMore);
  CHECK(rig.Step() == ClaimRound::kMore);
  CHECK(rig.Step() == ClaimRound::kIdle);
  CHECK(rig.table->CountStatus("SENT") == 5);
}

TEST_CASE("after a round that claimed events the poll backoff halves down to 1 ms", "[relay]") {
  CHECK(NextPollWait(100ms, 3, 100ms) == 50ms);
  CHECK(NextPollWait(8ms, 1, 100ms) == 4ms);
  CHECK(NextPollWait(1ms, 1, 100ms) == 1ms);
  CHECK(NextPollWait(100ms, 1, 1ms) == 1ms);
}

TEST_CASE("rounds that find nothing back off by doubling up to poll_interval_ms", "[relay]") {
  std::chrono::milliseconds wait = 1ms;
  std::vector<int64_t> waits;
  for (int i = 0; i < 10; ++i) {
    wait = NextPollWait(wait, 0, 100ms);
    waits.push_back(wait.count());
  }
  CHECK(waits == std::vector<int64_t>{2, 4, 8, 16, 32, 64, 100, 100, 100, 100});
  CHECK(NextPollWait(100ms, 0, 100ms) == 100ms);
  CHECK(NextPollWait(1ms, 0, 1ms) == 1ms);
}

TEST_CASE("no more than max_inflight_batches batches are held unsettled", "[relay]") {
  ServiceConfig c = TestConfig();
  c.batch_size = 1;
  c.max_inflight_batches = 2;
  Rig rig(c);
  rig.InsertOrders(5, "OrderCreated");
  rig.broker->hold(true);
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kMore);
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kMore);
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kBusy);
  CHECK(rig.table->CountStatus("SENDING") == 2);
  rig.broker->CompleteAll();
  CHECK(rig.relay->settle.SettleOrGroup(0ms).count == 2);
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kMore);
}

TEST_CASE("per_aggregate: a failed event holds back only its own aggregate", "[relay][ordering]") {
  Rig rig(TestConfig(Ordering::kPerAggregate));
  std::vector<int64_t> a, b;
  for (int i = 0; i < 3; ++i) {
    a.push_back(rig.table->Insert("order", 1, "E", "a" + std::to_string(i)));
    b.push_back(rig.table->Insert("order", 2, "E", "b" + std::to_string(i)));
  }
  rig.faults->FailNext(1);  // the first message: order 1's first event
  rig.Step();
  CHECK(rig.table->Get(a[0]).status == "NEW");
  CHECK(rig.table->Get(a[0]).row.retry_count == 1);
  // Not attempted behind the failure: released without spending an attempt.
  CHECK(rig.table->Get(a[1]).status == "NEW");
  CHECK(rig.table->Get(a[1]).row.retry_count == 0);
  for (int64_t id : b) CHECK(rig.table->Get(id).status == "SENT");

  // While its first event waits out the backoff, nothing of order 1 goes.
  for (int i = 0; i < 3; ++i) rig.Step();
  for (int64_t id : a) CHECK(rig.table->Get(id).status == "NEW");

  rig.clock->Advance(1s);
  for (int i = 0; i < 3; ++i) rig.Step();
  for (int64_t id : a) CHECK(rig.table->Get(id).status == "SENT");
  std::vector<std::string> order1;
  for (const auto& m : rig.broker->acked())
    if (m.key == "1") order1.push_back(m.value);
  CHECK(order1 == std::vector<std::string>{"a0", "a1", "a2"});
}

TEST_CASE("per_aggregate: a DEAD event blocks its aggregate under block but not under skip",
          "[relay][ordering]") {
  for (DeadPolicy policy : {DeadPolicy::kBlock, DeadPolicy::kSkip}) {
    ServiceConfig c = TestConfig(Ordering::kPerAggregate);
    c.dead_policy = policy;
    Rig rig(c);
    int64_t dead = rig.table->Insert("order", 1, "E");
    FakeRow r = rig.table->Get(dead);
    r.status = "DEAD";
    rig.table->Put(dead, r);
    int64_t later = rig.table->Insert("order", 1, "E");
    int64_t other = rig.table->Insert("order", 2, "E");
    for (int i = 0; i < 3; ++i) rig.Step();
    REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
    CHECK(rig.table->Get(other).status == "SENT");
    CHECK(rig.m().Value(ServiceStats::Gauge::kDead) == 1);
    if (policy == DeadPolicy::kBlock) {
      CHECK(rig.table->Get(later).status == "NEW");
      CHECK(rig.m().Value(ServiceStats::Gauge::kBlockedAggregates) == 1);
    } else {
      CHECK(rig.table->Get(later).status == "SENT");
      CHECK(rig.m().Value(ServiceStats::Gauge::kBlockedAggregates) == 0);
    }
  }
}

TEST_CASE(
    "per_aggregate: an event that another relay drove DEAD mid-pass still blocks its aggregate",
    "[relay][ordering]") {
  ServiceConfig c = TestConfig(Ordering::kPerAggregate);
  c.batch_size = 1;  // one row per round: the pass spans several rounds
  Rig rig(c);
  int64_t other = rig.table->Insert("order", 9, "E");
  int64_t first = rig.table->Insert("order", 1, "E");
  int64_t second = rig.table->Insert("order", 1, "E");
  rig.Step();  // the pass starts; order 9 goes, the cursor stops at `first`
  REQUIRE(rig.table->Get(other).status == "SENT");

  // Meanwhile another relay claims `first`, fails it for good: DEAD.
  FakeRow r = rig.table->Get(first);
  r.status = "DEAD";
  rig.table->Put(first, r);

  for (int i = 0; i < 3; ++i) rig.Step();
  CHECK(rig.table->Get(second).status == "NEW");
  for (const auto& m : rig.broker->acked()) CHECK(m.key != "1");
}

TEST_CASE(
    "a slow blocked-aggregates count runs at most a tenth of the time and the gauge keeps its "
    "last value between counts",
    "[relay][gauges]") {
  Rig rig(TestConfig(Ordering::kPerAggregate));
  int64_t dead = rig.table->Insert("order", 1, "E");
  FakeRow r = rig.table->Get(dead);
  r.status = "DEAD";
  rig.table->Put(dead, r);
  int64_t later = rig.table->Insert("order", 1, "E");
  rig.table->set_blocked_count_cost(1s);  // as with a hundred thousand DEAD rows

  REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
  CHECK(rig.table->blocked_counts() == 1);
  CHECK(rig.m().Value(ServiceStats::Gauge::kBlockedAggregates) == 1);

  // The held-back event is gone: the next count, 10 s after the first
  // started, sees it; the refreshes before then do not query.
  rig.table->Put(later, [&] {
    FakeRow sent = rig.table->Get(later);
    sent.status = "SENT";
    return sent;
  }());
  rig.clock->Advance(5s);
  REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
  CHECK(rig.table->blocked_counts() == 1);
  CHECK(rig.m().Value(ServiceStats::Gauge::kBlockedAggregates) == 1);
  rig.clock->Advance(4s);
  REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
  CHECK(rig.table->blocked_counts() == 2);
  CHECK(rig.m().Value(ServiceStats::Gauge::kBlockedAggregates) == 0);

  // Without DEAD rows nothing can be blocked: 0 at once, no count.
  r.status = "SENT";
  rig.table->Put(dead, r);
  REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
  CHECK(rig.table->blocked_counts() == 2);
  CHECK(rig.m().Value(ServiceStats::Gauge::kBlockedAggregates) == 0);
}

TEST_CASE("the table gauges report backlog and oldest age and DEAD rows", "[relay]") {
  Rig rig;
  rig.table->Insert("order", 1, "E");
  rig.clock->Advance(90s);
  rig.table->Insert("order", 2, "E");
  int64_t dead = rig.table->Insert("order", 3, "E");
  FakeRow r = rig.table->Get(dead);
  r.status = "DEAD";
  rig.table->Put(dead, r);
  REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
  CHECK(rig.m().Value(ServiceStats::Gauge::kBacklog) == 2);
  CHECK(rig.m().Value(ServiceStats::Gauge::kOldestUnsentAge) == Approx(90).margin(1));
  CHECK(rig.m().Value(ServiceStats::Gauge::kDead) == 1);
}

TEST_CASE("Stop settles the batches still in flight before it returns", "[relay]") {
  // Real threads, real time for the loops; the fake table's clock stands still.
  ServiceConfig c = TestConfig();
  c.batch_size = 10;
  c.poll_interval_ms = 10;
  auto table = std::make_shared<FakeTable>(std::make_shared<FakeClock>());
  for (int i = 0; i < 25; ++i) table->Insert("order", i, "E");
  auto broker = std::make_shared<testing::FakePublisher>();
  testing::FakeStats metrics;
  Relay relay(testing::FakeRelayOptions(c, testing::FakeStoreFactory(table), broker, DefaultClock(),
                                        &metrics));  // SystemClock

  broker->hold(true);
  relay.Start();
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (table->CountStatus("SENDING") == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  REQUIRE(table->CountStatus("SENDING") > 0);

  std::thread acks([&] {
    std::this_thread::sleep_for(100ms);
    broker->hold(false);
    broker->CompleteAll();
  });
  relay.Stop(5s);
  acks.join();
  CHECK(table->CountStatus("SENDING") == 0);
}

TEST_CASE("a failed retention pass is counted and does not make the service unready", "[relay]") {
  struct NoDeleteStore : testing::OutboxStoreWrapper {
    using OutboxStoreWrapper::OutboxStoreWrapper;
    Status DeleteSentBatch(int, int, int64_t*, int64_t*, bool*) override {
      return Status::Error("DELETE command denied to user 'relay'@'%' for table 't_outbox'");
    }
  };
  auto clock = std::make_shared<FakeClock>();
  auto table = std::make_shared<FakeTable>(clock);
  ServiceConfig c = TestConfig();
  c.retention.sent_days = 7;
  Rig rig(c, table, clock, [table] {
    return std::make_unique<NoDeleteStore>(std::make_unique<testing::FakeStore>(table));
  });
  table->Insert("order", 1, "E");
  rig.Step();
  REQUIRE(rig.relay->health.up());
  CHECK_FALSE(rig.relay->housekeeping.RunRetention().ok());
  CHECK(rig.relay->health.up());
  CHECK(rig.m().Value(ServiceStats::Gauge::kDatabaseUp) == 1);
  CHECK(rig.m().Value(ServiceStats::Counter::kRetentionFailures) == 1);
}

TEST_CASE("retention deletes old SENT rows and counts them", "[relay]") {
  ServiceConfig c = TestConfig();
  c.retention.sent_days = 1;
  c.retention.batch_rows = 2;
  c.retention.pause_ms = 0;
  Rig rig(c);
  rig.InsertOrders(5, "E");
  rig.Step();
  rig.clock->Advance(std::chrono::hours(25));
  int64_t fresh = rig.table->Insert("order", 9, "E");
  rig.Step();
  REQUIRE(rig.relay->housekeeping.RunRetention().ok());
  CHECK(rig.m().Value(ServiceStats::Counter::kRetentionDeleted) == 5);
  CHECK(rig.table->CountStatus("SENT") == 1);
  CHECK(rig.table->Get(fresh).status == "SENT");
}

TEST_CASE("the database probe used while the broker is down reports the database", "[relay]") {
  for (Ordering ordering : {Ordering::kNone, Ordering::kPerAggregate}) {
    Rig rig(TestConfig(ordering));
    rig.broker->set_healthy(false);
    rig.InsertOrders(1, "E");
    // The broker is down: the attempt is the probe alone, no claim.
    rig.relay->claim.ClaimAfter(WakeCause::kDeadline);
    CHECK(rig.m().Value(ServiceStats::Gauge::kDatabaseUp) == 1);
    CHECK(rig.m().Has(ServiceStats::Gauge::kLastPoll));
    CHECK(rig.table->CountStatus("NEW") == 1);
    rig.table->set_down(true);
    rig.clock->Advance(1s);
    rig.relay->claim.ClaimAfter(WakeCause::kDeadline);
    CHECK(rig.m().Value(ServiceStats::Gauge::kDatabaseUp) == 0);
    CHECK_FALSE(rig.relay->health.up());
  }
}

TEST_CASE(
    "events taken back from the producer's queue are released unattempted and logged with the "
    "budget their batch had left",
    "[relay]") {
  Rig rig;  // lease 30 s: the budget is 15 s from the claim
  rig.broker->hold(true);
  rig.broker->set_decide([](const Message&) {
    return PublishOutcome{PublishResult::kNotAttempted, FailureReason::kPurged, "taken back"};
  });
  auto settle_after = [&](std::chrono::milliseconds delay) {
    rig.InsertOrders(1, "E");
    REQUIRE(rig.relay->claim.ClaimOnce() != ClaimRound::kFailed);
    rig.clock->Advance(delay);
    REQUIRE(rig.broker->CompleteAll() == 1);
    return testing::CapturedLog("text", "r", [&] { rig.relay->settle.SettleOrGroup(0ms); });
  };
  // Taken back 1 s after the claim (another batch's budget ended, or an
  // outage): 14 s of its own were left.
  const std::string early = settle_after(1s);
  CHECK(early.find("events taken back from the producer's queue unsent") != std::string::npos);
  CHECK(early.find("count=1 reason=purged budget_left_ms=14000") != std::string::npos);
  CHECK(rig.table->CountStatus("NEW") == 1);
  CHECK(rig.table->Get(1).row.retry_count == 0);
  // Taken back after its own budget ended.
  FakeRow first = rig.table->Get(1);
  first.status = "SENT";
  rig.table->Put(1, first);
  const std::string late = settle_after(16s);
  CHECK(late.find("budget_left_ms=-1000") != std::string::npos);
}

}  // namespace
}  // namespace outbox
