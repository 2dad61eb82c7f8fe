#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "common/liveness.h"
#include "common/service_stats.h"
#include "config/config.h"
#include "kafka/publisher.h"
#include "outbox/outbox_store.h"
#include "relay/claim_planner.h"
#include "relay/db_health.h"
#include "relay/retry_policy.h"
#include "relay/router.h"

namespace outbox {

// A claimed batch whose publication finished: one outcome per row.
struct PublishedBatch {
  ClaimedBatch batch;
  std::vector<PublishOutcome> outcomes;
  Clock::TimePoint claimed_at{};   // when the claim round started (relay clock)
  Clock::TimePoint finished_at{};  // when the last outcome arrived (relay clock)
  // The claim round that published it (SettleGate): its settle waits until
  // that claim's transaction ended.
  uint64_t claim_round = 0;
};

// What to write for each row of a published batch (docs/DESIGN.md, "The path of one event"):
// acknowledged -> SENT; not attempted -> released (NEW, no attempt counted);
// retryable -> NEW with a backoff, or DEAD once the attempts are exhausted;
// permanent -> DEAD. A pure function of the outcomes, the rows' retry counts
// and the policy (whose jitter draws from its RNG).
std::vector<SettleOp> PlanSettle(const std::vector<OutboxRow>& rows,
                                 const std::vector<PublishOutcome>& outcomes, RetryPolicy& retry);

// Every row of the batch was acknowledged: its settle writes SENT only.
bool AllAcked(const PublishedBatch& done);

// The publish latency of an acknowledged row, on the database's clock: the
// row's age when it was claimed (NOW(6) - created_at, measured by the
// database) plus the time from the claim to the acknowledgement.
double PublishLatencySeconds(const OutboxRow& row, Clock::TimePoint claimed_at,
                             Clock::TimePoint acked_at);

// What a settle tells the claim loop besides the planner's accounting
// (RelayUnits wires them to the service's WakeupSource); any may be empty.
// Called on the settle thread.
struct SettleNotes {
  // Around the settle's statements (WakeupSource::BeginOwnChange and
  // EndOwnChange): after them with the write commits that changed rows
  // (SettleResult::commits; 0 when the settle failed), so that their events
  // in the binary log do not wake the claim loop.
  std::function<void()> before_write;
  std::function<void(int commits)> after_write;
  // After a settle that released rows (claimable at once) or wrote a DEAD
  // (with dead_policy skip it frees the next events of its aggregate): the
  // claim loop looks again, since its own settle's commit in the binary log
  // does not wake it (before_write, after_write).
  std::function<void()> freed;
};

// Writes a published batch's outcome to the table, fenced by its lease
// (Write), then, from what the write did, the accounting: metrics, log lines,
// telling the claim planner which rows are done and waking the claim loop
// (Settled). Not thread-safe: one thread settles (the relay's
// settle loop); it owns its own store connection.
class Settler {
 public:
  // `*router`, `*metrics`, `*health` and `*planner` must outlive the Settler;
  // `planner` is null with ordering none.
  Settler(const ServiceConfig& config, const Router* router, OutboxStorePtr store,
          ServiceStats* metrics, DbHealth* health, ClaimPlanner* planner, uint64_t seed,
          SettleNotes notes = {});

  // Fails (and changes nothing) when the settle statement failed: the caller
  // retries the same batch until it applies. *first_retry_ms (optional) gets
  // the shortest retry backoff the settle wrote, if it wrote one: when a row
  // of this batch comes due again without any commit.
  Status Settle(const PublishedBatch& done, std::optional<int64_t>* first_retry_ms = nullptr);

  // Settles a group of batches whose every row was acknowledged
  // (AllAcked), in one statement (OutboxStore::SettleSent): all or nothing;
  // on failure nothing changed and the caller retries the group.
  Status SettleSent(const std::vector<PublishedBatch>& group);

  // `rows` acknowledged rows now wait in the SENT group (SentGrouping):
  // outbox_sent_group_rows, what a crash now would publish again.
  void NoteGroupRows(size_t rows);

  // Beaten after every statement (DbHealth::NoteAndBeat). Null: no heartbeat.
  void set_heartbeat(HeartbeatPtr beat) { beat_ = std::move(beat); }

 private:
  // The settle's statements (`statements` runs them and says how many commits
  // changed rows): between SettleNotes' before_write and after_write, then
  // the health note and heartbeat. What the statements return.
  Status Write(const std::function<Status(int* commits)>& statements);
  // All that follows a write that applied, from its result: Account, LogBatch
  // and NoteFreed.
  void Settled(const PublishedBatch& done, const std::vector<SettleOp>& ops,
               const SettleResult& result);
  void Account(const PublishedBatch& done, const std::vector<SettleOp>& ops,
               const SettleResult& result);
  // The metrics and the DEAD log line of row `i`, a transition that was ours.
  void AccountRow(const PublishedBatch& done, size_t i, const SettleOp& op);
  // A row sent without its traceparent, which was not valid: counted and
  // logged once, when the event is SENT (the router left the header out).
  void NoteInvalidTrace(const OutboxRow& row, const TraceparentCheck& trace);
  void LogBatch(const PublishedBatch& done, const std::vector<SettleOp>& ops,
                const SettleResult& result);
  // The warnings for rows released unattempted with a reason (a full
  // producer queue, taken back from it).
  void LogReleased(const PublishedBatch& done);
  // SettleNotes::freed, after a settle that applied.
  void NoteFreed(const std::vector<SettleOp>& ops, const SettleResult& result) const;

  const ServiceConfig& config_;
  const Router* const router_;
  OutboxStorePtr store_;
  ServiceStats* const metrics_;
  DbHealth* const health_;
  ClaimPlanner* const planner_;
  RetryPolicy retry_;
  const SettleNotes notes_;
  HeartbeatPtr beat_;
};

}  // namespace outbox
