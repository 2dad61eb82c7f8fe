// The claim loop's wait with a wake-up seam (src/common/wakeup_source.h): how long
// an idle loop waits with `wakeup: poll` and `wakeup: binlog`, the
// commit-race retry after an insert, and that a wake-up and Stop end the
// wait. A scripted WakeupSource stands in for the binlog stream; the same
// loop against MariaDB's binary log is tests/integration/relay_binlog_test.cc.
#include <catch2/catch.hpp>
#include <functional>
#include <thread>

#include "common/wakeup_source.h"
#include "relay/relay_rig.h"
#include "support/wait.h"

namespace outbox {
namespace {

using namespace std::chrono_literals;
using namespace testing;  // the fakes and WaitFor

// A stand-in for BinlogWakeupSource: a PollWakeupSource's waiting with a stream state the
// test sets.
class ScriptedWakeupSource : public WakeupSource {
 public:
  explicit ScriptedWakeupSource(ClockPtr clock) : poll_(std::move(clock)) {}
  WakeCause WaitUntil(Clock::TimePoint deadline) override {
    waits_.fetch_add(1);
    if (during_wait) {  // the test's thread: no other caller
      auto event = std::move(during_wait);
      during_wait = nullptr;
      return event();
    }
    return poll_.WaitUntil(deadline);
  }
  void Interrupt() override {
    interrupts_.fetch_add(1);
    poll_.Interrupt();
  }
  bool binlog_up() const override { return up_.load(); }
  std::string reason() const override { return up_.load() ? "up" : "down"; }
  void ExpectOwnChange() override { own_.fetch_add(1); }
  void BeginOwnChange(int) override { begun_.fetch_add(1); }
  void EndOwnChange(int, int commits) override {
    own_.fetch_add(commits);
    ended_.fetch_add(1);
  }

  std::atomic<bool> up_{true};
  std::atomic<int> waits_{0};
  std::atomic<int> interrupts_{0};
  std::atomic<int> own_{0};  // own commits announced, after or around the write
  std::atomic<int> begun_{0}, ended_{0};
  // Runs at the next WaitUntil, which then returns what it returns at once:
  // something that happened while the loop waited.
  std::function<WakeCause()> during_wait;

 private:
  PollWakeupSource poll_;
};

ServiceConfig BinlogConfig(Ordering ordering = Ordering::kNone) {
  ServiceConfig c;
  c.name = "orders";
  c.batch_size = 100;
  c.lease_ms = 30000;
  c.poll_interval_ms = 100;
  c.gauge_interval_ms = 5000;
  c.wakeup = WakeupMode::kBinlog;
  c.ordering = ordering;  // kNone: one head read per idle round
  return c;
}

// BinlogConfig() once for each ordering, a SECTION each (named in a failure).
ServiceConfig BinlogConfigEachOrdering() {
  ServiceConfig c = BinlogConfig();
  SECTION("ordering none") {}
  SECTION("ordering per_aggregate") { c.ordering = Ordering::kPerAggregate; }
  return c;
}

struct WakeRig {
  explicit WakeRig(ServiceConfig c, ClockPtr relay_clock = nullptr)
      : config(std::move(c)),
        clock(std::make_shared<FakeClock>()),
        table(std::make_shared<FakeTable>(clock)),
        broker(std::make_shared<FakePublisher>()) {
    ClockPtr used = relay_clock ? relay_clock : ClockPtr(clock);
    auto w = std::make_unique<ScriptedWakeupSource>(used);
    wakeup = w.get();
    RelayOptions o = FakeRelayOptions(config, FakeStoreFactory(table), broker, used, &metrics);
    o.seed = 42;
    o.wakeup = std::move(w);
    o.settle_group_window_for_testing = 0ms;  // stepped by hand: each batch settles at once
    relay = std::make_unique<RelayUnits>(std::move(o));
  }
  testing::FakeStats& m() { return metrics; }

