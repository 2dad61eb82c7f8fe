// The ClaimScheduler's table (docs/DESIGN.md, "When the claim loop runs"):
// each row is what happened, in order, and the step the scheduler asks for
// next. No threads, no store, no sleeps: a fake clock and the events alone.
#include "relay/claim_scheduler.h"

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "fakes/fake_clock.h"

namespace outbox {
namespace {

using namespace std::chrono_literals;
using Action = ClaimScheduler::Action;
using Step = ClaimScheduler::Step;
using testing::FakeClock;

constexpr auto kSafety = kSafetyPoll;  // the longest idle wait while the stream is up

struct Rig {
  explicit Rig(WakeupMode mode, bool ordered = false) : clock(std::make_shared<FakeClock>()) {
    ClaimScheduler::Options o;
    o.wakeup = mode;
    o.ordered = ordered;
    o.poll_interval = 100ms;
    o.gauge_interval = 5000ms;
    scheduler = std::make_unique<ClaimScheduler>(o, clock);
    view.stream_up = mode == WakeupMode::kBinlog;
  }
  Step Next() { return scheduler->Next(view); }
  // A claim step, then a round of `kind` that claimed `claimed` rows, planned
  // first as the claim loop plans each round (not in a pass).
  void Round(ClaimRound kind, size_t claimed = 0, bool held_by_peer = false,
             bool saw_new_rows = false) {
    REQUIRE(Next().action == Action::kClaim);
    (void)scheduler->PlanRound(false, {});
    scheduler->OnRound({kind, clock->Now(), claimed, held_by_peer, saw_new_rows});
  }
  // The wait the next step asks for, from now.
  Clock::Duration Wait() {
    const Step s = Next();
    REQUIRE(s.action != Action::kClaim);
    return s.until - clock->Now();
  }

