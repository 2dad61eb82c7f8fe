#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/liveness.h"
#include "common/mutex.h"
#include "common/wakeup.h"
#include "config/config.h"
#include "kafka/publisher.h"
#include "metrics/metrics.h"
#include "outbox/outbox_store.h"
#include "relay/chain_publisher.h"
#include "relay/claim_planner.h"
#include "relay/claimer.h"
#include "relay/db_health.h"
#include "relay/housekeeper.h"
#include "relay/router.h"
#include "relay/settler.h"

namespace outbox {

struct RelayOptions {
  ServiceConfig config;
  StoreFactory store_factory;  // one store per connection the relay opens (four)
  PublisherPtr publisher;
  ServiceMetrics* metrics = nullptr;  // must outlive the Relay
  ClockPtr clock = DefaultClock();
  uint64_t seed = std::random_device{}();
  // Where the service's loops register their heartbeats for /healthz (null:
  // none). Must outlive the Relay.
  LivenessRegistry* liveness = nullptr;
  // What the claim loop waits on when idle (docs/BINLOG.md "How the relay
  // plugs in"): null means a PollWakeup on poll_interval_ms (`wakeup: poll`);
  // src/app/ hands a binlog::BinlogWakeup for `wakeup: binlog`.
  WakeupSourcePtr wakeup;
};

// How long each of a service's loops may go without progress before /healthz
// calls it stalled (docs/RUNBOOK.md, "Liveness"): the loop's longest wait
// plus its longest statement (a transaction of up to 4 round trips, 6 for a
// settle, each bounded by mysql.read_timeout_ms, after a reconnect bounded by
// mysql.connect_timeout_ms), plus 10 s. The units beat after every statement,
// so a limit need cover one statement, not a whole iteration.
struct StallLimits {
  std::chrono::milliseconds claim, settle, housekeeping;
};
StallLimits StallLimitsFor(const ServiceConfig& config);

// The wait before the next poll after a round that did not fill its batch:
// 1 ms after a round that claimed events (more are likely arriving), else
// `previous` doubled, capped at poll_interval (an idle table costs no more
// than the configured idle poll).
std::chrono::milliseconds NextPollWait(std::chrono::milliseconds previous, size_t claimed,
                                       std::chrono::milliseconds poll_interval);

// One service's relay: the units of docs/DESIGN.md wired together and run on
// three threads. The claim loop claims batches (Claimer) and hands them to
// the ChainPublisher, keeping up to max_inflight_batches in flight; their
// outcomes arrive on the producer's thread and queue up here; the settle
// loop writes them (Settler) on its own connection; the housekeeping loop
// refreshes the gauges and runs retention (Housekeeper). DbHealth collects
// every statement's outcome for /readyz.
//
// The step methods (ClaimOnce, SettleReady, RefreshGauges, ...) are public
// for tests, which drive them from one thread with fakes; Start() runs them
// on threads. Thread-safety: Start/Stop from one controlling thread;
// DatabaseReady, LastError, WakeupStatus and inflight from any thread.
class Relay {
 public:
  explicit Relay(RelayOptions options);
  ~Relay();

  void Start();
  // Stops claiming, waits up to `grace` for in-flight batches to be published
  // and settled, then stops the threads.
  void Stop(std::chrono::milliseconds grace);

  // Ready: the database answers and the table is usable.
  bool DatabaseReady() const { return health_.up(); }
  std::string LastError() const { return health_.LastError(); }
  // With `wakeup: binlog`, for /readyz: "wakeup binlog up", or down with the
  // stream's reason and the poll that stands in. Empty with `wakeup: poll`.
  std::string WakeupStatus() const;
  const std::string& name() const { return options_.config.name; }

