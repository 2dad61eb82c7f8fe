#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "outbox/mysql_connection.h"
#include "outbox/outbox_store.h"

namespace outbox {

// OutboxStore on MySQL 8 / MariaDB 10.6+ through Connector/C++.
// Not thread-safe (except Session()): one per thread, each with its own
// connection. Its sessions must be on a writable primary (docs/RELIABILITY.md
// "Failover and network faults"):
// a server that reports itself read-only at connect is refused, and a
// read-only answer closes the session like a lost connection, so that the
// next call reconnects through mysql.host and finds the promoted server.
// `clock` paces the store's own decisions (when an idle connection is pinged,
// how long the DEAD-heads cache lives); every time in the table comes from the
// database's NOW(). Failures carry a StatusCode (common/status.h):
// kUnavailable for an outage, kPermission for a grant, kSchema for the table.
//
// The implementation is split by job: mysql_store.cc (connection, Run, row
// reading), mysql_store_head.cc (the head read and the one-row claim),
// mysql_store_claim.cc, mysql_store_pass.cc (the per_aggregate
// pass reads), mysql_store_settle.cc, mysql_store_housekeeping.cc (gauges,
// retention).
class MysqlStore : public OutboxStore {
 public:
  explicit MysqlStore(MysqlConfig config, ClockPtr clock = DefaultClock());

  // OutboxStore's calls (documented there); tests/fakes/fake_store.h repeats
  // this list on purpose: both implement the one interface.
  SessionInfo Session() const override;
  Status Connect() override;
  Status HasDue(bool include_expired, bool* due) override;
  Status ReadHead(const HeadQuery& q, HeadRead* out) override;
  Status ClaimRow(int64_t id, const std::string& lease_token, bool* claimed) override;
  Status ClaimDue(int limit, int64_t lease_ms, bool include_expired, ClaimedBatch* out,
                  const ClaimedFn& before_commit) override;
  Status BeginSnapshot() override;
  void EndSnapshot() override;
  Status MinPendingId(std::optional<int64_t>* id) override;
  Status DeadHeads(std::vector<DeadHead>* out) override;
  Status ScanWindow(int64_t from_id, int limit, std::vector<WindowRow>* out) override;
  Status ClaimIds(const std::vector<int64_t>& ids, int64_t lease_ms, const ChooseFn& choose,
                  ClaimedBatch* out, const ClaimedFn& before_commit) override;
  Status Settle(const std::string& lease_token, const std::vector<SettleOp>& ops,
                SettleResult* result) override;
  Status SettleSent(const std::vector<SentGroup>& groups,
                    std::vector<SettleResult>* results) override;
  Status ReadStats(TableStats* out) override;
  Status CountBlockedAggregates(int64_t* out) override;
  Status DeleteSentBatch(int days, int limit, int64_t* cursor, int64_t* deleted,
                         bool* done) override;

  const TableSchema& schema() const { return schema_; }

 private:
  // Where a claim of due NEW rows resumes: after (next_retry_at, id) of the
  // last row the previous claim took (set after a full batch).
  struct ResumePoint {
    bool valid = false;
    int64_t after_id = 0;
    std::string after_at;
  };