  ServiceConfig config;
  std::shared_ptr<FakeClock> clock;
  std::shared_ptr<FakeTable> table;
  std::shared_ptr<FakePublisher> broker;
  testing::FakeStats metrics;
  ScriptedWakeupSource* wakeup = nullptr;  // owned by the relay
  std::unique_ptr<RelayUnits> relay;
};

// A relay on `stores` (a fault or counting fake) with the stream up.
std::unique_ptr<RelayUnits> RelayOn(const ServiceConfig& c, std::shared_ptr<FakeClock> clock,
                                    StoreFactory stores, testing::FakeStats* metrics) {
  RelayOptions o =
      FakeRelayOptions(c, std::move(stores), std::make_shared<FakePublisher>(), clock, metrics);
  o.wakeup = std::make_unique<ScriptedWakeupSource>(clock);  // the stream is up
  o.settle_group_window_for_testing = 0ms;                   // stepped by hand
  return std::make_unique<RelayUnits>(std::move(o));
}

// The idle wait the scheduler gives the loop now, with what the loop shows
// it (ClaimLoop::View: the stream, the rows deferred, the gauges' last read).
Clock::Duration IdleWait(RelayUnits& relay) {
  ClaimScheduler::View v;
  v.stream_up = relay.wakeup->binlog_up();
  v.deferred = relay.planner.deferred_count();
  if (relay.config.wakeup == WakeupMode::kBinlog) v.unsent = relay.housekeeper.Unsent();
  return relay.scheduler.IdleWaitForTesting(v);
}

TEST_CASE("with wakeup poll the idle wait is the poll backoff as before", "[relay][wakeup]") {
  ServiceConfig c = BinlogConfig();
  c.wakeup = WakeupMode::kPoll;
  WakeRig rig(c);
  rig.wakeup->up_ = false;  // as a PollWakeupSource
  rig.table->Insert("order", 1, "OrderCreated");
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);  // claimed: look again sooner
  CHECK(IdleWait(*rig.relay) == 50ms);                       // the poll backoff, halved
  // Rounds that find nothing double the wait up to poll_interval_ms.
  for (auto expected : {100ms, 100ms}) {
    CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);
    CHECK(IdleWait(*rig.relay) == expected);
  }
  // The gauges change nothing with `wakeup: poll`.
  REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
  CHECK(IdleWait(*rig.relay) == 100ms);
}

TEST_CASE("with wakeup binlog an idle empty table waits for the stream up to the safety poll",
          "[relay][wakeup]") {
  WakeRig rig(BinlogConfig());
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);
  REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
  CHECK(IdleWait(*rig.relay) == 30s);
  SECTION("and polls every poll_interval_ms while the stream is down") {
    rig.wakeup->up_ = false;
    CHECK(IdleWait(*rig.relay) == 100ms);
  }
}

TEST_CASE("with wakeup binlog a row backing off wakes the loop when it comes due",
          "[relay][wakeup]") {
  WakeRig rig(BinlogConfig());
  // A row backing off: no commit will make it due, a timer must.
  int64_t id = rig.table->Insert("order", 1, "OrderCreated");
  auto row = rig.table->Get(id);
  const int64_t now_ms = static_cast<int64_t>(rig.clock->UnixNow() * 1000);
  row.next_retry_at_ms = now_ms + 3000;
  rig.table->Put(id, row);
  REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
  REQUIRE(rig.m().Value(ServiceStats::Gauge::kBacklog) == 1);
  // Gauges newer than the last claim: claim first.
  CHECK(IdleWait(*rig.relay) == 100ms);
  rig.clock->Advance(1ms);
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);
  // The claim after the read found nothing: sleep until the row is due.
  CHECK(IdleWait(*rig.relay) == 2999ms);
  SECTION("a row due later than a gauge interval: the loop looks again after one") {
    row.next_retry_at_ms = now_ms + 60000;
    rig.table->Put(id, row);
    REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
    rig.clock->Advance(1ms);
    CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);
    CHECK(IdleWait(*rig.relay) == 5000ms);  // gauge_interval_ms
  }
  SECTION("once it came due the loop claims it") {
    rig.clock->Advance(2999ms);
    CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);  // a partial batch
    CHECK(rig.relay->queue->inflight() == 1);
  }
  SECTION("once it is gone (claimed elsewhere and sent) the loop waits for the stream") {
    row.status = "SENT";
    rig.table->Put(id, row);
    REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
    CHECK(IdleWait(*rig.relay) == 30s);
  }
}

TEST_CASE(
    "with wakeup binlog rows due but held back behind a DEAD one cost one claim per gauge "
    "interval",
    "[relay][wakeup]") {
  ServiceConfig c = BinlogConfig(Ordering::kPerAggregate);
  c.dead_policy = DeadPolicy::kBlock;
  WakeRig rig(c);
  int64_t dead = rig.table->Insert("order", 1, "OrderCreated");
  auto row = rig.table->Get(dead);
  row.status = "DEAD";
  rig.table->Put(dead, row);
  rig.table->Insert("order", 1, "OrderPaid");  // due, but blocked
  REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
  rig.clock->Advance(1ms);
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);
  CHECK(rig.relay->queue->inflight() == 0);
  // Only a commit (the DEAD row replayed) can free it, and the stream wakes
  // the loop for that: no polling meanwhile.
  CHECK(IdleWait(*rig.relay) == 5000ms);
}