  std::shared_ptr<FakeClock> clock;
  std::unique_ptr<ClaimScheduler> scheduler;
  ClaimScheduler::View view;
};

// An idle loop whose gauges read an empty table before its last claim.
void IdleAfterEmptyRead(Rig& r) {
  r.clock->Advance(5ms);
  r.view.unsent = {true, Clock::TimePoint{}, 0, std::nullopt};
  r.Round(ClaimRound::kIdle, 0);
}

// One row of the table: events, then the expected next step.
struct Row {
  std::string name;
  WakeupMode mode;
  std::function<void(Rig&)> events;
  Action action;
  Clock::Duration wait{};        // for waits: `until` - now
  bool head_read_first = false;  // for claims: the round it plans reads the head first
  bool new_pass = false;
};

void Check(const Row& row) {
  INFO(row.name);
  Rig rig(row.mode);
  row.events(rig);
  const Step s = rig.Next();
  CHECK(s.action == row.action);
  if (row.action != Action::kClaim && row.action != Action::kProbe)
    CHECK(s.until - rig.clock->Now() == row.wait);
  CHECK(s.new_pass == row.new_pass);
  // The plan of the round a claim step begins (ordering none, and no round
  // here fills a batch): it reads the head first only if the step's attempt asked.
  if (s.action == Action::kClaim)
    CHECK(rig.scheduler->PlanRound(false, {}).head_read == row.head_read_first);
}

TEST_CASE("the scheduler's table: rounds and their results", "[relay][scheduler]") {
  const std::vector<Row> rows = {
      {"a loop starts with a claim", WakeupMode::kPoll, [](Rig&) {}, Action::kClaim},
      {"a full batch claims again at once", WakeupMode::kPoll,
       [](Rig& r) { r.Round(ClaimRound::kMore, 100); }, Action::kClaim},
      {"a round that claimed halves the poll backoff", WakeupMode::kPoll,
       [](Rig& r) { r.Round(ClaimRound::kIdle, 3); }, Action::kWaitWake, 50ms},
      {"an idle round doubles the poll backoff", WakeupMode::kPoll,
       [](Rig& r) {
         r.Round(ClaimRound::kIdle, 3);
         r.scheduler->OnWake(WakeCause::kDeadline);
         r.Round(ClaimRound::kIdle, 3);
         r.scheduler->OnWake(WakeCause::kDeadline);
         r.Round(ClaimRound::kIdle, 0);
       },
       Action::kWaitWake, 50ms},
      {"a full batch resets the poll backoff to 1 ms", WakeupMode::kPoll,
       [](Rig& r) {
         r.Round(ClaimRound::kMore, 100);
         r.Round(ClaimRound::kIdle, 3);
       },
       Action::kWaitWake, 1ms},
      {"the poll backoff stops at poll_interval_ms", WakeupMode::kPoll,
       [](Rig& r) { r.Round(ClaimRound::kIdle, 0); }, Action::kWaitWake, 100ms},
      {"a full in-flight window waits for a settle", WakeupMode::kPoll,
       [](Rig& r) { r.Round(ClaimRound::kBusy); }, Action::kWaitRoom, 100ms},
      {"a failed round backs off 200 ms", WakeupMode::kPoll,
       [](Rig& r) { r.Round(ClaimRound::kFailed); }, Action::kSleep, 200ms},
      {"failures double the backoff", WakeupMode::kPoll,
       [](Rig& r) {
         r.Round(ClaimRound::kFailed);
         r.Next();  // the sleep
         r.Round(ClaimRound::kFailed);
       },
       Action::kSleep, 400ms},
      {"the broker down: the database probe alone", WakeupMode::kPoll,
       [](Rig& r) { r.view.broker_up = false; }, Action::kProbe},
      {"the broker down: one probe, then a second's sleep", WakeupMode::kPoll,
       [](Rig& r) {
         r.view.broker_up = false;
         r.Next();
       },
       Action::kSleep, 1s},
      {"paused: the probe alone, never a claim", WakeupMode::kPoll,
       [](Rig& r) { r.scheduler->SetPaused(true); }, Action::kProbe},
      {"a reconnect asks for a new pass without the head read",
       WakeupMode::kBinlog,
       [](Rig& r) {
         r.Round(ClaimRound::kIdle, 0);
         r.scheduler->OnReconnect();
         r.scheduler->OnWake(WakeCause::kDeadline);
       },
       Action::kClaim,
       {},
       false,
       true},
  };
  for (const Row& row : rows) Check(row);
}

TEST_CASE("the scheduler's table: wake-ups and what they ask for", "[relay][scheduler]") {
  const auto idle = IdleAfterEmptyRead;
  const std::vector<Row> rows = {
      {"a timer: one claim", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kDeadline);
       },
       Action::kClaim},
      {"a commit that updated rows: a pass that reads the head first",
       WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kChange);
       },
       Action::kClaim,
       {},
       true},
      {"an insert: a pass without the head read", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kInsert);
       },
       Action::kClaim},
      {"a pass goes on while its rounds only read pages", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kChange);
         r.Round(ClaimRound::kMore, 0);
       },
       Action::kClaim},
  };
  for (const Row& row : rows) Check(row);
}

TEST_CASE("the scheduler's table: the commit race after a wake-up", "[relay][scheduler]") {
  const auto idle = IdleAfterEmptyRead;
  const std::vector<Row> rows = {
      {"an insert whose pass found nothing pauses 0.25 ms", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kInsert);
         r.Round(ClaimRound::kIdle, 0);
       },
       Action::kWaitWake, 250us},
      {"a pause that ran out: the next is twice as long", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kInsert);
         r.Round(ClaimRound::kIdle, 0);
         r.clock->Advance(250us);
         r.scheduler->OnWake(WakeCause::kDeadline);
         r.Round(ClaimRound::kIdle, 0);
       },
       Action::kWaitWake, 500us},
      {"another insert ends a pause: claim at once", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kInsert);
         r.Round(ClaimRound::kIdle, 0);
         r.scheduler->OnWake(WakeCause::kInsert);
       },
       Action::kClaim},
      {"an acknowledgement that freed deferred rows ends a pause", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kInsert);
         r.Round(ClaimRound::kIdle, 0);
         r.scheduler->OnFreedByAck();
         r.scheduler->OnWake(WakeCause::kChange);
       },
       Action::kClaim},
      {"an update-only commit does not end a pause", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kInsert);
         r.Round(ClaimRound::kIdle, 0);
         r.scheduler->OnWake(WakeCause::kChange);
       },
       Action::kWaitWake, 250us},
      {"an insert never found: the poll backoff from 16 ms", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kInsert);
         for (auto pause : kCommitRaceRetry) {
           r.Round(ClaimRound::kIdle, 0);
           r.clock->Advance(std::chrono::duration_cast<std::chrono::microseconds>(pause));
           r.scheduler->OnWake(WakeCause::kDeadline);
         }
         r.Round(ClaimRound::kIdle, 0);
       },
       Action::kWaitWake, 32ms},
  };
  for (const Row& row : rows) Check(row);
}

