#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/mutex.h"
#include "config/config.h"
#include "outbox/row.h"

namespace outbox {

// A claimed row whose settle is recorded: `done` when it reached a final
// state the pass may treat as gone (SENT; DEAD under dead_policy skip), not
// when it went back to NEW, became DEAD under block, or was no longer ours.
struct SettledRow {
  int64_t id = 0;
  AggregateKey aggregate;
  bool done = false;
};

// Decides, for ordering: per_aggregate, which rows may be claimed: a row is
// claimable only when every older unsent row of its aggregate is either
// claimed with it, earlier in the same batch, or was delivered by this relay
// (publishing keeps id order per chain).
//
// It reads the unsent rows in primary-key order in "passes": a pass starts at
// the smallest NEW/SENDING id and moves a cursor forward page by page, all
// from one snapshot of the table. Every aggregate with an unsent row below
// the cursor that cannot be claimed now (backing off, leased by another
// relay, behind a DEAD row, or failed in this relay) is "blocked" for the
// rest of the pass, so a later event never overtakes it. A row whose older
// event this relay itself is still delivering is "deferred": kept in memory
// and claimed once the broker acknowledged that event (its first copy is in
// Kafka: order holds even if its settle then fails and a duplicate follows),
// without waiting for the next pass. This needs no index on aggregate_id, and
// it is safe across replicas: a row that another relay holds is SENDING
// (blocking), and ClaimIds re-checks each row under lock.
//
// Thread-safety: OnDelivered, OnSettled and the counts may be called from any
// thread; everything else from the claiming thread only.
class ClaimPlanner {
 public:
  // `max_deferred`: rows kept waiting behind this relay's own deliveries;
  // beyond it their aggregates are blocked until the next pass instead.
  explicit ClaimPlanner(DeadPolicy dead_policy, size_t max_deferred = 20000)
      : dead_policy_(dead_policy), max_deferred_(max_deferred) {}

  bool in_pass() const { return in_pass_; }
  // Nothing left to read in this pass: the last page was short and all of it
  // is consumed. Deferred rows may still become ready.
  bool pass_exhausted() const { return page_short_ && buffered_.empty(); }
  int64_t cursor() const { return cursor_; }

  // Starts a pass at `min_id` with the snapshot's DEAD rows (dead_policy
  // block; ignored under skip).
  void StartPass(int64_t min_id, const std::vector<DeadHead>& dead_heads = {});
  void EndPass();

  // Starts a claim round: forgets the previous round's candidates and makes
  // deferred rows whose older events are now delivered candidates (up to
  // `want`).
  void BeginRound(int want);
  // Consumes rows of the last page left over when the round filled up, then
  // one scanned page (id order, ids >= cursor), adding claimable rows to the
  // round's candidates until there are `want`; what is left is kept for the
  // next round. Advances the cursor past the page; a page shorter than
  // `page_limit` is the pass's last.
  void ConsumeBuffered(int want);
  void Consume(std::vector<WindowRow> page, int page_limit, int want);
  bool full(int want) const { return static_cast<int>(candidates_.size()) >= want; }
  const std::vector<int64_t>& candidates() const { return candidates_; }
  // Rows deferred behind this relay's own deliveries.
  size_t deferred_count() const;
  // This relay's own rows from OnClaimed until OnSettled.
  size_t held() const;

  // Given the candidates that ClaimIds could lock (id order), returns those to
  // claim: per aggregate, the longest prefix of its chain that is all locked.
  // Aggregates whose chain broke are blocked for the rest of the pass.
  std::vector<int64_t> Choose(const std::vector<OutboxRow>& locked);

  // The claimed rows are in flight until OnSettled.
  void OnClaimed(const std::vector<OutboxRow>& rows);
  // Rows the broker acknowledged, before their settle commits: the first copy
  // of each is in Kafka, so their aggregates' deferred rows may be claimed at
  // once rather than after the settle's commit (docs/ORDERING.md). They stay
  // this relay's own rows in flight (no blocker to a pass) until OnSettled.
  // True if a deferred row became claimable: the claim loop should look. That
  // includes a row deferred by a pass that has ended since (a round that
  // claims nothing ends its pass): the next pass claims it.
  bool OnDelivered(const std::vector<SettledRow>& rows);
  void OnSettled(const std::vector<SettledRow>& rows);

  // The current pass, or the last one until the next starts or NothingDue,
  // blocked an aggregate behind a row another relay holds: SENDING under a
  // live lease, or locked by its claim (Choose). That relay's settle frees
  // it, and the wake-up by that commit may come before the settle shows (the
  // commit race), so the claim loop looks once more (ClaimScheduler).
  bool held_by_peer() const { return held_by_peer_; }
  // A head read found no due row, so none waits behind another relay.
  void NothingDue() { held_by_peer_ = false; }

 private:
  void Block(const AggregateKey& key) REQUIRES(mu_);
  void Take(const WindowRow& w) REQUIRES(mu_);
  void Uncount(const AggregateKey& key) REQUIRES(mu_);
  void AddCandidate(const AggregateKey& key, int64_t id);

  const DeadPolicy dead_policy_;
  const size_t max_deferred_;

  // Claiming thread only.
  bool in_pass_ = false;
  bool page_short_ = false;
  int64_t cursor_ = 0;
  std::vector<WindowRow> buffered_;  // the unconsumed rest of the last page
  size_t buffered_pos_ = 0;
  std::unordered_map<AggregateKey, int64_t, AggregateKeyHash> dead_min_id_;
  // The round's chains, in the order their aggregates first appeared.
  std::unordered_map<AggregateKey, size_t, AggregateKeyHash> chain_of_;
  std::vector<std::pair<AggregateKey, std::vector<int64_t>>> round_chains_;
  std::vector<int64_t> candidates_;
  bool held_by_peer_ = false;

  // Guarded by mu_ (settled from another thread).
  mutable Mutex mu_;
  std::unordered_set<AggregateKey, AggregateKeyHash> blocked_ GUARDED_BY(mu_);
  std::unordered_map<AggregateKey, int, AggregateKeyHash> inflight_ GUARDED_BY(mu_);
  std::unordered_set<int64_t> inflight_ids_ GUARDED_BY(mu_);
  // In inflight_ids_ but no longer counted in inflight_ (OnDelivered).
  std::unordered_set<int64_t> delivered_ids_ GUARDED_BY(mu_);
  std::unordered_map<AggregateKey, std::vector<int64_t>, AggregateKeyHash> deferred_
      GUARDED_BY(mu_);
  size_t deferred_rows_ GUARDED_BY(mu_) = 0;
  // The aggregates deferred_ held when the last pass ended, until the next
  // starts (OnDelivered).
  std::unordered_set<AggregateKey, AggregateKeyHash> last_pass_deferred_ GUARDED_BY(mu_);
};

}  // namespace outbox