TEST_CASE(
    "with wakeup binlog a round that claimed waits for the stream and with the stream down looks "
    "again at once",
    "[relay][wakeup]") {
  WakeRig rig(BinlogConfig());
  REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());  // as the housekeeping loop does at start
  rig.clock->Advance(1ms);
  rig.table->Insert("order", 1, "OrderCreated");
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);  // a partial batch: claimed, idle
  // Every insert wakes the loop: no look after a claim.
  CHECK(IdleWait(*rig.relay) == 30s);
  // The stream down: a busy table has more rows already, look again as
  // polling does (the poll backoff, halved).
  rig.wakeup->up_ = false;
  CHECK(IdleWait(*rig.relay) == 50ms);
  rig.wakeup->up_ = true;
  rig.clock->Advance(1ms);
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);
  CHECK(rig.relay->queue->inflight() == 1);
  // Nothing more: its settle is a commit the stream announces, no polling
  // meanwhile.
  CHECK(IdleWait(*rig.relay) == 30s);
  REQUIRE(rig.relay->settle.SettleOrGroup(1s).count == 1);
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);
  REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
  CHECK(IdleWait(*rig.relay) == 30s);
}

TEST_CASE("with wakeup binlog a retry its own settle wrote wakes the loop when it comes due",
          "[relay][wakeup]") {
  ServiceConfig c = BinlogConfig();
  c.retry.initial_backoff_ms = 2000;
  c.retry.max_backoff_ms = 2000;  // no jitter below 1 s: the backoff is 1 to 2 s
  WakeRig rig(c);
  rig.broker->set_decide([](const Message&) {
    return PublishOutcome{PublishResult::kRetryable, FailureReason::kBrokerDown, "broker down"};
  });
  rig.table->Insert("order", 1, "OrderCreated");
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);
  // The gauges see the row SENDING under a 30 s lease: they alone would let
  // the loop sleep a gauge interval.
  REQUIRE(rig.relay->housekeeping.RefreshGauges().ok());
  rig.clock->Advance(1ms);
  REQUIRE(rig.relay->settle.SettleOrGroup(1s).count == 1);  // NEW again, due in 1 to 2 s
  CHECK(rig.wakeup->WaitUntil(rig.clock->Now()) == WakeCause::kChange);  // Interrupt: look again
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);
  const Clock::Duration wait = IdleWait(*rig.relay);
  // The backoff plus a second for DATETIME's whole seconds.
  CHECK(wait >= 2000ms);
  CHECK(wait <= 3000ms);
  rig.broker->set_decide(nullptr);
  rig.clock->Advance(std::chrono::duration_cast<std::chrono::microseconds>(wait));
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);
  CHECK(rig.relay->queue->inflight() == 1);  // claimed again when due
  // Once a claim ran after it, the timer is spent: what is left is the
  // gauges' (they still see a row: a look after a gauge interval).
  CHECK(IdleWait(*rig.relay) == 5000ms);
}

// A store whose new row becomes visible only at its `shows_at`th head read
// (counted in *head_reads), as a row the binary log announced before its
// InnoDB commit was visible.
class LateRowStore : public testing::OutboxStoreWrapper {
 public:
  LateRowStore(std::shared_ptr<FakeTable> table, std::shared_ptr<int> head_reads, int shows_at)
      : OutboxStoreWrapper(table),
        table_(std::move(table)),
        head_reads_(std::move(head_reads)),
        shows_at_(shows_at) {}
  Status ReadHead(const HeadQuery& q, HeadRead* out) override {
    if (++*head_reads_ == shows_at_) table_->Insert("order", 1, "OrderCreated");
    return OutboxStoreWrapper::ReadHead(q, out);
  }

 private:
  std::shared_ptr<FakeTable> table_;
  std::shared_ptr<int> head_reads_;
  const int shows_at_;
};

