#pragma once

// When the claim loop runs next: the one home of the wake-up policy
// (docs/DESIGN.md, "When the claim loop runs"). Events go in (a wake-up and
// its cause, a round's result, a retry this relay's settle wrote, an
// acknowledgement that freed deferred rows, a reconnect, a pause); the next
// step comes out (claim, probe, or wait until a deadline, and on what), and
// for each claim round its plan (reclaim, read the head first, end a pass).
// No I/O; time from an injected clock. One thread (the claim thread, or a
// test's) calls everything but the notes (OnFreedByAck, OnOwnRetry and
// OnRetryWritten), which come from the delivery and settle threads: they are
// atomics, read when the next step is worked out.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>

#include "common/clock.h"
#include "common/wakeup_source.h"
#include "config/config.h"
#include "relay/claimer.h"

namespace outbox {

// The commit race: the binary log is written before the InnoDB commit is
// visible, so a claim right after a wake-up can find the new row still
// locked and skip it (FOR UPDATE SKIP LOCKED). Measured on MariaDB 10.11 (the
// integration test "the commit race" in tests/integration/binlog_stream_test.cc):
// up to half of the immediate claims when the wake-up arrives before the
// writer's COMMIT returns, the row visible within 2.3 ms and mostly within a
// few hundred microseconds. A woken claim that found nothing therefore tries
// again after these pauses, stopping at the first that finds rows: at most 7
// extra claims and 31.75 ms per wake-up.
inline constexpr std::array<std::chrono::microseconds, 7> kCommitRaceRetry = {
    std::chrono::microseconds(250), std::chrono::microseconds(500), std::chrono::milliseconds(1),
    std::chrono::milliseconds(2),   std::chrono::milliseconds(4),   std::chrono::milliseconds(8),
    std::chrono::milliseconds(16)};

// The whole retry: how long after an insert's wake-up its row may still be
// invisible to a claim that the retry would wait for.
inline constexpr std::chrono::microseconds CommitRaceWindow() {
  std::chrono::microseconds sum{0};
  for (auto pause : kCommitRaceRetry) sum += pause;
  return sum;
}

// The longest an idle loop waits while its binlog stream is up: the safety
// poll, which keeps outbox_last_poll_timestamp_seconds (and the
// stalled-polling alert) true and finds what no commit announced.
inline constexpr std::chrono::seconds kSafetyPoll{30};

// After a failed round the loop sleeps 200 ms, doubling up to this.
inline constexpr std::chrono::milliseconds kMaxFailureBackoff{5000};

// ordering none: how often a claim also takes rows whose lease expired (a
// relay that died, or lost its claims): they go again within a second of
// their lease's end.
inline constexpr std::chrono::seconds kReclaimEvery{1};
// per_aggregate: a pass older than this ends at the next round, and the next
// starts afresh. A long pass holds an old snapshot: it misses rows other
// relays claimed since (wasted candidates) and keeps InnoDB from purging.
inline constexpr std::chrono::seconds kMaxPassAge{10};

// At most this many passes per insert wake-up, however many other inserts cut
// its pauses short: with binlog_format MIXED every insert into the database
// wakes the loop, and a busy table of the service's that is not the outbox
// must not keep the retry going.
inline constexpr int kMaxCommitRacePasses = 2 * (static_cast<int>(kCommitRaceRetry.size()) + 1);

// The poll backoff after a round that did not fill its batch: `previous`
// halved after a round that claimed events, else doubled, within 1 ms and
// poll_interval. Events arriving one by one settle it where about every
// other poll finds one: a poll and a claim for most events, however fast
// they come, and an idle table costs no more than the configured idle poll.
std::chrono::milliseconds NextPollWait(std::chrono::milliseconds previous, size_t claimed,
                                       std::chrono::milliseconds poll_interval);

// What the table's gauges last said about unsent rows (Housekeeper::Unsent).
struct UnsentSnapshot {
  bool read = false;         // false until the first successful read
  Clock::TimePoint read_at;  // when the read returned
  int64_t backlog = 0;       // NEW + SENDING
  // When the first unsent row that was not due at the read becomes due.
  std::optional<Clock::TimePoint> next_due;
};

class ClaimScheduler {
 public:
  struct Options {
    WakeupMode wakeup = WakeupMode::kPoll;
    std::chrono::milliseconds poll_interval{100};
    std::chrono::milliseconds gauge_interval{5000};
    size_t max_inflight = 4;  // max_inflight_batches: a full window claims nothing
    bool ordered = false;     // ordering per_aggregate: rounds make passes
  };
  static Options OptionsFor(const ServiceConfig& config);