  using Round = ClaimRound;
  // One claim round: claims a batch and hands it to the publisher.
  // REQUIRES: the claim thread (or a test's only thread).
  Round ClaimOnce();
  // Settles every batch whose publication finished. With `wait`, blocks up to
  // `timeout` for one. Returns the number of batches settled; stops at the
  // first settle failure (the batch stays queued).
  // REQUIRES: the settle thread (or a test's only thread).
  int SettleReady(bool wait, std::chrono::milliseconds timeout) EXCLUDES(mu_);
  // REQUIRES: the housekeeping thread (or a test's only thread).
  Status RefreshGauges() { return housekeeper_.RefreshGauges(); }
  Status RunRetention();
  // The idle poll's statement alone. REQUIRES: the claim thread.
  Status ProbeDatabase() { return claimer_.Probe(); }
  int inflight() const { return inflight_.load(); }
  // One claim round after a wake-up of `cause`: kInsert gets the commit-race
  // retry (ClaimAfterWakeupPausing; PauseForRace says what cuts its pauses
  // short; if it still claims nothing, the loop keeps the poll backoff for a
  // while, see IdleWait); kChange a whole per_aggregate pass, and one more
  // look after the commit race if it claimed nothing while rows wait behind
  // another relay (ClaimPlanner::held_by_peer); kDeadline one ClaimOnce.
  // REQUIRES: the claim thread (or a test's only thread).
  Round ClaimAfter(WakeCause cause);
  // How long an idle claim loop may wait for a wake-up: `idle_wait` (the poll
  // backoff) with `wakeup: poll`; with `wakeup: binlog`, until the next
  // unsent row comes due (a retry its own settles wrote; else what the gauges
  // read, at most a gauge interval ahead) while the table has unsent rows,
  // else the wake-up's MaxWait (30 s while the binlog stream is up); the poll
  // backoff after an insert wake-up that found nothing. REQUIRES: the claim
  // thread.
  Clock::Duration IdleWait(std::chrono::milliseconds idle_wait);

 private:
  // Called by the Claimer with each batch it claims, before the claim's
  // commit. REQUIRES: the claim thread.
  void Publish(const ClaimedBatch& batch, Clock::TimePoint claimed_at);
  void OnPublished(PublishedBatch done) EXCLUDES(mu_);
  void ClaimLoop();
  void NoteWakeupState();  // outbox_wakeup_binlog_up, with `wakeup: binlog`
  // Failover wiring (issue 25): after each round, whether the claim store
  // connected again since the last look (a lost connection or a read-only
  // answer closed its session). On a new server identity it counts
  // outbox_database_server_changes_total and has the wake-up source follow.
  // True on a reconnect: the loop then makes a full pass at once.
  // REQUIRES: the claim thread.
  bool NoteSession();
  // A pause of the commit-race retry, until `until`: true when another
  // insert's wake-up or an acknowledgement that freed deferred rows ended it
  // early (claim at once), false at `until` or on stop. A wake-up of another
  // cause is consumed: the retry's next claim serves it. REQUIRES: the claim
  // thread.
  bool PauseForRace(Clock::TimePoint until);
  // Claim rounds until one claims rows or the pass ends, the last in *round:
  // 1 if rows were claimed, 0 if none, -1 if a round failed or found
  // max_inflight_batches in flight, or on stop. REQUIRES: the claim thread.
  int ClaimPass(Round* round);
  // How long after an insert wake-up that claimed nothing the loop keeps the
  // poll backoff with `wakeup: binlog`.
  Clock::Duration TimersWindow() const;
  // The delivery thread, when a batch's outcomes are in (per_aggregate):
  // tells the planner which rows the broker acknowledged and wakes the claim
  // loop if rows deferred behind them are now claimable.
  void NoteDelivered(const PublishedBatch& done);
  // The settle thread, after a settle that wrote a retry `backoff_ms` from
  // now: the loop's wait ends by the time it comes due.
  void NoteOwnRetry(int64_t backoff_ms);
  // `wait`, shortened to when the earliest retry this relay wrote comes due.
  // REQUIRES: the claim thread.
  Clock::Duration OwnRetryWait(Clock::Duration wait, Clock::TimePoint now);
  // No round has started since race_check_at_: the look it asks for is owed.
  // REQUIRES: the claim thread.
  bool RaceCheckPending() const { return last_claim_start_ < race_check_at_; }
  // `wait`, shortened to race_check_at_ while that look is owed.
  // REQUIRES: the claim thread.
  Clock::Duration RaceCheckWait(Clock::Duration wait, Clock::TimePoint now) const;
  // IdleWait with `wakeup: binlog` while the table has unsent rows.
  Clock::Duration UnsentWait(Clock::Duration idle_wait, Clock::Duration max_wait,
                             Clock::TimePoint now) const;
  void WaitForRoom() EXCLUDES(mu_);
  void SettleLoop();
  bool SettleDrained() EXCLUDES(mu_);
  // completed_'s front may be settled: its claim's transaction has ended.
  bool FrontSettleable() const REQUIRES(mu_);
  void HousekeepingLoop();
  bool SleepFor(std::chrono::milliseconds d) EXCLUDES(mu_);  // false if stopping