TEST_CASE("an acknowledgement wakes the loop when rows wait behind it", "[relay][wakeup]") {
  ServiceConfig c = BinlogConfig();
  c.wakeup = GENERATE(WakeupMode::kBinlog, WakeupMode::kPoll);
  c.ordering = Ordering::kPerAggregate;
  c.batch_size = 1;  // the aggregate's second event waits for the first
  WakeRig rig(c);
  rig.broker->hold(true);
  rig.table->Insert("order", 1, "OrderCreated");
  SECTION("rows deferred behind the acknowledged one: woken at once, claimed before the settle") {
    rig.table->Insert("order", 1, "OrderPaid");
    rig.table->Insert("order", 2, "OrderCreated");
    rig.relay->claim.ClaimOnce();  // order 1's first event
    rig.relay->claim.ClaimOnce();  // order 2's; order 1's second waits behind its first
    REQUIRE(rig.relay->queue->inflight() == 2);
    CHECK(rig.wakeup->WaitUntil(rig.clock->Now()) == WakeCause::kDeadline);
    REQUIRE(rig.broker->CompleteAll() == 2);
    CHECK(rig.wakeup->WaitUntil(rig.clock->Now()) == WakeCause::kChange);
    rig.relay->claim.ClaimOnce();
    CHECK(rig.relay->queue->inflight() == 3);      // nothing settled yet
    CHECK(rig.table->Get(1).status == "SENDING");  // its settle has not run
    CHECK(rig.table->Get(2).status == "SENDING");  // order 1's second event
    REQUIRE(rig.broker->CompleteAll() == 1);
    CHECK(rig.relay->settle.SettleOrGroup(1s).count == 3);
    CHECK(rig.table->Get(1).status == "SENT");
    CHECK(rig.table->Get(2).status == "SENT");
    REQUIRE(rig.broker->acked().size() == 3);
    CHECK(rig.broker->acked()[0].key == rig.broker->acked()[2].key);  // order 1, in order
  }
  SECTION("nothing waits behind it: the acknowledgement leaves the loop asleep") {
    rig.relay->claim.ClaimOnce();
    REQUIRE(rig.relay->queue->inflight() == 1);
    REQUIRE(rig.broker->CompleteAll() == 1);
    CHECK(rig.wakeup->WaitUntil(rig.clock->Now()) == WakeCause::kDeadline);
    REQUIRE(rig.relay->settle.SettleOrGroup(1s).count == 1);
    CHECK(rig.wakeup->WaitUntil(rig.clock->Now()) == WakeCause::kDeadline);
  }
}

TEST_CASE("a claim after an insert wake-up retries until the row is visible", "[relay][wakeup]") {
  ServiceConfig c = BinlogConfig();
  auto clock = std::make_shared<FakeClock>();
  clock->set_auto_advance(true);  // the retry pauses pass at once
  auto table = std::make_shared<FakeTable>(clock);
  auto head_reads = std::make_shared<int>(0);
  testing::FakeStats metrics;
  auto owned = RelayOn(
      c, clock,
      [table, head_reads] { return std::make_unique<LateRowStore>(table, head_reads, 3); },
      &metrics);
  RelayUnits& relay = *owned;
  CHECK(relay.claim.ClaimOnce() == ClaimRound::kIdle);  // the first claim reclaims: no head read
  *head_reads = 0;
  SECTION("an insert gets the retry") {
    relay.claim.ClaimAfter(WakeCause::kInsert);
    CHECK(*head_reads == 3);
    CHECK(relay.queue->inflight() == 1);
  }
  SECTION("an insert whose row stays invisible keeps the poll backoff instead of the safety poll") {
    *head_reads = -100;  // the row shows after the retries
    relay.claim.ClaimAfter(WakeCause::kInsert);
    CHECK(*head_reads == -100 + 1 + static_cast<int>(kCommitRaceRetry.size()));  // first + retries
    CHECK(relay.queue->inflight() == 0);
    // The backoff starts again where the retry stopped (16 ms, doubled).
    CHECK(IdleWait(relay) == 32ms);
  }
  SECTION("an update-only commit gets one claim") {
    relay.claim.ClaimAfter(WakeCause::kChange);
    CHECK(*head_reads == 1);
    CHECK(relay.queue->inflight() == 0);
  }
}

TEST_CASE("an insert committed during a commit-race pause is claimed without waiting it out",
          "[relay][wakeup]") {
  WakeRig rig(BinlogConfigEachOrdering());
  rig.clock->set_auto_advance(true);  // a pause waited out moves the clock
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);
  // The wake-up's own row is not visible yet; another insert commits during
  // the first pause.
  rig.wakeup->during_wait = [&] {
    rig.table->Insert("order", 1, "OrderCreated");
    return WakeCause::kInsert;
  };
  const auto start = rig.clock->Now();
  rig.relay->claim.ClaimAfter(WakeCause::kInsert);
  CHECK(rig.relay->queue->inflight() == 1);
  CHECK(rig.clock->Now() == start);
}

TEST_CASE("an acknowledgement that frees a deferred row ends a commit-race pause",
          "[relay][wakeup]") {
  WakeRig rig(BinlogConfig(Ordering::kPerAggregate));
  rig.clock->set_auto_advance(true);  // a pause waited out moves the clock
  rig.broker->hold(true);
  rig.table->Insert("order", 1, "OrderCreated");
  rig.relay->claim.ClaimAfter(WakeCause::kInsert);
  while (rig.relay->claim.ClaimOnce() == ClaimRound::kMore) {
  }
  REQUIRE(rig.relay->queue->inflight() == 1);
  // The next event of the aggregate: its wake-up's pass defers it behind the
  // first, in flight, claims nothing and ends.
  rig.table->Insert("order", 1, "OrderPaid");
  rig.wakeup->during_wait = [&] {
    rig.broker->CompleteAll();  // the first is acknowledged: the second is free
    return WakeCause::kChange;
  };
  const auto start = rig.clock->Now();
  rig.relay->claim.ClaimAfter(WakeCause::kInsert);
  CHECK(rig.relay->queue->inflight() == 2);
  CHECK(rig.wakeup->during_wait == nullptr);  // it paused
  CHECK(rig.clock->Now() == start);           // and did not wait the pause out
}