  enum class Action {
    kClaim,     // one claim round
    kProbe,     // the database probe alone (broker down, or paused)
    kWaitWake,  // wait on the wake-up source until `until`, then OnWake
    kWaitRoom,  // wait until a batch settles (max_inflight_batches), at most until `until`
    kSleep,     // wait until `until`; only a stop ends it early
  };
  struct Step {
    Action action = Action::kClaim;
    Clock::TimePoint until{};
    bool new_pass = false;  // kClaim: start a new pass from the table's start (a reconnect)
    bool idle = false;      // kWaitWake: the idle wait between attempts, not a race pause
  };
  // What the loop sees when it asks for the next step.
  struct View {
    bool stream_up = false;  // WakeupSource::binlog_up (`wakeup: binlog`)
    bool broker_up = true;   // the publisher is healthy
    size_t deferred = 0;     // ClaimPlanner::deferred_count
    UnsentSnapshot unsent;   // Housekeeper::Unsent (read with `wakeup: binlog`)
  };
  // One round's result. `claimed` and `held_by_peer` only for kIdle/kMore.
  struct RoundResult {
    ClaimRound kind = ClaimRound::kIdle;
    Clock::TimePoint started{};
    size_t claimed = 0;
    bool held_by_peer = false;  // ClaimPlanner::held_by_peer after the round
    bool saw_new_rows = false;  // Claimer::saw_new_rows
  };
  // What a round did that the next plans depend on (RecordRoundFacts).
  struct RoundFacts {
    ClaimRound kind = ClaimRound::kIdle;
    bool stopped_at_head_read = false;  // Claimer::stopped_at_head_read
    size_t claimed = 0;                 // rows in its batch
  };

  ClaimScheduler(Options options, ClockPtr clock);

  Step Next(const View& view);
  // Test seams (...ForTesting: production never calls them). How long an
  // idle loop would wait for a wake-up now (the wait Next gives between
  // attempts after a round that found the table idle); whether an attempt
  // is under way (its next step is a claim or a commit-race pause).
  Clock::Duration IdleWaitForTesting(const View& view) { return IdleWait(view, clock_->Now()); }
  bool AttemptingForTesting() const {
    return phase_ == Phase::kClaiming || phase_ == Phase::kRacePause;
  }
  // Before each claim round: what it does besides claiming. `in_pass` and
  // `pass_started`: the per_aggregate pass in progress, if any. ordering
  // none: the head read (RoundPlan::head_read) after a round that did not fill
  // its batch or when an attempt asked for it (a commit that inserted
  // nothing, the look after the commit race); else, every kReclaimEvery, a
  // reclaim of expired leases (the head read sees those itself).
  // per_aggregate: a pass older than kMaxPassAge ends; every new pass reads
  // the head first (at everyday rates that is the whole round).
  RoundPlan PlanRound(bool in_pass, Clock::TimePoint pass_started);
  // After each claim round, failed ones included. Only ordering none's plans
  // depend on it.
  void RecordRoundFacts(const RoundFacts& facts);
  // Before a round: with `inflight` batches in flight the window is full, and
  // the round claims nothing and reports kBusy (the next step waits for room).
  bool WindowFull(size_t inflight) const { return inflight >= options_.max_inflight; }
  // After a kClaim step.
  void OnRound(const RoundResult& result);
  // After a kWaitWake step: why the wait ended, and for kInsert how many
  // insert commits the wake-up merged (WakeupSource::inserts_in_last_wake).
  void OnWake(WakeCause cause, int inserts = 1);
  // Any thread: an acknowledgement freed rows deferred behind this relay's
  // deliveries (since the last claim step): a commit-race pause ends.
  void OnFreedByAck() { freed_by_ack_ = true; }
  // Any thread: a settle of this relay's wrote a retry that comes due at
  // `due`; OnRetryWritten with the settle's backoff.
  void OnOwnRetry(Clock::TimePoint due);
  void OnRetryWritten(int64_t backoff_ms);
  // The database session was opened again, maybe on another server (a
  // failover): the next attempt is a whole pass from the table's start.
  void OnReconnect() { cause_ = Attempt::kFullPass; }
  // A paused service claims nothing; it probes the database as polling would.
  void SetPaused(bool paused) { paused_ = paused; }