TEST_CASE("the scheduler's table: the looks after the commit-race window", "[relay][scheduler]") {
  const auto idle = IdleAfterEmptyRead;
  const std::vector<Row> rows = {
      {"an insert that claimed rows looks again after the race window", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kInsert);
         r.Round(ClaimRound::kIdle, 1);
         r.clock->Advance(1ms);
         r.scheduler->OnWake(WakeCause::kDeadline);
         r.Round(ClaimRound::kIdle, 0);
       },
       Action::kWaitWake, CommitRaceWindow() - 1ms},
      {"the look after the race window reads the head first",
       WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kInsert);
         r.Round(ClaimRound::kIdle, 1);
         r.clock->Advance(CommitRaceWindow());
         r.scheduler->OnWake(WakeCause::kDeadline);
       },
       Action::kClaim,
       {},
       true},
      {"an empty pass with rows held by a peer looks again after the window", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kChange);
         r.Round(ClaimRound::kIdle, 0, /*held_by_peer=*/true);
       },
       Action::kWaitWake, CommitRaceWindow()},
      {"a wake-up while the broker is down is kept for later",
       WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.view.broker_up = false;
         r.scheduler->OnWake(WakeCause::kChange);
         r.Next();  // the probe
         r.scheduler->OnWake(WakeCause::kDeadline);
         r.view.broker_up = true;
       },
       Action::kClaim,
       {},
       true},
  };
  for (const Row& row : rows) Check(row);
}

// A replayed DEAD row, or a row another relay's settle released, may not
// show to the head read its wake-up asks for: the commit race of an update.
TEST_CASE("the scheduler's table: a commit that updated rows gets the look after the window",
          "[relay][scheduler]") {
  const auto idle = IdleAfterEmptyRead;
  const auto changed = [&](Rig& r) {
    idle(r);
    r.scheduler->OnWake(WakeCause::kChange);
  };
  const std::vector<Row> rows = {
      {"its pass found nothing: the look after the window", WakeupMode::kBinlog,
       [&](Rig& r) {
         changed(r);
         r.Round(ClaimRound::kIdle, 0);
       },
       Action::kWaitWake, CommitRaceWindow()},
      {"its pass claimed rows: the look after the window", WakeupMode::kBinlog,
       [&](Rig& r) {
         changed(r);
         r.Round(ClaimRound::kIdle, 1);
       },
       Action::kWaitWake, CommitRaceWindow()},
      {"a row newer than all before does not skip it: an update shows no new id",
       WakeupMode::kBinlog,
       [&](Rig& r) {
         changed(r);
         r.Round(ClaimRound::kIdle, 1, false, /*saw_new_rows=*/true);
       },
       Action::kWaitWake, CommitRaceWindow()},
      {"the look reads the head first",
       WakeupMode::kBinlog,
       [&](Rig& r) {
         changed(r);
         r.Round(ClaimRound::kIdle, 0);
         r.clock->Advance(CommitRaceWindow());
         r.scheduler->OnWake(WakeCause::kDeadline);
       },
       Action::kClaim,
       {},
       true},
      {"after the look found nothing: the stream, up to the safety poll", WakeupMode::kBinlog,
       [&](Rig& r) {
         changed(r);
         r.Round(ClaimRound::kIdle, 0);
         r.clock->Advance(CommitRaceWindow());
         r.scheduler->OnWake(WakeCause::kDeadline);
         r.Round(ClaimRound::kIdle, 0);
       },
       Action::kWaitWake, kSafety},
      {"a timer's round gets no look", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kDeadline);
         r.Round(ClaimRound::kIdle, 0);
       },
       Action::kWaitWake, kSafety},
  };
  for (const Row& row : rows) Check(row);
}