TEST_CASE("with per_aggregate the commit-race retry claims the row of a pass that found it",
          "[relay][wakeup]") {
  ServiceConfig c = BinlogConfig(Ordering::kPerAggregate);
  auto clock = std::make_shared<FakeClock>();
  clock->set_auto_advance(true);
  auto table = std::make_shared<FakeTable>(clock);
  auto passes = std::make_shared<int>(0);
  testing::FakeStats metrics;
  auto owned = RelayOn(
      c, clock,
      [table, passes] {
        // per_aggregate: the row shows at the second head read.
        return std::make_unique<LateRowStore>(table, passes, 2);
      },
      &metrics);
  RelayUnits& relay = *owned;
  // The first pass finds nothing; the retry's pass starts with the row (a
  // round that only starts a pass claims nothing) and must go on to claim it.
  relay.claim.ClaimAfter(WakeCause::kInsert);
  CHECK(*passes >= 2);
  CHECK(relay.queue->inflight() == 1);
}

// Counts the head reads and the pass snapshots of every store it
// makes.
class CountingStore : public testing::OutboxStoreWrapper {
 public:
  struct Counts {
    int head_reads = 0, snapshots = 0;
  };
  CountingStore(std::shared_ptr<OutboxStore> target, std::shared_ptr<Counts> counts)
      : OutboxStoreWrapper(std::move(target)), counts_(std::move(counts)) {}
  Status ReadHead(const HeadQuery& q, HeadRead* out) override {
    ++counts_->head_reads;
    return OutboxStoreWrapper::ReadHead(q, out);
  }
  Status BeginSnapshot() override {
    ++counts_->snapshots;
    return OutboxStoreWrapper::BeginSnapshot();
  }

 private:
  std::shared_ptr<Counts> counts_;
};

// A relay over CountingStores on a fake table, with the stream up.
struct CountedRig {
  explicit CountedRig(const ServiceConfig& c)
      : relay(RelayOn(
            c, clock,
            [t = table, n = counts] {
              return std::make_unique<CountingStore>(testing::FakeStoreFactory(t)(), n);
            },
            &metrics)) {}

  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<FakeTable> table = std::make_shared<FakeTable>(clock);
  std::shared_ptr<CountingStore::Counts> counts = std::make_shared<CountingStore::Counts>();
  testing::FakeStats metrics;
  std::unique_ptr<RelayUnits> relay;
};

TEST_CASE("an insert wake-up that claimed other rows looks once more after the commit race",
          "[relay][wakeup]") {
  CountedRig rig(BinlogConfigEachOrdering());
  RelayUnits& relay = *rig.relay;
  FakeClock* clock = rig.clock.get();
  FakeTable* table = rig.table.get();
  CountingStore::Counts* counts = rig.counts.get();
  REQUIRE(relay.housekeeping.RefreshGauges().ok());  // an empty table: the stream's wait is 30 s
  table->Insert("order", 1, "OrderCreated");
  // The wake-up of a second insert claims the first; the second is not
  // visible yet, so the rounds after it find nothing.
  relay.claim.ClaimAfter(WakeCause::kInsert);
  REQUIRE(relay.queue->inflight() == 1);
  while (relay.claim.ClaimOnce() == ClaimRound::kMore) {
  }
  // One more round once the wake-up's row must show, not the stream's 30 s.
  CHECK(IdleWait(relay) == CommitRaceWindow());
  clock->Advance(CommitRaceWindow() - 1ms);
  CHECK(IdleWait(relay) == 1ms);
  clock->Advance(1ms);
  CHECK(IdleWait(relay) == 0ms);
  // That round is one head read (no pass: nothing is due), then the stream.
  const CountingStore::Counts before = *counts;
  CHECK(relay.claim.ClaimAfter(WakeCause::kDeadline) == ClaimRound::kIdle);
  CHECK(counts->head_reads == before.head_reads + 1);
  CHECK(counts->snapshots == before.snapshots);
  CHECK(IdleWait(relay) == 30s);
}

