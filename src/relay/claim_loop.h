#pragma once

#include <memory>
#include <string>

#include "common/clock.h"
#include "common/liveness.h"
#include "common/service_stats.h"
#include "common/wakeup_source.h"
#include "config/config.h"
#include "kafka/publisher.h"
#include "outbox/outbox_store.h"
#include "relay/chain_publisher.h"
#include "relay/claim_planner.h"
#include "relay/claim_scheduler.h"
#include "relay/claimer.h"
#include "relay/db_health.h"
#include "relay/housekeeper.h"
#include "relay/settle_queue.h"
#include "relay/stop_signal.h"

namespace outbox {

// What a ClaimLoop works with. The references are to units its owner
// (RelayUnits) declares before the loop: they are built before it and
// destroyed after it. The queue is shared with the delivery callbacks, which
// may outlive the loop (SettleQueue::Close).
struct ClaimLoopParts {
  const ServiceConfig& config;
  const Router& router;
  ClaimPlanner& planner;
  DbHealth& health;
  ServiceStats& stats;
  const Housekeeper& housekeeper;  // Unsent(), for the binlog wait
  WakeupSource& wakeup;
  ClaimScheduler& scheduler;  // the loop's alone to drive (a test may read its decisions)
  std::shared_ptr<SettleQueue> queue;
  StoreFactory stores;  // two connections: claims and a pass's snapshot reads
  PublisherPtr publisher;
  ClockPtr clock;
};

// The claim thread (docs/DESIGN.md, "Threads"): claims batches (Claimer) and
// hands each to the ChainPublisher before its claim commits, keeping up to
// max_inflight_batches in flight (SettleQueue); the ClaimScheduler decides
// when the next round comes. Run and the steps from one thread (the claim
// thread, or a test's); Stop, NoteOwnRetry, NoteDelivered and the accessors
// from any thread.
class ClaimLoop {
 public:
  explicit ClaimLoop(ClaimLoopParts parts);

  // Attempts and waits until Stop.
  void Run();
  void Stop();

  // One claim round, and after a round that did not fail the look whether
  // the claim store's session was opened again (NoteSession): the claim
  // thread's only way to see a reconnect. Tests step rounds with it by hand.
  ClaimRound ClaimOnce();
  // The attempt a wake-up of `cause` asks for: rounds, and with the commit
  // race their pauses, until the scheduler asks for a wait; the last round.
  ClaimRound ClaimAfter(WakeCause cause);

  // The settle thread: a settle wrote a retry `backoff_ms` from now.
  void NoteOwnRetry(int64_t backoff_ms);
  // The producer's thread (per_aggregate): a batch's outcomes are in.
  void NoteDelivered(const PublishedBatch& done);

  void set_heartbeat(HeartbeatPtr beat);
  // With `wakeup: binlog`, for /readyz: "wakeup binlog up", or down with the
  // stream's reason and the poll that stands in. Empty with `wakeup: poll`.
  std::string WakeupStatus() const;

 private:
  ClaimScheduler::View View() const;
  // Runs the step before the next attempt; the cause of a wake-up wait.
  WakeCause WaitBetween();
  void Publish(const ClaimedBatch& batch, Clock::TimePoint claimed_at);
  void NoteWakeupState();
  // Counts and logs the rows of `batch` whose lease had expired.
  void NoteReclaimed(const ClaimedBatch& batch);
  // After a round: the claim store's session was opened again since the last
  // look (a lost connection or a read-only answer closed it). Then the next
  // attempt is a full pass and the wake-up source reconnects; a new server
  // identity counts outbox_database_server_changes_total.
  void NoteSession();

  const ClaimLoopParts parts_;
  const ServiceConfig& config_;
  Claimer claimer_;
  ChainPublisher publisher_;
  ClaimScheduler& scheduler_;
  StopSignal stop_;
  HeartbeatPtr beat_;
  // The step after the last attempt: a wait, or the broker-down probe.
  ClaimScheduler::Step pending_;
  // The current round: its number for the SettleGate and its start.
  uint64_t round_ = 0;
  Clock::TimePoint round_start_{};
  bool published_ = false;
  // The claim store's session as last seen (claim thread).
  SessionInfo session_;
};

}  // namespace outbox