TEST_CASE("the scheduler's table: when an insert's claim needs no look after the window",
          "[relay][scheduler]") {
  const auto idle = IdleAfterEmptyRead;
  const std::vector<Row> rows = {
      {"one insert whose claim read a row newer than all before: no look", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kInsert, 1);
         r.Round(ClaimRound::kIdle, 1, false, /*saw_new_rows=*/true);
       },
       Action::kWaitWake, kSafety},
      {"two inserts in one wake-up: the look after the window", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kInsert, 2);
         r.Round(ClaimRound::kIdle, 1, false, /*saw_new_rows=*/true);
       },
       Action::kWaitWake, CommitRaceWindow()},
      {"one insert whose claim read no new row: the look after the window", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kInsert, 1);
         r.Round(ClaimRound::kIdle, 1);
       },
       Action::kWaitWake, CommitRaceWindow()},
      {"a look already due is pushed past a new row's window", WakeupMode::kBinlog,
       [&](Rig& r) {
         idle(r);
         r.scheduler->OnWake(WakeCause::kInsert, 1);
         r.Round(ClaimRound::kIdle, 1);  // no new row: a look at the window's end
         r.clock->Advance(10ms);
         r.scheduler->OnWake(WakeCause::kInsert, 1);
         r.Round(ClaimRound::kIdle, 1, false, /*saw_new_rows=*/true);
       },
       Action::kWaitWake, CommitRaceWindow()},
  };
  for (const Row& row : rows) Check(row);
}

TEST_CASE("the insert retry makes at most 8 passes and at most 16 when inserts cut its pauses",
          "[relay][scheduler]") {
  for (bool cut : {false, true}) {
    Rig r(WakeupMode::kBinlog);
    r.Round(ClaimRound::kIdle, 0);
    r.scheduler->OnWake(WakeCause::kInsert);
    int passes = 0;
    while (r.Next().action == Action::kClaim) {
      r.scheduler->OnRound({ClaimRound::kIdle, r.clock->Now(), 0, false});
      ++passes;
      if (!r.scheduler->AttemptingForTesting()) break;
      r.clock->Advance(cut ? 1us : 16ms);
      r.scheduler->OnWake(cut ? WakeCause::kInsert : WakeCause::kDeadline);
    }
    CHECK(passes == (cut ? kMaxCommitRacePasses : 1 + static_cast<int>(kCommitRaceRetry.size())));
    CHECK_FALSE(r.scheduler->AttemptingForTesting());
  }
}

