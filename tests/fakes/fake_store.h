#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "fakes/fake_clock.h"
#include "outbox/outbox_store.h"

namespace outbox::testing {

// One row of the fake table, with the columns the state machine uses.
struct FakeRow {
  OutboxRow row;
  std::string status = "NEW";
  int64_t next_retry_at_ms = 0;  // database time, ms since the epoch
  std::string last_error;
};

// An in-memory t_outbox with the semantics of MysqlStore's statements: due
// rows, leases written into next_retry_at, settles fenced on the lease token.
// "Now" is the fake clock's. Shared by every FakeStore a factory hands out;
// as an OutboxStore itself, its reads are atomic (no snapshot). Thread-safe.
class FakeTable : public OutboxStore {
 public:
  explicit FakeTable(std::shared_ptr<FakeClock> clock) : clock_(std::move(clock)) {}

  // Inserts a NEW row, due now; returns its id.
  int64_t Insert(const std::string& aggregate_type, int64_t aggregate_id,
                 const std::string& event_type, const std::string& payload = "{}");
  FakeRow Get(int64_t id) const;
  // Overwrites a row, as another writer (or a test) would.
  void Put(int64_t id, const FakeRow& row);
  int CountStatus(const std::string& status) const;
  // While down, every store call fails as if the database were unreachable.
  void set_down(bool down);
  bool down() const;
  static Status DownStatus();  // what every call returns while down
  // CountBlockedAggregates advances the clock by `cost`, as a slow query
  // would, and counts its calls.
  void set_blocked_count_cost(std::chrono::milliseconds cost);
  int blocked_counts() const;
  // The next `n` claims fail at their commit, after before_commit ran: the
  // rows go back as they were, as when the connection is lost during COMMIT.
  void FailClaimCommits(int n);
  // A copy of the table as it is now: what a consistent-read snapshot sees.
  std::shared_ptr<FakeTable> Snapshot() const;

  // The OutboxStore operations, on this table.
  Status Connect() override;
  Status HasDue(bool include_expired, bool* due) override;
  Status ReadHead(const HeadQuery& q, HeadRead* out) override;
  Status ClaimRow(int64_t id, const std::string& lease_token, bool* claimed) override;
  Status ClaimDue(int limit, int64_t lease_ms, bool include_expired, ClaimedBatch* out,
                  const ClaimedFn& before_commit) override;
  Status MinPendingId(std::optional<int64_t>* id) override;
  Status DeadHeads(std::vector<DeadHead>* out) override;
  Status ScanWindow(int64_t from_id, int limit, std::vector<WindowRow>* out) override;
  Status ClaimIds(const std::vector<int64_t>& ids, int64_t lease_ms, const ChooseFn& choose,
                  ClaimedBatch* out, const ClaimedFn& before_commit) override;
  Status Settle(const std::string& lease_token, const std::vector<SettleOp>& ops,
                SettleResult* result) override;
  Status ReadStats(TableStats* out) override;
  Status CountBlockedAggregates(int64_t* out) override;
  Status DeleteSentBatch(int days, int limit, int64_t* cursor, int64_t* deleted,
                         bool* done) override;

 private:
  bool Claimable(const FakeRow& r, int64_t now) const;
  void DeadHeadsLocked(std::vector<DeadHead>* out) const;
  OutboxRow AsClaimed(const FakeRow& r) const;
  Status Claim(const std::vector<int64_t>& ids, int64_t lease_ms, ClaimedBatch* out,
               const ClaimedFn& before_commit);

  std::shared_ptr<FakeClock> clock_;
  mutable std::mutex mu_;
  std::map<int64_t, FakeRow> rows_;
  int64_t next_id_ = 1;
  bool down_ = false;
  std::chrono::milliseconds blocked_count_cost_{0};
  int blocked_counts_ = 0;
  int claim_commit_failures_ = 0;
};

// Forwards every call to another store; a fault fake overrides one call.
class OutboxStoreWrapper : public OutboxStore {
 public:
  explicit OutboxStoreWrapper(std::shared_ptr<OutboxStore> target) : target_(std::move(target)) {}

