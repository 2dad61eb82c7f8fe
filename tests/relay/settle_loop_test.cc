// The settle thread's loop (src/relay/settle_loop.h) on a clock that never
// moves: a wait for the clock (the backoff after a failed settle) would last
// for ever, so whatever settles did not wait for it.
#include "relay/settle_loop.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "fakes/fake_clock.h"
#include "fakes/fake_publisher.h"
#include "fakes/fake_stats.h"
#include "fakes/fake_store.h"
#include "relay/relay_units.h"
#include "support/wait.h"

namespace outbox {
namespace {

using namespace std::chrono_literals;
using namespace testing;  // the fakes and WaitFor

ServiceConfig Config() {
  ServiceConfig c;
  c.name = "orders";
  c.batch_size = 1;
  c.lease_ms = 30000;
  c.ordering = Ordering::kNone;
  return c;
}

// A service's units on a frozen FakeClock whose settles fail `failures`
// times first, with its settle loop running on a thread.
struct SettleRig {
  // `group_window`: the SENT group's (0: each batch settles alone, at once).
  explicit SettleRig(int failures = 0, std::chrono::milliseconds group_window = 0ms)
      : clock(std::make_shared<FakeClock>()),
        table(std::make_shared<FakeTable>(clock)),
        fail(std::make_shared<std::atomic<int>>(failures)) {
    RelayOptions o;
    o.config = Config();
    o.store_factory = [this]() -> OutboxStorePtr {
      return std::make_unique<FailingSettleStore>(std::make_unique<FakeStore>(table), fail);
    };
    o.publisher = publisher;
    o.metrics = &metrics;
    o.clock = clock;
    o.seed = 7;
    o.settle_group_window_for_testing = group_window;
    units = std::make_unique<RelayUnits>(std::move(o));
    thread = std::thread([this] { units->settle.Run(); });
  }
  ~SettleRig() {
    units->queue->Halt();
    thread.join();
  }
  // One event claimed and published; true once its batch has settled.
  bool ClaimOneAndSettle(std::chrono::milliseconds within) {
    table->Insert("order", ++aggregate, "OrderCreated");
    REQUIRE(units->claim.ClaimOnce() != ClaimRound::kFailed);
    return WaitFor([&] { return units->queue->inflight() == 0; }, within, 1ms);
  }

