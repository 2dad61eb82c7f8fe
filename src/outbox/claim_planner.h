#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "config/config.h"
#include "outbox/row.h"

namespace outbox {

// Decides, for ordering: per_aggregate, which rows may be claimed: a row is
// claimable only when every older unsent row of its aggregate is claimed with
// it, earlier in the same batch (publishing then keeps id order per chain).
//
// It reads the unsent rows in primary-key order in "passes": a pass starts at
// the smallest NEW/SENDING id and moves a cursor forward page by page. Every
// aggregate with an unsent row below the cursor that this relay is not
// delivering itself is "blocked" for the rest of the pass, so a later event
// never overtakes it. This needs no index on aggregate_id, and it is safe
// across replicas: a row that another relay holds is SENDING (blocking), and
// ClaimIds re-checks each row under lock.
//
// Thread-safety: OnSettled may be called from any thread; everything else
// from the claiming thread only.
class ClaimPlanner {
 public:
  explicit ClaimPlanner(DeadPolicy dead_policy) : dead_policy_(dead_policy) {}

  bool in_pass() const { return in_pass_; }
  bool pass_exhausted() const { return exhausted_; }
  int64_t cursor() const { return cursor_; }

  // Starts a pass at `min_id`.
  void StartPass(int64_t min_id);
  void EndPass();

  // Starts a claim round: forgets the previous round's candidates.
  void BeginRound();
  // Consumes one scanned page (id order, ids >= cursor). Adds claimable rows
  // to the round's candidates until there are `want`. Advances the cursor;
  // marks the pass exhausted when the page was short.
  void Consume(const std::vector<WindowRow>& page, int page_limit, int want);
  const std::vector<int64_t>& candidates() const { return candidates_; }

  // dead_policy block: the aggregates that have DEAD rows, read after the
  // round's scan. Drops candidates behind a DEAD row and blocks their
  // aggregates. An aggregate whose DEAD row was replayed since the last
  // update stays blocked for the rest of the pass: the replayed row may lie
  // behind the cursor, where this pass no longer looks.
  void UpdateDeadHeads(const std::vector<DeadHead>& dead_heads);

  // Given the candidates that ClaimIds could lock (id order), returns those to
  // claim: per aggregate, the longest prefix of its chain that is all locked.
  // Aggregates whose chain broke are blocked for the rest of the pass.
  std::vector<int64_t> Choose(const std::vector<OutboxRow>& locked);

  // The claimed rows are in flight until OnSettled.
  void OnClaimed(const std::vector<OutboxRow>& rows);
  // `done`: aggregates whose rows all reached a final state the pass may
  // treat as gone (SENT; DEAD under dead_policy skip). `not_done`: aggregates
  // with a row that went back to NEW, DEAD (block) or whose claim was lost.
  void OnSettled(const std::vector<AggregateKey>& done, const std::vector<AggregateKey>& not_done);

  size_t blocked_count() const { return blocked_.size(); }

 private:
  void Block(const AggregateKey& key);

  const DeadPolicy dead_policy_;

  // Claiming thread only.
  bool in_pass_ = false;
  bool exhausted_ = false;
  int64_t cursor_ = 0;
  std::map<AggregateKey, int64_t> dead_min_id_;
  std::map<AggregateKey, std::vector<int64_t>> round_chains_;
  std::vector<int64_t> candidates_;

  // Guarded by mu_ (settled from another thread).
  mutable std::mutex mu_;
  std::set<AggregateKey> blocked_;
  std::map<AggregateKey, int> inflight_;
};

}  // namespace outbox