  // Runs `fn`, turning SQL exceptions into a Status; rolls back an open
  // transaction and drops a broken connection.
  Status Run(const char* what, const std::function<void()>& fn);
  // Run's first step: closes a session that was closed while idle or whose
  // server turned read-only, so that Run opens a new one.
  void DropStaleSession();
  // Run's cleanup after a failed statement (an error of mysql_errors.h):
  // drops the connection or rolls back the open transaction.
  void RecoverFrom(const SqlError& err);
  void Exec(const std::string& sql);
  void Begin();
  void Rollback();
  // The columns a claim reads; `due_bodies_only`: payload and headers only
  // of rows that are due (NULL for the others). kRowColumns of them: a
  // statement's own columns after them start at kRowColumns + 1.
  std::string SelectColumns(bool due_bodies_only = false) const;
  static constexpr int kRowColumns = 17;
  // One row in SelectColumns() order, and its lease token.
  OutboxRow ReadRow(sql::ResultSet* rs, std::string* lease_token) const;
  // ReadHead's rows: SelectColumns(), then whether the row is SENDING and
  // due, then (ordered, with DEAD heads) the DEAD rows' fingerprint.
  void ReadHeadRows(sql::ResultSet* rs, HeadRead* out, std::string* fingerprint) const;
  // The DEAD rows' fingerprint (count, sum and xor of CRC32 of their ids),
  // as a scalar subquery; and their heads for a fingerprint, from the cache
  // when it has not changed (at most a minute old), else grouped again.
  std::string DeadFingerprintSql() const;
  std::vector<DeadHead> HeadsFor(const std::string& fingerprint);
  // Reads claimed rows (SelectColumns() order); with `next_retry_at`, also
  // the column after them (ClaimNew's next_retry_at) of the last row.
  void ReadRows(sql::ResultSet* rs, ClaimedBatch* out, std::string* next_retry_at = nullptr) const;
  // Inside an open claim transaction: locks expired SENDING rows, then due
  // NEW rows, into *out.
  void ClaimExpired(int limit, int64_t lease_ms, ClaimedBatch* out);
  ResumePoint ClaimNew(int limit, int64_t lease_ms, bool include_expired, ClaimedBatch* out);
  sql::PreparedStatement* PrepareClaimNew(bool resume, int limit, int64_t lease_ms);
  // Inside an open claim transaction: marks the batch's rows SENDING under
  // its lease token, hands it to `before_commit` (if any) and commits.
  void MarkSendingAndCommit(const ClaimedBatch& batch, const ClaimedFn& before_commit);
  // Settle parts: a fenced UPDATE of many rows to one state, and of one row
  // with its own backoff and error. SettleGroup returns the rows it changed.
  int SettleGroup(const std::string& lease_token, const std::vector<int64_t>& ids,
                  const std::string& set, bool find_stale, SettleResult* result);
  void FindStaleSent(const std::string& lease_token, const std::vector<int64_t>& ids,
                     SettleResult* result);
  void SettleSingle(const std::string& lease_token, const SettleOp& op, SettleResult* result);
  // SettleSent's statement for the rows of up to two lease tokens (`second`
  // may be empty); stale ids into *stale_ids.
  using TokenIds = std::pair<std::string, std::vector<int64_t>>;
  void SettleSentTokens(const TokenIds& first, const TokenIds* second,
                        std::vector<int64_t>* stale_ids);
  void ReadWindow(sql::PreparedStatement* ps, std::vector<WindowRow>* out);

  const ClockPtr clock_;
  MysqlConnection conn_;
  TableSchema schema_;
  std::string table_;  // quoted `db`.`table`
  // ScanWindow: the last scan's start, and whether the status index held more
  // unsent rows than one page from there (then the pass reads by primary key).
  int64_t last_scan_from_ = 0;
  bool last_scan_dense_ = false;
  ResumePoint resume_;  // ClaimDue
  // DeadHeads: the last result and a fingerprint of the DEAD rows it came
  // from (count, sum and xor of CRC32 of their ids: an index-only read).
  std::vector<DeadHead> dead_heads_;
  std::string dead_fingerprint_;
  Clock::TimePoint dead_read_at_{};
  bool in_txn_ = false;
  // When the last statement ended: after an idle spell Run() pings first, so
  // a session that the server's wait_timeout (or a proxy) closed meanwhile is
  // replaced quietly instead of failing a statement with "gone away".
  Clock::TimePoint last_used_{};
  // When Run() last asked the server whether it is still writable.
  Clock::TimePoint role_checked_at_{};

  mutable Mutex session_mu_;
  SessionInfo session_ GUARDED_BY(session_mu_);
};

}  // namespace outbox