TEST_CASE("the scheduler's table: the idle wait with wakeup binlog", "[relay][scheduler]") {
  Rig r(WakeupMode::kBinlog);
  r.clock->Advance(5ms);
  r.Round(ClaimRound::kIdle, 0);
  const Clock::TimePoint before_claim{};  // a gauges' read older than the last claim
  SECTION("no gauges read yet: the poll backoff") { CHECK(r.Wait() == 100ms); }
  SECTION("an empty table: the stream, up to the safety poll") {
    r.view.unsent = {true, before_claim, 0, std::nullopt};
    CHECK(r.Wait() == kSafety);
    r.view.stream_up = false;  // the stream is down: poll
    CHECK(r.Wait() == 100ms);
  }
  SECTION("gauges newer than the last claim: claim first") {
    r.clock->Advance(1ms);
    r.view.unsent = {true, r.clock->Now(), 1, std::nullopt};
    CHECK(r.Wait() == 100ms);
  }
  SECTION("a row backing off: until it comes due, at most a gauge interval") {
    r.clock->Advance(1ms);
    r.view.unsent = {true, before_claim, 1, r.clock->Now() + 3s};
    CHECK(r.Wait() == 3s);
    r.view.unsent.next_due = r.clock->Now() + 60s;
    CHECK(r.Wait() == 5000ms);
    r.view.unsent.next_due = std::nullopt;  // due rows held back (behind a DEAD one)
    CHECK(r.Wait() == 5000ms);
  }
  SECTION("a retry this relay's settle wrote: until it comes due, once") {
    r.view.unsent = {true, before_claim, 0, std::nullopt};
    r.clock->Advance(1ms);
    r.scheduler->OnOwnRetry(r.clock->Now() + 2s);
    CHECK(r.Wait() == 2s);
    r.clock->Advance(2s);
    r.scheduler->OnWake(WakeCause::kDeadline);
    r.Round(ClaimRound::kIdle, 0);  // the claim after it came due
    CHECK(r.Wait() == kSafety);
  }
  SECTION("after a round that claimed: the stream announces the next rows") {
    r.view.unsent = {true, before_claim, 0, std::nullopt};
    r.scheduler->OnWake(WakeCause::kDeadline);
    r.Round(ClaimRound::kIdle, 2);
    CHECK(r.Wait() == kSafety);  // every insert wakes the loop
    r.view.stream_up = false;    // the stream down: a busy table, look again as polling does
    CHECK(r.Wait() == 50ms);
    r.view.deferred = 1;  // but not for rows deferred behind this relay's deliveries: what
                          // frees them is an acknowledgement, which wakes the loop
    CHECK(r.Wait() == 100ms);
  }
}

TEST_CASE("the scheduler's table: the in-flight window", "[relay][scheduler]") {
  Rig r(WakeupMode::kPoll);  // max_inflight_batches 4
  CHECK_FALSE(r.scheduler->WindowFull(3));
  CHECK(r.scheduler->WindowFull(4));
  // The round that found it full claims nothing: the next step waits for a
  // settle, then claims again.
  r.Round(ClaimRound::kBusy);
  CHECK(r.Wait() == 100ms);
  CHECK(r.Next().action == Action::kClaim);
}

TEST_CASE("the scheduler's table: a retry this relay's settle wrote comes due a second late",
          "[relay][scheduler]") {
  Rig r(WakeupMode::kBinlog);
  r.clock->Advance(5ms);
  r.view.unsent = {true, Clock::TimePoint{}, 0, std::nullopt};
  r.Round(ClaimRound::kIdle, 0);
  // next_retry_at is a DATETIME: whole seconds.
  r.scheduler->OnRetryWritten(1000);
  CHECK(r.Wait() == 2s);
  r.scheduler->OnRetryWritten(3000);  // a later one: the earliest stays
  CHECK(r.Wait() == 2s);
}

TEST_CASE("the scheduler's table: the idle step's deadline is the idle wait",
          "[relay][scheduler]") {
  Rig r(WakeupMode::kPoll);
  r.Round(ClaimRound::kIdle, 3);
  const Step s = r.Next();
  CHECK(s.action == Action::kWaitWake);
  CHECK(s.idle);
  CHECK(s.until - r.clock->Now() == r.scheduler->IdleWaitForTesting(r.view));
}