  Status Connect() override { return target_->Connect(); }
  Status HasDue(bool include_expired, bool* due) override {
    return target_->HasDue(include_expired, due);
  }
  Status ReadHead(const HeadQuery& q, HeadRead* out) override { return target_->ReadHead(q, out); }
  Status ClaimRow(int64_t id, const std::string& lease_token, bool* claimed) override {
    return target_->ClaimRow(id, lease_token, claimed);
  }
  Status ClaimDue(int limit, int64_t lease_ms, bool include_expired, ClaimedBatch* out,
                  const ClaimedFn& before_commit) override {
    return target_->ClaimDue(limit, lease_ms, include_expired, out, before_commit);
  }
  Status MinPendingId(std::optional<int64_t>* id) override { return target_->MinPendingId(id); }
  Status DeadHeads(std::vector<DeadHead>* out) override { return target_->DeadHeads(out); }
  Status ScanWindow(int64_t from_id, int limit, std::vector<WindowRow>* out) override {
    return target_->ScanWindow(from_id, limit, out);
  }
  Status ClaimIds(const std::vector<int64_t>& ids, int64_t lease_ms, const ChooseFn& choose,
                  ClaimedBatch* out, const ClaimedFn& before_commit) override {
    return target_->ClaimIds(ids, lease_ms, choose, out, before_commit);
  }
  Status Settle(const std::string& lease_token, const std::vector<SettleOp>& ops,
                SettleResult* result) override {
    return target_->Settle(lease_token, ops, result);
  }
  Status ReadStats(TableStats* out) override { return target_->ReadStats(out); }
  Status CountBlockedAggregates(int64_t* out) override {
    return target_->CountBlockedAggregates(out);
  }
  Status DeleteSentBatch(int days, int limit, int64_t* cursor, int64_t* deleted,
                         bool* done) override {
    return target_->DeleteSentBatch(days, limit, cursor, deleted, done);
  }
  Status BeginSnapshot() override { return target_->BeginSnapshot(); }
  void EndSnapshot() override { target_->EndSnapshot(); }

 private:
  std::shared_ptr<OutboxStore> target_;
};

// An OutboxStore over a FakeTable. Between BeginSnapshot and EndSnapshot the
// pass reads (MinPendingId, DeadHeads, ScanWindow) see the table as it was at
// BeginSnapshot, as MysqlStore's REPEATABLE READ snapshot does.
class FakeStore : public OutboxStoreWrapper {
 public:
  explicit FakeStore(std::shared_ptr<FakeTable> table)
      : OutboxStoreWrapper(table), table_(std::move(table)) {}

  Status BeginSnapshot() override {
    if (table_->down()) return FakeTable::DownStatus();
    snapshot_ = table_->Snapshot();
    return Status::Ok();
  }
  void EndSnapshot() override { snapshot_.reset(); }
  Status MinPendingId(std::optional<int64_t>* id) override {
    return Down() ? FakeTable::DownStatus() : Reads().MinPendingId(id);
  }
  Status DeadHeads(std::vector<DeadHead>* out) override {
    return Down() ? FakeTable::DownStatus() : Reads().DeadHeads(out);
  }
  Status ScanWindow(int64_t from_id, int limit, std::vector<WindowRow>* out) override {
    return Down() ? FakeTable::DownStatus() : Reads().ScanWindow(from_id, limit, out);
  }

 private:
  // A failed read ends the snapshot, as on MySQL.
  bool Down() {
    if (!table_->down()) return false;
    snapshot_.reset();
    return true;
  }
  FakeTable& Reads() { return snapshot_ ? *snapshot_ : *table_; }

  std::shared_ptr<FakeTable> table_;
  std::shared_ptr<FakeTable> snapshot_;
};

// Fails the next `*failures` settles (shared by every store of a factory), as
// a connection lost between publishing and settling would.
class FailingSettleStore : public OutboxStoreWrapper {
 public:
  FailingSettleStore(OutboxStorePtr target, std::shared_ptr<std::atomic<int>> failures)
      : OutboxStoreWrapper(std::move(target)), failures_(std::move(failures)) {}

  Status Settle(const std::string& lease_token, const std::vector<SettleOp>& ops,
                SettleResult* result) override {
    if (failures_->fetch_sub(1) > 0)
      return Status::Unavailable("injected: lost connection to server");
    failures_->store(0);
    return OutboxStoreWrapper::Settle(lease_token, ops, result);
  }

 private:
  std::shared_ptr<std::atomic<int>> failures_;
};

inline StoreFactory FakeStoreFactory(std::shared_ptr<FakeTable> table) {
  return [table] { return std::make_unique<FakeStore>(table); };
}

}  // namespace outbox::testing