TEST_CASE(
    "with per_aggregate a wake-up by a commit that inserted nothing reads the head before a pass",
    "[relay][wakeup]") {
  CountedRig rig(BinlogConfig(Ordering::kPerAggregate));
  RelayUnits& relay = *rig.relay;
  FakeTable* table = rig.table.get();
  CountingStore::Counts* counts = rig.counts.get();
  table->Insert("order", 1, "OrderCreated");
  relay.claim.ClaimAfter(WakeCause::kInsert);
  while (relay.claim.ClaimOnce() == ClaimRound::kMore) {
  }
  REQUIRE(relay.queue->inflight() == 1);
  // The wake-up of the relay's own claim: after a pass that claimed, a pass
  // would start directly (a snapshot and its reads); the head read alone says
  // there is nothing.
  const CountingStore::Counts before = *counts;
  CHECK(relay.claim.ClaimAfter(WakeCause::kChange) == ClaimRound::kIdle);
  CHECK(counts->head_reads == before.head_reads + 1);
  CHECK(counts->snapshots == before.snapshots);
  SECTION("a row that a commit made claimable is still claimed") {
    table->Insert("order", 2, "OrderCreated");
    relay.claim.ClaimAfter(WakeCause::kChange);
    while (relay.claim.ClaimOnce() == ClaimRound::kMore) {
    }
    CHECK(relay.queue->inflight() == 2);
  }
}

TEST_CASE("a wake-up by another relay's settle that does not show yet is looked at again",
          "[relay][wakeup]") {
  WakeRig rig(BinlogConfig(Ordering::kPerAggregate));
  RelayUnits& relay = *rig.relay;
  FakeTable* table = rig.table.get();
  const int64_t first = table->Insert("order", 1, "OrderCreated");
  const int64_t second = table->Insert("order", 1, "OrderPaid");
  // Another relay holds the first event: SENDING under its live lease.
  FakeRow held = table->Get(first);
  held.status = "SENDING";
  held.next_retry_at_ms = rig.clock->UnixMs() + 30000;
  table->Put(first, held);
  REQUIRE(relay.housekeeping.RefreshGauges().ok());
  rig.clock->Advance(1ms);
  // The wake-up by a commit that updated rows, and the first event still
  // held: either the other relay's claim, or its settle not showing yet.
  CHECK(relay.claim.ClaimAfter(WakeCause::kChange) == ClaimRound::kIdle);
  CHECK(relay.queue->inflight() == 0);
  // One more look once the settle must show, not at the next gauges' read.
  CHECK(IdleWait(relay) == CommitRaceWindow());
  SECTION("the settle showed: the look claims the next event") {
    held.status = "SENT";
    table->Put(first, held);
    rig.clock->Advance(CommitRaceWindow());
    CHECK(IdleWait(relay) == 0ms);
    relay.claim.ClaimAfter(WakeCause::kDeadline);
    while (relay.claim.ClaimOnce() == ClaimRound::kMore) {
    }
    CHECK(relay.queue->inflight() == 1);
    CHECK(table->Get(second).status == "SENDING");
  }
  SECTION("the other relay still holds it: no further look until the next commit") {
    rig.clock->Advance(CommitRaceWindow());
    while (relay.claim.ClaimAfter(WakeCause::kDeadline) == ClaimRound::kMore) {
    }
    CHECK(relay.queue->inflight() == 0);
    CHECK(IdleWait(relay) == 5000ms);  // gauge_interval_ms
  }
  SECTION("once nothing is held a later wake-up by an update still gets the look") {
    held.status = "SENT";
    table->Put(first, held);
    FakeRow next = table->Get(second);
    next.status = "SENT";  // the other relay took and sent it meanwhile
    table->Put(second, next);
    rig.clock->Advance(CommitRaceWindow());
    CHECK(relay.claim.ClaimAfter(WakeCause::kDeadline) ==
          ClaimRound::kIdle);  // the look: a head read
    rig.clock->Advance(1ms);
    CHECK(relay.claim.ClaimAfter(WakeCause::kChange) == ClaimRound::kIdle);
    CHECK(IdleWait(relay) == CommitRaceWindow());  // it may be a replay not showing yet
  }
  SECTION("rows held behind a DEAD event: a wake-up by an update still gets the look") {
    held.status = "DEAD";
    table->Put(first, held);
    rig.clock->Advance(CommitRaceWindow());
    while (relay.claim.ClaimAfter(WakeCause::kDeadline) == ClaimRound::kMore) {
    }
    REQUIRE(relay.housekeeping.RefreshGauges().ok());
    rig.clock->Advance(1ms);
    CHECK(relay.claim.ClaimAfter(WakeCause::kChange) == ClaimRound::kIdle);
    CHECK(IdleWait(relay) == CommitRaceWindow());  // the DEAD event's replay may not show yet
  }
}

