#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "config/config.h"
#include "kafka/publisher.h"
#include "kafka/router.h"
#include "metrics/metrics.h"
#include "outbox/claim_planner.h"
#include "outbox/outbox_store.h"
#include "relay/retry_policy.h"

namespace outbox {

struct RelayOptions {
  ServiceConfig config;
  StoreFactory store_factory;  // one store per relay thread
  PublisherPtr publisher;
  ServiceMetrics* metrics = nullptr;  // must outlive the Relay
  ClockPtr clock = DefaultClock();
  uint64_t seed = std::random_device{}();
};

// The wait before the next poll after a round that did not fill its batch:
// 1 ms after a round that claimed events (more are likely arriving), else
// `previous` doubled, capped at poll_interval (an idle table costs no more
// than the configured idle poll).
std::chrono::milliseconds NextPollWait(std::chrono::milliseconds previous, size_t claimed,
                                       std::chrono::milliseconds poll_interval);

// The per-service loop: claim a batch, publish it, settle the outcome.
// Claiming, publishing and settling overlap: a claim thread keeps up to
// max_inflight_batches batches in flight, a settle thread writes outcomes on
// its own connection, and a housekeeping thread refreshes the table gauges
// and runs retention.
//
// The step methods (ClaimOnce, SettleReady, RefreshGauges) are public for
// tests, which drive them from one thread with fakes; Start() runs them on
// threads. Thread-safety: Start/Stop from one controlling thread.
class Relay {
 public:
  explicit Relay(RelayOptions options);
  ~Relay();

  void Start();
  // Stops claiming, waits up to `grace` for in-flight batches to be published
  // and settled, then stops the threads.
  void Stop(std::chrono::milliseconds grace);

  // Ready: the database answers and the table is usable.
  bool DatabaseReady() const { return db_up_.load(); }
  std::string LastError() const;
  const std::string& name() const { return options_.config.name; }

  enum class Round { kIdle, kMore, kFailed, kBusy };
  // One claim round: claims a batch and hands it to the publisher.
  Round ClaimOnce();
  // Settles every batch whose publication finished. With `wait`, blocks up to
  // `timeout` for one. Returns the number of batches settled; stops at the
  // first settle failure (the batch stays queued).
  int SettleReady(bool wait, std::chrono::milliseconds timeout);
  Status RefreshGauges();
  // The idle poll's statement alone: checks the database while claiming is
  // paused (broker down).
  Status ProbeDatabase();
  Status RunRetention();
  int inflight() const { return inflight_.load(); }

 private:
  struct Completed {
    ClaimedBatch batch;
    std::vector<PublishOutcome> outcomes;  // one per batch row
    double finished_unix = 0;
  };

  Round ClaimOrdered(ClaimedBatch* batch);
  void EndPass();  // ends the planner's pass and its snapshot
  Round ClaimUnordered(ClaimedBatch* batch);
  void Publish(ClaimedBatch batch, Clock::TimePoint claimed_at);
  Status SettleOne(Completed& done);
  // Records a database call's outcome for metrics, /readyz and the log.
  // `settle`: it was the settle of a published batch, which while failing
  // keeps the service reported down whatever other calls do.
  void NoteDb(const Status& s, const char* what, bool settle = false);
  void ClaimLoop();
  void SettleLoop();
  void HousekeepingLoop();
  bool SleepFor(std::chrono::milliseconds d);  // false if stopping

  // Constant after construction.
  const RelayOptions options_;
  const Router router_;
  ServiceMetrics& metrics_;

  // Claim thread only.
  OutboxStorePtr claim_store_;
  OutboxStorePtr scan_store_;  // per_aggregate passes: one snapshot per pass
  Clock::TimePoint pass_started_{};
  // What the current per_aggregate pass did (logged at debug when it ends).
  struct PassStats {
    int rounds = 0, pages = 0;
    int64_t scanned = 0, claimed = 0;
    std::chrono::nanoseconds scan{0}, claim{0};
    std::chrono::steady_clock::time_point started{};
  } pass_stats_;
  ClaimPlanner planner_;
  Clock::TimePoint next_reclaim_{};
  bool last_round_full_ = true;
  size_t last_claimed_ = 0;         // rows the last round claimed
  bool last_pass_claimed_ = false;  // the current or last per_aggregate pass claimed rows

  // Settle thread only.
  OutboxStorePtr settle_store_;
  RetryPolicy retry_;

  // Housekeeping thread only.
  OutboxStorePtr house_store_;
  Clock::TimePoint blocked_due_{};  // the next blocked-aggregates count

  std::atomic<bool> db_up_{false};
  std::atomic<int> inflight_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> claim_done_{false};  // the claim thread has exited
  std::atomic<bool> halt_{false};

  mutable std::mutex mu_;  // guards completed_, last_error_, db_logged_down_, settle_failing_
  std::condition_variable cv_;
  std::deque<Completed> completed_;
  std::string last_error_;
  bool db_logged_down_ = false;
  bool settle_failing_ = false;  // the last settle failed

  std::thread claim_thread_;
  std::thread settle_thread_;
  std::thread house_thread_;

  // Publish completions arrive on the publisher's thread, which outlives
  // the Relay (a batch still in flight after Stop's grace completes later,
  // or is purged when the producer is destroyed). They reach the Relay only
  // through this guard, which the destructor clears under its mutex.
  struct CompletionGuard {
    std::mutex mu;
    Relay* relay = nullptr;  // guarded by mu; null once the Relay is gone
  };
  std::shared_ptr<CompletionGuard> guard_ = std::make_shared<CompletionGuard>();
};

}  // namespace outbox