 private:
  // What a wake-up asks of the claim loop (docs/DESIGN.md's table).
  enum class Attempt { kOnce, kPass, kInsertRetry, kFullPass };
  enum class Phase { kStart, kClaiming, kRacePause, kIdle, kRoom, kBackoff };
  // How a per_aggregate pass (every attempt but kOnce) ended.
  enum class PassEnd { kFailed, kNothing, kClaimed };

  Step Start(const View& view, Clock::TimePoint now);
  Step Claim(bool head_read_first, bool new_pass = false);
  void PassEnded(PassEnd result, bool held_by_peer, Clock::TimePoint now);
  // The end of a pass other than an insert's retry: a change's or a reconnect's.
  void OtherPassEnded(PassEnd result, bool held_by_peer, Clock::TimePoint now);
  void Finish(ClaimRound last, Clock::TimePoint now);
  Clock::Duration IdleWait(const View& view, Clock::TimePoint now);
  Clock::Duration UnsentWait(Clock::Duration poll, const View& view, Clock::TimePoint now) const;
  Clock::Duration OwnRetryWait(Clock::Duration wait, Clock::TimePoint now);
  Clock::Duration RaceCheckWait(Clock::Duration wait, Clock::TimePoint now) const;
  bool RaceCheckPending() const { return last_claim_start_ < race_check_at_; }
  bool InsertSeen() const;
  Clock::Duration TimersWindow() const;
  // The longest idle wait: the safety poll while the stream is up, else the
  // poll interval.
  Clock::Duration MaxWait(const View& view) const;

  const Options options_;
  const ClockPtr clock_;

  Phase phase_ = Phase::kStart;
  Attempt cause_ = Attempt::kOnce;    // what the next attempt is for
  Attempt attempt_ = Attempt::kOnce;  // the attempt in progress
  bool paused_ = false;
  std::atomic<bool> freed_by_ack_{false};  // OnFreedByAck, until the next claim step
  size_t got_ = 0;                         // rows the attempt's current pass claimed
  int passes_ = 0;                         // passes the insert retry made
  size_t next_pause_ = 0;                  // the insert retry's next pause (kCommitRaceRetry)
  int cause_inserts_ = 0;                  // insert commits the next attempt is for
  int attempt_inserts_ = 0;                // ... and the attempt in progress
  bool attempt_saw_new_ = false;  // a round of the attempt read a row newer than all before
  Clock::TimePoint pause_until_{};
  size_t last_claimed_ = 0;                 // rows the last completed round claimed
  Clock::TimePoint last_claim_start_{};     // when it began
  std::chrono::milliseconds idle_wait_;     // the poll backoff
  std::chrono::milliseconds backoff_{200};  // after a failed round
  Clock::TimePoint backoff_until_{};
  Clock::TimePoint next_probe_{};  // broker down or paused: the next database probe
  // `wakeup: binlog`: until then the loop keeps the poll backoff, because an
  // insert the stream announced was not found (the commit may be slower to
  // show than the retry).
  Clock::TimePoint timers_until_{};
  // A round starts by then: an insert wake-up claimed rows, perhaps not its
  // own, which may show only later; a commit that updated rows woke the loop
  // and may show only later; or rows wait behind another relay whose settle
  // may not show yet.
  Clock::TimePoint race_check_at_{};
  // What ordering none's round plans depend on (PlanRound, RecordRoundFacts);
  // per_aggregate's depend on the pass alone: every new pass reads the head.
  Clock::TimePoint next_reclaim_{};
  bool last_round_full_ = true;   // the last claim filled its batch
  bool head_read_first_ = false;  // an attempt asked for a head read, until the next
  // The earliest retry this relay wrote (OnOwnRetry), as ticks of Clock's
  // epoch; 0: none.
  std::atomic<Clock::Duration::rep> own_retry_due_{0};
};

}  // namespace outbox