TEST_CASE("a DEAD row's replay that does not show at its wake-up is claimed after the commit race",
          "[relay][wakeup]") {
  ServiceConfig c = BinlogConfig();
  c.ordering = GENERATE(Ordering::kNone, Ordering::kPerAggregate);
  WakeRig rig(c);
  RelayUnits& relay = *rig.relay;
  FakeTable* table = rig.table.get();
  const int64_t id = table->Insert("order", 1, "OrderCreated");
  FakeRow row = table->Get(id);
  row.status = "DEAD";
  table->Put(id, row);
  REQUIRE(relay.housekeeping.RefreshGauges().ok());  // nothing unsent: the stream's 30 s
  rig.clock->Advance(1ms);
  // An operator's replay: its wake-up comes before its commit shows.
  CHECK(relay.claim.ClaimAfter(WakeCause::kChange) == ClaimRound::kIdle);
  CHECK(relay.queue->inflight() == 0);
  // One more look once the commit must show, not at the safety poll.
  CHECK(IdleWait(relay) == CommitRaceWindow());
  row.status = "NEW";
  row.next_retry_at_ms = rig.clock->UnixMs();
  table->Put(id, row);
  rig.clock->Advance(CommitRaceWindow());
  CHECK(IdleWait(relay) == 0ms);
  relay.claim.ClaimAfter(WakeCause::kDeadline);
  CHECK(relay.queue->inflight() == 1);
  CHECK(table->Get(id).status == "SENDING");
}

// Records the (fake) time of every claim attempt: its first call to the
// store (a connect, a head read or a claim) at a new time.
class AttemptTimesStore : public OutboxStoreWrapper {
 public:
  AttemptTimesStore(std::shared_ptr<FakeTable> table, std::shared_ptr<FakeClock> clock,
                    std::shared_ptr<std::vector<Clock::TimePoint>> times)
      : OutboxStoreWrapper(std::make_shared<FakeStore>(std::move(table))),
        clock_(std::move(clock)),
        times_(std::move(times)) {}
  Status Connect() override {
    Note();
    return OutboxStoreWrapper::Connect();
  }
  Status ReadHead(const HeadQuery& q, HeadRead* out) override {
    Note();
    return OutboxStoreWrapper::ReadHead(q, out);
  }
  Status ClaimDue(int limit, int64_t lease_ms, bool include_expired, ClaimedBatch* out,
                  const ClaimedFn& before_commit) override {
    Note();
    return OutboxStoreWrapper::ClaimDue(limit, lease_ms, include_expired, out, before_commit);
  }

 private:
  void Note() {
    if (times_->empty() || times_->back() != clock_->Now()) times_->push_back(clock_->Now());
  }
  std::shared_ptr<FakeClock> clock_;
  std::shared_ptr<std::vector<Clock::TimePoint>> times_;
};

TEST_CASE("a claim round that fails waits 200 ms before the next and doubles the wait up to 5 s",
          "[relay][wakeup]") {
  ServiceConfig c = BinlogConfig();
  auto clock = std::make_shared<FakeClock>();
  clock->set_auto_advance(true);  // the loop's sleeps pass at once
  auto table = std::make_shared<FakeTable>(clock);
  table->set_down(true);
  auto times = std::make_shared<std::vector<Clock::TimePoint>>();
  testing::FakeStats metrics;
  auto owned = RelayOn(
      c, clock,
      [table, clock, times] { return std::make_unique<AttemptTimesStore>(table, clock, times); },
      &metrics);
  // The loop on its thread: each failed round is followed by a sleep, which
  // moves the fake time. A loop that claimed again at once after a failure
  // would never move it (and would spin on the database).
  RelayUnits& relay = *owned;
  std::thread loop([&] { relay.claim.Run(); });
  REQUIRE(WaitFor([&] { return clock->Now() >= Clock::TimePoint(30s); }, 10s, 1ms));
  relay.claim.Stop();
  loop.join();
  std::vector<std::chrono::milliseconds> gaps;
  for (size_t i = 1; i < times->size() && gaps.size() < 8; ++i)
    gaps.push_back(
        std::chrono::duration_cast<std::chrono::milliseconds>((*times)[i] - (*times)[i - 1]));
  using ms = std::chrono::milliseconds;
  CHECK(gaps == std::vector<ms>{200ms, 400ms, 800ms, 1600ms, 3200ms, 5000ms, 5000ms, 5000ms});
}

