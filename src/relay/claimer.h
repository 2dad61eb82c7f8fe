#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/liveness.h"
#include "config/config.h"
#include "outbox/outbox_store.h"
#include "relay/claim_planner.h"
#include "relay/db_health.h"

namespace outbox {

// What one claim round does besides claiming, as the ClaimScheduler planned
// it (ClaimScheduler::PlanRound).
struct RoundPlan {
  bool reclaim = false;  // ordering none: the claim also takes rows whose lease expired
  // The head read first (OutboxStore::ReadHead, the idle poll): nothing due
  // ends the round; one due row (none) or a complete head (per_aggregate) is
  // the whole round.
  bool head_read = false;
  bool end_pass = false;  // per_aggregate: end the pass in progress first
};

// The outcome of one claim round.
enum class ClaimRound {
  kIdle,    // nothing more to claim now: wait for the next poll
  kMore,    // a full batch (or a pass still going): claim again at once
  kFailed,  // a statement failed (the DbHealth has it): back off
  kBusy     // max_inflight_batches are in flight: wait for a settle
};

// Claims batches from the table, with the strategy the service's ordering
// asks for (docs/DESIGN.md, "The path of one event"):
//  - at everyday rates, the head read (ReadHead: one statement that is also
//    the idle poll) and, for one row to claim, ClaimRow (a conditional
//    UPDATE that commits on its own): two statements for an event. With
//    per_aggregate a complete head goes through the ClaimPlanner as a pass
//    of one page would.
//  - ordering none otherwise: ClaimDue, SKIP LOCKED over the status index,
//    and a reclaim of expired leases when the plan says.
//  - ordering per_aggregate otherwise: passes over the unsent rows in id
//    order from one snapshot, a ClaimPlanner choosing the rows whose older
//    events are all SENT or claimed with them, ClaimIds locking and claiming
//    them.
// Every batch claimed in a transaction goes to `publish` before its claim
// commits (see OutboxStore::ClaimedFn), a row claimed by ClaimRow after its
// UPDATE committed; with the time its claim round began, with ordering
// per_aggregate after the planner counted its rows in flight. When
// to reclaim, read the head or end a pass is the ClaimScheduler's (RoundPlan).
// Not thread-safe: one thread claims (the relay's claim loop). It owns two
// store connections: one for claims, one for a pass's snapshot reads.
class Claimer {
 public:
  // `*planner` and `*health` must outlive the Claimer.
  using PublishFn = std::function<void(const ClaimedBatch& batch, Clock::TimePoint claimed_at)>;
  Claimer(const ServiceConfig& config, const StoreFactory& stores, ClaimPlanner* planner,
          DbHealth* health, ClockPtr clock, PublishFn publish);

  // One claim round into *batch (rows in id order), which has gone to
  // `publish`, as `plan` says. kFailed after `publish` when the claim's
  // commit failed: the batch's settle then finds its rows not this relay's.
  ClaimRound Claim(const RoundPlan& plan, ClaimedBatch* batch);
  // The last round ended at its head read: it found nothing due, or failed.
  bool stopped_at_head_read() const { return stopped_at_head_read_; }
  // The last round read a row with an id greater than any this Claimer had
  // read before: a transaction committed since shows (ClaimScheduler's
  // commit-race look).
  bool saw_new_rows() const { return saw_new_rows_; }
  // When the per_aggregate pass in progress started (ClaimPlanner::in_pass).
  Clock::TimePoint pass_started() const { return pass_started_; }
  // Checks the database while claiming is paused (broker down, or the
  // service paused) with one cheap index probe (OutboxStore::HasDue), for
  // DbHealth and the heartbeat; whether a row is due does not matter then.
  Status Probe();
  // Ends the per_aggregate pass in progress: the session was opened again,
  // maybe on another server (a failover), and the pass's snapshot is gone.
  void StartOver();
  // The claim store's sessions so far (OutboxStore::Session): the claim loop
  // reacts to a reconnect and to a new server identity.
  SessionInfo ClaimSession() const {
    return claim_store_ ? claim_store_->Session() : SessionInfo{};
  }

  // Beaten after every statement (DbHealth::NoteAndBeat). Null: no heartbeat.
  void set_heartbeat(HeartbeatPtr beat) { beat_ = std::move(beat); }

 private:
  ClaimRound ClaimUnordered(const RoundPlan& plan, ClaimedBatch* batch);
  ClaimRound ClaimOrdered(const RoundPlan& plan, ClaimedBatch* batch);
  // The head read: kIdle when nothing is due, kFailed, else nullopt (go on).
  std::optional<ClaimRound> ReadHead(const HeadQuery& q, HeadRead* head);
  // per_aggregate: the round on a complete head read; nullopt: start a pass.
  std::optional<ClaimRound> ClaimOrderedHead(ClaimedBatch* batch);
  // ClaimRow: the row into *batch if this relay got it. False if it failed.
  bool ClaimOne(const OutboxRow& row, const std::string& lease_token, ClaimedBatch* batch);
  void NoteSeen(int64_t id);
  // Starts a per_aggregate pass: kMore when one started, else kIdle/kFailed.
  ClaimRound StartPass();
  // Reads pages into the planner until the round has a batch's worth of
  // candidates or the pass is read to its end. False if a read failed.
  bool ScanPages();
  void EndPassAndSnapshot();  // ends the planner's pass and its snapshot
  // Locks and claims the planner's candidates into *batch. False if the
  // claim failed.
  bool ClaimCandidates(ClaimedBatch* batch);

  const ServiceConfig& config_;
  ClaimPlanner* const planner_;
  DbHealth* const health_;
  const ClockPtr clock_;
  const PublishFn publish_;
  OutboxStore::ClaimedFn publish_round_;  // publish_ with the current round's start
  Clock::TimePoint round_started_{};
  HeartbeatPtr beat_;
  OutboxStorePtr claim_store_;
  OutboxStorePtr scan_store_;  // per_aggregate passes: one snapshot per pass

  bool stopped_at_head_read_ = false;
  int64_t max_seen_id_ = 0;        // the greatest id any read returned
  int64_t seen_before_round_ = 0;  // max_seen_id_ when the round began
  bool saw_new_rows_ = false;
  Clock::TimePoint pass_started_{};
  // What the current per_aggregate pass did (logged at debug when it ends).
  struct PassStats {
    int rounds = 0, pages = 0;
    int64_t scanned = 0, claimed = 0;
    Clock::Duration scan{0}, claim{0};
  } pass_stats_;
};

}  // namespace outbox