  void RegisterHeartbeats();
  static void Beat(const HeartbeatPtr& beat) {
    if (beat) beat->Beat();
  }

  // Constant after construction. wakeup_ comes first: it is taken out of the
  // options before they are stored.
  const WakeupSourcePtr wakeup_;
  const RelayOptions options_;
  const Router router_;
  ServiceMetrics& metrics_;

  // The units; each documents which thread may call it.
  DbHealth health_;
  ClaimPlanner planner_;  // internally locked: OnSettled comes from the settle thread
  Claimer claimer_;
  ChainPublisher publisher_;
  Settler settler_;
  Housekeeper housekeeper_;

  // Claim thread only.
  size_t last_claimed_ = 0;              // rows the last round claimed
  Clock::TimePoint last_claim_start_{};  // when the last round began
  Clock::TimePoint round_start_{};       // when the current round began
  uint64_t claim_round_ = 0;             // claim rounds begun
  bool published_in_round_ = false;      // the current round published a batch
  Clock::TimePoint next_down_probe_{};   // broker down: the next database probe
  // Failover wiring (issue 25): the claim store's session as last seen.
  uint64_t seen_connects_ = 0;
  std::string seen_server_;
  // `wakeup: binlog`: until then the loop keeps the poll backoff, because an
  // insert the stream announced was not found (the commit may be slower to
  // show than the commit-race retry).
  Clock::TimePoint timers_until_{};
  // `wakeup: binlog`: an insert wake-up claimed rows, perhaps not its own,
  // which may show only later (the commit race): a round starts by then.
  Clock::TimePoint race_check_at_{};

  std::atomic<int> inflight_{0};  // batches claimed and not yet settled
  // When the earliest retry a settle of this relay wrote comes due, in
  // Clock::Duration ticks; 0: none. Set by the settle thread, cleared by the
  // claim thread once a claim ran after it.
  std::atomic<Clock::Duration::rep> own_retry_due_{0};
  std::atomic<bool> stopping_{false};
  // NoteDelivered freed rows deferred behind this relay's deliveries since
  // the last claim round started: a commit-race pause ends (PauseForRace).
  std::atomic<bool> freed_by_ack_{false};
  std::atomic<bool> claim_done_{false};  // the claim thread has exited
  std::atomic<bool> halt_{false};

  mutable Mutex mu_;
  CondVar cv_{&mu_};  // signalled on a published batch, a claim's end, a settle, and stopping
  std::deque<PublishedBatch> completed_ GUARDED_BY(mu_);
  uint64_t claims_ended_ GUARDED_BY(mu_) = 0;  // the last claim round whose transaction ended

  std::thread claim_thread_;
  std::thread settle_thread_;
  std::thread house_thread_;
  // Set by Start before the threads start, dropped by Stop after they ended.
  HeartbeatPtr claim_beat_, settle_beat_, house_beat_;

  // Publish completions arrive on the publisher's thread, which outlives the
  // Relay (a batch still in flight after Stop's grace completes later, or is
  // purged when the producer is destroyed). They reach the Relay only through
  // this guard, which the destructor clears under its mutex.
  struct CompletionGuard {
    Mutex mu;
    Relay* relay GUARDED_BY(mu) = nullptr;  // null once the Relay is gone
  };
  std::shared_ptr<CompletionGuard> guard_ = std::make_shared<CompletionGuard>();
};

}  // namespace outbox