TEST_CASE(
    "with wakeup binlog each own commit that changed rows is announced to the wake-up "
    "source and a settle that released rows wakes the loop",
    "[relay][wakeup]") {
  WakeRig rig(BinlogConfig());
  RelayUnits& r = *rig.relay;
  auto settle_all = [&] { return r.settle.SettleOrGroup(0ms).count; };
  // A claim that locked nothing committed nothing.
  CHECK(r.claim.ClaimOnce() == ClaimRound::kIdle);
  CHECK(rig.wakeup->own_ == 0);
  // A claim's commit and its settle's (SENT): two, and no wake-up.
  rig.table->Insert("order", 1, "OrderCreated");
  CHECK(r.claim.ClaimOnce() == ClaimRound::kIdle);
  CHECK(rig.wakeup->own_ == 1);
  CHECK(settle_all() == 1);
  CHECK(rig.wakeup->own_ == 2);
  CHECK(rig.wakeup->interrupts_ == 0);
  // Released (not attempted): claimable at once, which no stream wake-up
  // announces now. The settle wakes the loop itself.
  rig.broker->set_decide([](const Message&) {
    return PublishOutcome{PublishResult::kNotAttempted, FailureReason::kQueueFull, "full"};
  });
  const int64_t id = rig.table->Insert("order", 2, "OrderCreated");
  CHECK(r.claim.ClaimOnce() == ClaimRound::kIdle);
  CHECK(settle_all() == 1);
  CHECK(rig.table->Get(id).status == "NEW");
  CHECK(rig.wakeup->own_ == 4);
  CHECK(rig.wakeup->interrupts_ == 1);
  // A settle whose rows were no longer its own (0 rows changed): nothing.
  rig.broker->set_decide(nullptr);
  CHECK(r.claim.ClaimOnce() == ClaimRound::kIdle);
  CHECK(rig.wakeup->own_ == 5);
  FakeRow taken = rig.table->Get(id);
  taken.next_retry_at_ms += 1;  // another relay's lease now
  rig.table->Put(id, taken);
  CHECK(settle_all() == 1);
  CHECK(rig.wakeup->own_ == 5);
  CHECK(rig.wakeup->interrupts_ == 1);
  // Each settle's commits were expected before it wrote.
  CHECK(rig.wakeup->begun_ == 3);
  CHECK(rig.wakeup->ended_ == 3);
}

TEST_CASE("with wakeup binlog retention's deletes are announced as the relay's own commits",
          "[relay][wakeup]") {
  ServiceConfig c = BinlogConfig();
  c.retention.sent_days = 1;
  c.retention.batch_rows = 2;
  c.retention.pause_ms = 0;
  WakeRig rig(c);
  RelayUnits& r = *rig.relay;
  for (int i = 1; i <= 3; ++i) rig.table->Insert("order", i, "OrderCreated");
  CHECK(r.claim.ClaimOnce() == ClaimRound::kIdle);
  r.settle.SettleOrGroup(0ms);
  REQUIRE(rig.table->CountStatus("SENT") == 3);
  const int own = rig.wakeup->own_, begun = rig.wakeup->begun_, ended = rig.wakeup->ended_;
  rig.clock->Advance(std::chrono::hours(25));
  REQUIRE(r.housekeeping.RunRetention().ok());
  CHECK(rig.table->CountStatus("SENT") == 0);
  // Batches of 2 rows: two deleted rows, each announced before it wrote.
  CHECK(rig.wakeup->own_ - own == 2);
  CHECK(rig.wakeup->begun_ - begun >= 2);
  CHECK(rig.wakeup->ended_ - ended == rig.wakeup->begun_ - begun);
  CHECK(rig.wakeup->interrupts_ == 0);
}

TEST_CASE("with wakeup poll a settle that released rows leaves them to the next poll",
          "[relay][wakeup]") {
  ServiceConfig c = BinlogConfig();
  c.wakeup = WakeupMode::kPoll;
  WakeRig rig(c);
  rig.broker->set_decide([](const Message&) {
    return PublishOutcome{PublishResult::kNotAttempted, FailureReason::kQueueFull, "full"};
  });
  rig.table->Insert("order", 1, "OrderCreated");
  CHECK(rig.relay->claim.ClaimOnce() == ClaimRound::kIdle);
  CHECK(rig.relay->settle.SettleOrGroup(0ms).count == 1);
  CHECK(rig.wakeup->interrupts_ == 0);
}

TEST_CASE("a wake-up ends the idle wait and Stop interrupts it", "[relay][wakeup]") {
  // Real time: the loop runs on its thread; the safety poll is an hour away.
  ServiceConfig c = BinlogConfig();
  c.poll_interval_ms = 3'600'000;
  WakeRig rig(c, DefaultClock());
  std::thread loop([&] { rig.relay->claim.Run(); });
  REQUIRE(WaitFor([&] { return rig.wakeup->waits_.load() >= 1; }, 10s, 1ms));
  CHECK(rig.m().Value(ServiceStats::Gauge::kWakeupBinlogUp) == 1);
  rig.table->Insert("order", 1, "OrderCreated");
  rig.wakeup->Interrupt();  // what the stream does on a commit
  CHECK(WaitFor([&] { return rig.broker->acked().size() == 1; }, 10s, 1ms));
  const auto t0 = std::chrono::steady_clock::now();
  rig.relay->claim.Stop();
  loop.join();
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
}

}  // namespace
}  // namespace outbox