TEST_CASE("the scheduler's table: a round's plan with ordering none", "[relay][scheduler]") {
  Rig r(WakeupMode::kPoll);
  const auto plan = [&] { return r.scheduler->PlanRound(false, Clock::TimePoint{}); };
  const auto claimed = [&](ClaimRound kind, bool stopped_at_head_read = false) {
    r.scheduler->RecordRoundFacts({kind, stopped_at_head_read, 0});
  };
  // The first round reclaims expired leases, without the head read.
  RoundPlan p = plan();
  CHECK(p.reclaim);
  CHECK_FALSE(p.head_read);
  claimed(ClaimRound::kIdle);
  // A round that did not fill its batch: the next reads the head first...
  r.clock->Advance(999ms);
  p = plan();
  CHECK_FALSE(p.reclaim);
  CHECK(p.head_read);
  claimed(ClaimRound::kIdle, /*stopped_at_head_read=*/true);
  // ...also a second after the last reclaim: the head read sees expired
  // leases itself, so no reclaim while rounds read the head.
  r.clock->Advance(1ms);
  p = plan();
  CHECK(p.head_read);
  CHECK_FALSE(p.reclaim);
  claimed(ClaimRound::kMore);
  // A full batch: the batch claim next, without the head read; it reclaims,
  // a second after the last reclaim.
  p = plan();
  CHECK_FALSE(p.head_read);
  CHECK(p.reclaim);
  claimed(ClaimRound::kMore);
  // A failed round leaves that as it was.
  claimed(ClaimRound::kFailed);
  CHECK_FALSE(plan().head_read);
  CHECK_FALSE(plan().end_pass);
}

TEST_CASE("the scheduler's table: a round's plan with per_aggregate", "[relay][scheduler]") {
  Rig r(WakeupMode::kPoll, /*ordered=*/true);
  const Clock::TimePoint start = r.clock->Now();
  // No pass yet: one starts, after the head read; never a reclaim.
  RoundPlan p = r.scheduler->PlanRound(false, {});
  CHECK(p.head_read);
  CHECK_FALSE(p.reclaim);
  CHECK_FALSE(p.end_pass);
  // After a pass that claimed rows the next reads the head too (at everyday
  // rates the head read is the whole round).
  r.scheduler->RecordRoundFacts({ClaimRound::kMore, false, 5});
  CHECK(r.scheduler->PlanRound(false, {}).head_read);
  // A pass goes on: no head read; ten seconds old it still does...
  r.scheduler->RecordRoundFacts(
      {ClaimRound::kMore, false, 0});  // that pass started, claimed nothing yet
  r.clock->Advance(10s);
  p = r.scheduler->PlanRound(true, start);
  CHECK_FALSE(p.end_pass);
  CHECK_FALSE(p.head_read);
  r.scheduler->RecordRoundFacts({ClaimRound::kMore, false, 0});
  // ...older it ends, and the next reads the head.
  r.clock->Advance(1ms);
  p = r.scheduler->PlanRound(true, start);
  CHECK(p.end_pass);
  CHECK(p.head_read);
}

TEST_CASE("the scheduler's table: a head read asked for and a new_pass step plan the next round",
          "[relay][scheduler]") {
  SECTION("a commit that inserted nothing reads the head even after a pass that claimed") {
    Rig r(WakeupMode::kBinlog, /*ordered=*/true);
    IdleAfterEmptyRead(r);
    r.scheduler->RecordRoundFacts({ClaimRound::kMore, false, 3});
    r.scheduler->OnWake(WakeCause::kChange);
    REQUIRE(r.Next().action == Action::kClaim);
    CHECK(r.scheduler->PlanRound(false, {}).head_read);
  }
  SECTION("a reconnect's pass reads the head too: it sees every unsent row") {
    Rig r(WakeupMode::kBinlog, /*ordered=*/true);
    IdleAfterEmptyRead(r);
    r.scheduler->OnReconnect();
    r.scheduler->OnWake(WakeCause::kDeadline);
    REQUIRE(r.Next().new_pass);
    CHECK(r.scheduler->PlanRound(false, {}).head_read);
  }
  SECTION("ordering none: a reconnect claims without the head read") {
    Rig r(WakeupMode::kBinlog);
    IdleAfterEmptyRead(r);
    r.scheduler->RecordRoundFacts({ClaimRound::kIdle, false, 0});
    r.scheduler->OnReconnect();
    r.scheduler->OnWake(WakeCause::kDeadline);
    REQUIRE(r.Next().new_pass);
    CHECK_FALSE(r.scheduler->PlanRound(false, {}).head_read);
  }
}

}  // namespace
}  // namespace outbox
