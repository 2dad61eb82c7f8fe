// The settle gate and the queue between the claim and the settle loops
// (src/relay/settle_timing.h, settle_queue.h).
#include "relay/settle_queue.h"

#include <catch2/catch.hpp>
#include <functional>

#include "fakes/fake_clock.h"
#include "relay/settle_timing.h"

namespace outbox {
namespace {

using testing::FakeClock;

TEST_CASE("the settle gate admits a batch only once its claim's transaction ended",
          "[relay][settle]") {
  struct Row {
    const char* what;
    int opened, closed;  // claim rounds begun, the last one ended
    uint64_t batch_round;
    bool admitted;
  };
  const Row rows[] = {
      {"no claim ended yet", 1, 0, 1, false},
      {"its claim ended", 1, 1, 1, true},
      {"a later claim still open", 2, 1, 2, false},
      {"an earlier claim's batch while a later one is open", 2, 1, 1, true},
      {"claims end in order: a later end admits the earlier", 3, 3, 2, true},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    SettleGate gate;
    for (int i = 0; i < r.opened; ++i) gate.Open();
    if (r.closed > 0) gate.Close(r.closed);
    CHECK(gate.Admits(r.batch_round) == r.admitted);
  }
}

PublishedBatch BatchOf(uint64_t round) {
  PublishedBatch b;
  b.claim_round = round;
  return b;
}

// A claim round that published one batch and is still open: the batch is in
// the claim window and pushed, its claim's transaction not yet ended.
uint64_t PushInOpenClaim(SettleQueue& q,
                         const std::function<void(const PublishedBatch&)>& on_delivered = nullptr) {
  const uint64_t round = q.BeginClaim();
  q.AddInflight();
  q.Push(BatchOf(round), on_delivered);
  return round;
}

TEST_CASE("the settle queue hands out batches in order once the gate admits them",
          "[relay][settle]") {
  auto clock = std::make_shared<FakeClock>();
  SettleQueue q(clock);
  int delivered = 0;
  const uint64_t first = PushInOpenClaim(q, [&](const PublishedBatch&) { ++delivered; });
  CHECK(delivered == 1);
  CHECK(q.Front(clock->Now()) == nullptr);  // published before its claim committed
  q.EndClaim(first);
  REQUIRE(q.Front(clock->Now()) != nullptr);
  CHECK(q.inflight() == 1);
  q.Pop();
  CHECK(q.inflight() == 0);
  CHECK_FALSE(q.Drained());  // the claims may bring more
  q.ClaimsEnded();
  CHECK(q.Drained());
}

TEST_CASE("a completion after the queue closed is dropped", "[relay][settle]") {
  auto clock = std::make_shared<FakeClock>();
  SettleQueue q(clock);
  q.EndClaim(q.BeginClaim());
  q.Close();
  bool called = false;
  q.Push(BatchOf(1), [&](const PublishedBatch&) { called = true; });
  CHECK_FALSE(called);
  CHECK(q.Front(clock->Now()) == nullptr);
}

// A queue with one batch in flight on a fake clock that a wait moves to its
// deadline at once: how long a wait took is how far the clock moved.
struct WaitRig {
  WaitRig() { q.AddInflight(); }
  Clock::Duration Waited() const { return clock->Now() - t0; }
  Clock::TimePoint In(Clock::Duration d) const { return clock->Now() + d; }

  std::shared_ptr<FakeClock> clock = AutoAdvancing();
  SettleQueue q{clock};
  const Clock::TimePoint t0 = clock->Now();

 private:
  static std::shared_ptr<FakeClock> AutoAdvancing() {
    auto c = std::make_shared<FakeClock>();
    c->set_auto_advance(true);
    return c;
  }
};

TEST_CASE("a full in-flight window waits for room or a stop", "[relay][settle]") {
  using std::chrono::milliseconds;
  WaitRig r;
  r.q.WaitRoom(1, r.In(milliseconds(100)), [] { return false; });
  CHECK(r.Waited() == milliseconds(100));  // no room: the deadline
  r.q.WaitRoom(2, r.In(milliseconds(100)), [] { return false; });
  CHECK(r.Waited() == milliseconds(100));  // room: at once
  r.q.WaitRoom(1, r.In(milliseconds(100)), [] { return true; });
  CHECK(r.Waited() == milliseconds(100));  // stopped: at once
}

TEST_CASE("a shutdown waits for the in-flight batches on the queue's clock", "[relay][settle]") {
  using std::chrono::seconds;
  WaitRig r;
  CHECK_FALSE(r.q.WaitEmpty(r.In(seconds(5))));
  CHECK(r.Waited() == seconds(5));  // in flight: the (fake) deadline
  const uint64_t round = r.q.BeginClaim();
  r.q.EndClaim(round);
  r.q.Push(BatchOf(round), nullptr);
  REQUIRE(r.q.Front(r.clock->Now()) != nullptr);
  r.q.Pop();
  CHECK(r.q.WaitEmpty(r.In(seconds(5))));
  CHECK(r.Waited() == seconds(5));  // nothing in flight: at once
}

TEST_CASE("a batch waiting in a SENT group leaves the claim window but not the drain",
          "[relay][settle]") {
  auto clock = std::make_shared<FakeClock>();
  SettleQueue q(clock);
  q.EndClaim(PushInOpenClaim(q));
  REQUIRE(q.Front(clock->Now()) != nullptr);
  q.PopGrouped();
  CHECK(q.inflight() == 0);   // the claim loop's window does not wait for the group's timer
  CHECK(q.unsettled() == 1);  // a shutdown does, and counts it
  q.WaitRoom(1, clock->Now(), [] { return false; });  // room at once
  q.ClaimsEnded();
  CHECK(q.claims_ended());
  CHECK_FALSE(q.Drained());  // the group is still to be written
  CHECK_FALSE(q.WaitEmpty(clock->Now()));
  q.GroupSettled(1);
  CHECK(q.unsettled() == 0);
  CHECK(q.Drained());
  CHECK(q.WaitEmpty(clock->Now()));
}

}  // namespace
}  // namespace outbox
