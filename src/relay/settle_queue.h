#pragma once

#include <chrono>
#include <deque>
#include <functional>

#include "common/clock.h"
#include "common/mutex.h"
#include "relay/settle_timing.h"
#include "relay/settler.h"

namespace outbox {

// Between the claim loop and the settle loop: the batches in flight (claimed
// and not yet settled), the published ones waiting for their settle in
// publication order, and the SettleGate that holds a batch back until its
// claim's transaction ended.
//
// Thread-safety: every method from any thread, except that only the settle
// loop calls Front and Pop. Publish completions arrive on the producer's
// thread, which may outlive the relay: they reach the queue through a
// shared_ptr, and after Close they are dropped (their rows' leases expire).
class SettleQueue {
 public:
  explicit SettleQueue(ClockPtr clock) : clock_(std::move(clock)) {}

  // The claim loop: a claim round begins (its number, for PublishedBatch::
  // claim_round), a batch of it goes out, its transaction ended.
  uint64_t BeginClaim() EXCLUDES(mu_);
  void AddInflight() EXCLUDES(mu_);
  void EndClaim(uint64_t round) EXCLUDES(mu_);

  // The producer's thread: a batch's outcomes are in. `on_delivered` runs
  // first (the claim planner hears of the acknowledgements); nothing runs
  // after Close.
  void Push(PublishedBatch done, const std::function<void(const PublishedBatch&)>& on_delivered)
      EXCLUDES(mu_, life_mu_);
  void Close() EXCLUDES(life_mu_);

  // The settle loop: the front batch once the gate admits it, waiting until
  // `deadline` (or Halt, or the claims' end while a group is held) for one;
  // null if none. The pointer stays valid until
  // Pop (a deque's push_back keeps references to other elements).
  PublishedBatch* Front(Clock::TimePoint deadline) EXCLUDES(mu_);
  void Pop() EXCLUDES(mu_);
  // The settle loop: the front batch (moved out before) waits in a group of
  // SENT settles (SentGrouping): still in flight for Drained and WaitEmpty,
  // no longer for the claim loop's window (inflight, WaitRoom), which must
  // not wait for the group's timer. GroupSettled: `n` grouped batches were
  // written.
  void PopGrouped() EXCLUDES(mu_);
  void GroupSettled(int n) EXCLUDES(mu_);
  bool claims_ended() const EXCLUDES(mu_);

  // Batches claimed and neither settled nor waiting in a group.
  int inflight() const EXCLUDES(mu_);
  // Batches claimed and not settled, those waiting in a group included:
  // what WaitEmpty waits for.
  int unsettled() const EXCLUDES(mu_);
  // Waits until fewer than `max` batches are in flight, `deadline`, or a
  // Notify after which `stop` is true.
  void WaitRoom(int max, Clock::TimePoint deadline, const std::function<bool()>& stop)
      EXCLUDES(mu_);
  void Notify() EXCLUDES(mu_);
  // Waits until nothing is in flight, or `deadline` (on the queue's clock):
  // true if nothing is.
  bool WaitEmpty(Clock::TimePoint deadline) EXCLUDES(mu_);
  // The claim loop has ended: once nothing is in flight the settle loop ends.
  void ClaimsEnded() EXCLUDES(mu_);
  bool Drained() const EXCLUDES(mu_);
  // Ends every wait at once, for good (the settle loop stops).
  void Halt() EXCLUDES(mu_);
  bool halted() const EXCLUDES(mu_);
  // Waits until `deadline` or Halt (the settle loop's retry backoff).
  void Sleep(Clock::TimePoint deadline) EXCLUDES(mu_);

 private:
  bool FrontAdmitted() const REQUIRES(mu_) {
    return !published_.empty() && gate_.Admits(published_.front().claim_round);
  }

  const ClockPtr clock_;
  Mutex life_mu_;  // held while a completion runs; Close waits it out
  bool closed_ GUARDED_BY(life_mu_) = false;
  mutable Mutex mu_;
  CondVar cv_{&mu_};  // a batch published, a claim ended, a settle, Halt
  std::deque<PublishedBatch> published_ GUARDED_BY(mu_);
  SettleGate gate_ GUARDED_BY(mu_);
  int inflight_ GUARDED_BY(mu_) = 0;  // batches claimed and not yet settled
  int grouped_ GUARDED_BY(mu_) = 0;   // of those, waiting in a group (PopGrouped)
  bool claims_ended_ GUARDED_BY(mu_) = false;
  bool halted_ GUARDED_BY(mu_) = false;
};

}  // namespace outbox
