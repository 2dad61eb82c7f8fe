#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "outbox/row.h"

namespace outbox {

// A store's sessions so far (docs/RELIABILITY.md "Failover and network faults"): a relay that sees
// `connects` grow knows a session was replaced (after a lost connection or a read-only answer) and
// makes a full claim pass; a change of `server_identity` is a different server behind mysql.host (a
// failover).
struct SessionInfo {
  uint64_t connects = 0;  // successful connects so far
  // Of the last connect: @@server_uuid, else server_id@hostname:port; ""
  // before the first.
  std::string server_identity;
};

// The seam for the database: every SQL statement lives behind it.
// Not thread-safe: each relay thread owns its own store (and connection).
// A failed call's Status carries a StatusCode (common/status.h):
// kUnavailable for an outage (retrying heals it), kPermission for a missing
// grant or a refused login, kSchema for a missing table or column. Every
// implementation is held to the same behaviours by the contract suite in
// tests/integration/store_contract_test.cc.
class OutboxStore {
 public:
  using SessionInfo = outbox::SessionInfo;  // also reachable as OutboxStore::SessionInfo
  virtual ~OutboxStore() = default;

  // Thread-safe (unlike the rest of the store): a metrics or health thread
  // may read it while the owning thread runs statements.
  virtual SessionInfo Session() const { return {}; }

  // Connects (or reconnects) and verifies the table. Cheap when connected.
  virtual Status Connect() = 0;

  // True if a row can be claimed now: NEW and due, or with include_expired
  // also SENDING with an expired lease (one cheap index probe: the database
  // check while claiming is paused, Claimer::Probe; the idle poll is
  // ReadHead).
  virtual Status HasDue(bool include_expired, bool* due) = 0;

  // Both claims take `before_commit`: unless empty, it is called once with
  // the batch (exactly what the call then returns in *out, if it succeeds)
  // after its rows are locked and marked SENDING under the lease and before
  // the transaction commits; not for an empty batch. The relay starts
  // publishing there, so the commit's flush to disk is not on an event's path
  // (docs/DESIGN.md, "Publishing before the claim commits"). The rows stay
  // locked until the commit: no other relay can claim them. A settle under
  // the batch's token must wait until the call returned: under READ
  // COMMITTED its UPDATE does not wait for the locked rows but reads their
  // committed version and skips them (stale). If the commit fails, the call
  // fails, the claim is rolled back and a later settle under the token finds
  // the rows not its own (SettleResult::stale), as after a takeover.
  // `before_commit` must not use this store.
  using ClaimedFn = std::function<void(const ClaimedBatch& claimed)>;

  // --- the head read (both orderings) ----------------------------------------
  // One statement, outside any transaction, reads the head of the table with
  // each row's columns and the lease token: with q.ordered every NEW and
  // SENDING row (in id order once sorted; `window` says which are due), else
  // the due rows (NEW, or SENDING with an expired lease), at most q.limit.
  // A complete read (HeadRead::complete) is consistent on its own: one
  // statement sees one committed state. It is the idle poll and, at
  // everyday rates, all a claim round reads (ClaimRow then claims a row).
  virtual Status ReadHead(const HeadQuery& q, HeadRead* out) = 0;
  // Claims one row that ReadHead returned, if it is still claimable (NEW and
  // due, or SENDING with an expired lease): a conditional UPDATE that
  // commits on its own, writing `lease_token`. *claimed is false when
  // another relay took it first. Publishing starts after it returned.
  virtual Status ClaimRow(int64_t id, const std::string& lease_token, bool* claimed) = 0;
  // --- ordering: none -----------------------------------------------------
  // Claims up to `limit` due NEW rows (and, with include_expired, SENDING rows
  // whose lease expired) with SKIP LOCKED, in one short transaction. After a
  // full batch the next call may continue the scan where this one stopped; a
  // row committed behind that position is found by the next call with
  // include_expired or after a short batch (the relay makes one every second).
  virtual Status ClaimDue(int limit, int64_t lease_ms, bool include_expired, ClaimedBatch* out,
                          const ClaimedFn& before_commit) = 0;

  // --- ordering: per_aggregate ---------------------------------------------
  // The reads of one pass (MinPendingId, DeadHeads, ScanWindow pages) go
  // between BeginSnapshot and EndSnapshot and see one consistent snapshot of
  // the table. Services commit out of id order: read page by page at
  // different moments, a row committed below the pass cursor after its page
  // was read would be missed, while a later event of its aggregate (committed
  // after it) shows up on a later page and would be claimed first. In one
  // snapshot, whoever sees the later event sees the earlier one too.
  // A failed read ends the snapshot. Default: no-op (reads that are atomic).
  virtual Status BeginSnapshot() { return Status::Ok(); }
  virtual void EndSnapshot() {}
  // Smallest id in NEW or SENDING; nullopt when there is none. It reads every
  // unsent entry of the status index: once per pass.
  virtual Status MinPendingId(std::optional<int64_t>* id) = 0;
  // Aggregates with a DEAD row, with their smallest DEAD id.
  virtual Status DeadHeads(std::vector<DeadHead>* out) = 0;
  // NEW and SENDING rows with id >= from_id, in id order, at most `limit`.
  virtual Status ScanWindow(int64_t from_id, int limit, std::vector<WindowRow>* out) = 0;
  // Locks the still-claimable rows among `ids` (SKIP LOCKED), lets `choose`
  // pick which of them to claim (given in id order), and claims those, in one
  // transaction.
  using ChooseFn = std::function<std::vector<int64_t>(const std::vector<OutboxRow>& locked)>;
  virtual Status ClaimIds(const std::vector<int64_t>& ids, int64_t lease_ms, const ChooseFn& choose,
                          ClaimedBatch* out, const ClaimedFn& before_commit) = 0;

  // --- both ------------------------------------------------------------------
  // Applies outcomes to rows claimed under `lease_token`, fenced.
  virtual Status Settle(const std::string& lease_token, const std::vector<SettleOp>& ops,
                        SettleResult* result) = 0;
  // Marks the rows of several claims SENT, each fenced on its own claim's
  // lease token as Settle is, all or none (the settle loop's grouped settle,
  // SentGrouping in src/relay/settle_timing.h); (*results)[i] is groups[i]'s.
  // The default settles one group after the other; MysqlStore writes them
  // in one statement and one commit.
  virtual Status SettleSent(const std::vector<SentGroup>& groups,
                            std::vector<SettleResult>* results) {
    results->assign(groups.size(), SettleResult{});
    for (size_t i = 0; i < groups.size(); ++i) {
      std::vector<SettleOp> ops;
      for (int64_t id : groups[i].ids) ops.push_back({id, SettleKind::kSent, 0, ""});
      Status s = Settle(groups[i].lease_token, ops, &(*results)[i]);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }
  // Backlog, oldest unsent age, DEAD and unknown-status counts.
  virtual Status ReadStats(TableStats* out) = 0;
  // Aggregates whose later events wait behind a DEAD one: a DEAD row and a
  // NEW or SENDING row of the same aggregate with a greater id. Reads every
  // DEAD row, so the caller paces it.
  virtual Status CountBlockedAggregates(int64_t* out) = 0;
  // Deletes up to `limit` SENT rows created more than `days` ago, scanning
  // primary keys from *cursor; advances *cursor. Returns rows deleted.
  virtual Status DeleteSentBatch(int days, int limit, int64_t* cursor, int64_t* deleted,
                                 bool* done) = 0;
};

using OutboxStorePtr = std::unique_ptr<OutboxStore>;
using StoreFactory = std::function<OutboxStorePtr()>;

}  // namespace outbox