  std::shared_ptr<FakeClock> clock;
  std::shared_ptr<FakeTable> table;
  std::shared_ptr<std::atomic<int>> fail;
  std::shared_ptr<FakePublisher> publisher = std::make_shared<FakePublisher>();
  FakeStats metrics;
  std::unique_ptr<RelayUnits> units;
  std::thread thread;
  int64_t aggregate = 0;
};

TEST_CASE("the settle loop waits only after a failed settle: batches admitted at any moment settle",
          "[relay][settle]") {
  // Claims as fast as the in-flight window allows (one row a batch), so that
  // batches are admitted at every phase of the settle loop, also between a
  // pass that found nothing admitted and the next. A loop that asked the
  // queue again there would take a batch admitted in between for a failed
  // settle and sleep the backoff, holding it and the claims waiting for room
  // behind it (the 100 ms tail of the binlog latency at 1,000 events/s). On
  // this clock that sleep would never end.
  SettleRig rig;
  constexpr int kEvents = 3000;
  for (int i = 0; i < kEvents; ++i) rig.table->Insert("order", i + 1, "OrderCreated");
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  bool stalled = false;
  while (!stalled && rig.table->CountStatus("SENT") < kEvents &&
         std::chrono::steady_clock::now() < give_up) {
    const ClaimRound r = rig.units->claim.ClaimOnce();
    REQUIRE(r != ClaimRound::kFailed);
    // A full window must empty without the clock moving.
    if (r == ClaimRound::kBusy)
      stalled = !WaitFor([&] { return rig.units->queue->inflight() < 4; }, 2s, 0ms);
  }
  CHECK_FALSE(stalled);
  CHECK(rig.table->CountStatus("SENT") == kEvents);
}

TEST_CASE("after a failed settle the loop retries the batch after its backoff", "[relay][settle]") {
  SettleRig rig(1);
  // The first settle fails: the batch waits for the backoff (100 ms), which
  // the frozen clock never reaches.
  CHECK_FALSE(rig.ClaimOneAndSettle(300ms));
  CHECK(rig.table->CountStatus("SENDING") == 1);
  rig.clock->Advance(100ms);
  CHECK(WaitFor([&] { return rig.units->queue->inflight() == 0; }, 5s, 1ms));
  CHECK(rig.table->CountStatus("SENT") == 1);
}

TEST_CASE("acknowledged batches wait for the SENT group's window and are settled together",
          "[relay][settle]") {
  SettleRig rig(0, SentGrouping::kWindow);
  // Three events, a batch each: the claim window does not wait for the group.
  for (int i = 0; i < 3; ++i) REQUIRE(rig.ClaimOneAndSettle(5s));
  CHECK(rig.units->queue->inflight() == 0);
  CHECK(rig.table->CountStatus("SENDING") == 3);  // held, on a clock that has not moved
  CHECK_FALSE(rig.units->queue->Drained());
  // What a crash now would send again: outbox_sent_group_rows.
  CHECK(rig.metrics.Value(ServiceStats::Gauge::kSentGroupRows) == 3);
  rig.clock->Advance(SentGrouping::kWindow);
  CHECK(WaitFor([&] { return rig.table->CountStatus("SENT") == 3; }, 5s, 1ms));
  CHECK(WaitFor([&] { return rig.metrics.Value(ServiceStats::Gauge::kSentGroupRows) == 0; }, 5s,
                1ms));
  CHECK(rig.metrics.Value(ServiceStats::Counter::kStaleTransitions) == 0);
}

TEST_CASE("a stop settles the held SENT group at once", "[relay][settle]") {
  SettleRig rig(0, SentGrouping::kWindow);
  REQUIRE(rig.ClaimOneAndSettle(5s));
  CHECK(rig.table->CountStatus("SENDING") == 1);
  rig.units->queue->ClaimsEnded();
  CHECK(WaitFor([&] { return rig.units->queue->Drained(); }, 5s, 1ms));
  CHECK(rig.table->CountStatus("SENT") == 1);
}

TEST_CASE("a held SENT group whose settle failed is retried after the backoff", "[relay][settle]") {
  SettleRig rig(1, SentGrouping::kWindow);
  REQUIRE(rig.ClaimOneAndSettle(5s));
  rig.clock->Advance(SentGrouping::kWindow);  // the group's write fails
  CHECK(WaitFor([&] { return rig.fail->load() == 0; }, 5s, 1ms));
  CHECK(rig.table->CountStatus("SENDING") == 1);
  // Until the loop sleeps its backoff (from a time it reads after the
  // failure): an Advance before that would move the backoff's deadline too.
  std::this_thread::sleep_for(300ms);
  CHECK(rig.table->CountStatus("SENDING") == 1);
  rig.clock->Advance(SettleScheduler::kFirstBackoff);
  CHECK(WaitFor([&] { return rig.table->CountStatus("SENT") == 1; }, 5s, 1ms));
}

TEST_CASE("a full SENT group is written at once without waiting for its window",
          "[relay][settle]") {
  SettleRig rig(0, SentGrouping::kWindow);
  // kMaxRows events, a batch each: the last one fills the group.
  for (size_t i = 0; i < SentGrouping::kMaxRows; ++i) REQUIRE(rig.ClaimOneAndSettle(5s));
  CHECK(WaitFor(
      [&] { return rig.table->CountStatus("SENT") == static_cast<int>(SentGrouping::kMaxRows); },
      5s, 1ms));
  CHECK(rig.metrics.Value(ServiceStats::Gauge::kSentGroupRows) == 0);
}

TEST_CASE("a batch with a failed event is settled at once after the SENT group held before it",
          "[relay][settle]") {
  SettleRig rig(0, SentGrouping::kWindow);
  REQUIRE(rig.ClaimOneAndSettle(5s));  // acknowledged: held
  CHECK(rig.table->CountStatus("SENDING") == 1);
  rig.publisher->set_decide([](const Message&) {
    return PublishOutcome{PublishResult::kRetryable, FailureReason::kBrokerDown, "injected"};
  });
  // The retry is written without the clock moving, and the group with it.
  REQUIRE(rig.ClaimOneAndSettle(5s));
  CHECK(WaitFor([&] { return rig.table->CountStatus("SENDING") == 0; }, 5s, 1ms));
  CHECK(rig.table->CountStatus("SENT") == 1);
  CHECK(rig.table->CountStatus("NEW") == 1);
  CHECK(rig.units->queue->Drained() == false);  // the claims have not ended
}

}  // namespace
}  // namespace outbox
