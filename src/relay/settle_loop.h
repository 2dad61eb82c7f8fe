#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "common/clock.h"
#include "common/liveness.h"
#include "relay/settle_queue.h"
#include "relay/settle_timing.h"
#include "relay/settler.h"

namespace outbox {

// The settle thread (docs/DESIGN.md, "Threads"): writes each published
// batch's outcome (Settler) on its own connection, in publication order,
// once the SettleGate admits it; acknowledged batches wait in the SENT group
// (SentGrouping) and are written together; a failed settle is retried until
// it applies, after the SettleScheduler's backoff (settle_timing.h). Run
// until the queue is drained after the claims ended, or halted. Run and its
// step, SettleOrGroup, from one thread (the settle thread, or a test's that
// steps it by hand).
class SettleLoop {
 public:
  // Called after a settle that wrote a retry `backoff_ms` from now.
  using OwnRetryFn = std::function<void(int64_t backoff_ms)>;
  // `group_window`: how long acknowledged batches wait to be settled
  // together (SentGrouping; 0: never, each is written at once).
  SettleLoop(Settler* settler, std::shared_ptr<SettleQueue> queue, ClockPtr clock,
             OwnRetryFn own_retry, std::chrono::milliseconds group_window = SentGrouping::kWindow);

  void Run();

  struct Settled {
    int count = 0;        // batches written, alone or in a group
    bool failed = false;  // it stopped at a settle that failed
  };
  // Run's step: settles every admitted batch, waiting up to `timeout` for
  // the first. A batch whose every row was acknowledged joins the SENT
  // group instead, written when SentGrouping says, and before any batch
  // settled alone; while a group is held the wait ends at its deadline
  // instead, so a step that held a batch returns once the group is written
  // (or its write failed). Stops at the first failed settle (the batch stays
  // queued; a failed group stays held and goes first next time).
  Settled SettleOrGroup(std::chrono::milliseconds timeout);

  void set_heartbeat(HeartbeatPtr beat) { beat_ = std::move(beat); }

 private:
  // Writes the held group, if any, and counts its batches in *done: false
  // if that failed.
  bool FlushGroup(Settled* done);
  // Moves the front batch (every row acknowledged) into the group; false if
  // the group had to be written first and that failed.
  bool Hold(PublishedBatch* front, Settled* done);
  // Settles the front batch alone: false if that failed.
  bool SettleFront(PublishedBatch* front);

  Settler* const settler_;
  const std::shared_ptr<SettleQueue> queue_;
  const ClockPtr clock_;
  const OwnRetryFn own_retry_;
  HeartbeatPtr beat_;
  SentGrouping grouping_;
  std::vector<PublishedBatch> group_;  // the held batches, in publication order
};

}  // namespace outbox
