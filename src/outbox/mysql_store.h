#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "outbox/mysql_connection.h"
#include "outbox/outbox_store.h"

namespace outbox {

// OutboxStore on MySQL 8 / MariaDB 10.6+ through Connector/C++.
// Not thread-safe: one per thread, each with its own connection.
class MysqlStore : public OutboxStore {
 public:
  explicit MysqlStore(MysqlConfig config);

  Status Connect() override;
  void Disconnect() override;
  Status HasDue(bool include_expired, bool* due) override;
  Status ClaimDue(int limit, int64_t lease_ms, bool include_expired, ClaimedBatch* out) override;
  Status BeginSnapshot() override;
  void EndSnapshot() override;
  Status MinPendingId(std::optional<int64_t>* id) override;
  Status DeadHeads(std::vector<DeadHead>* out) override;
  Status ScanWindow(int64_t from_id, int limit, std::vector<WindowRow>* out) override;
  Status ClaimIds(const std::vector<int64_t>& ids, int64_t lease_ms, const ChooseFn& choose,
                  ClaimedBatch* out) override;
  Status Settle(const std::string& lease_token, const std::vector<SettleOp>& ops,
                SettleResult* result) override;
  Status ReadStats(TableStats* out) override;
  Status CountBlockedAggregates(int64_t* out) override;
  Status DeleteSentBatch(int days, int limit, int64_t* cursor, int64_t* deleted,
                         bool* done) override;

  const TableSchema& schema() const { return schema_; }

 private:
  // Runs `fn`, turning SQL exceptions into a Status; rolls back an open
  // transaction and drops a broken connection.
  template <typename Fn>
  Status Run(const char* what, Fn&& fn);
  void Exec(const std::string& sql);
  std::string SelectColumns() const;
  static std::string Placeholders(size_t n);
  static size_t Bucket(size_t n);
  // Binds `ids` (padded to Bucket(ids.size()) by repeating the last) from
  // parameter index `first`; returns the next free index.
  static unsigned BindIds(sql::PreparedStatement* ps, unsigned first,
                          const std::vector<int64_t>& ids);
  // Reads claimed rows (SelectColumns() order); with `last_col13`, also
  // column 13 of the last row.
  void ReadRows(sql::ResultSet* rs, ClaimedBatch* out, std::string* last_col13 = nullptr) const;
  // Inside an open claim transaction: marks `ids` SENDING under the lease
  // token and commits.
  void MarkSendingAndCommit(const std::string& lease_token, const std::vector<int64_t>& ids);

  MysqlConnection conn_;
  TableSchema schema_;
  std::string table_;  // quoted `db`.`table`
  // ScanWindow: the last scan's start, and whether the status index held more
  // unsent rows than one page from there (then the pass reads by primary key).
  int64_t last_scan_from_ = 0;
  bool last_scan_dense_ = false;
  // ClaimDue: resume the scan of due NEW rows after (next_retry_at, id) of
  // the last row the previous claim took (set after a full batch).
  bool resume_ = false;
  int64_t resume_after_id_ = 0;
  std::string resume_after_at_;
  // DeadHeads: the last result and a fingerprint of the DEAD rows it came
  // from (count, sum and xor of CRC32 of their ids: an index-only read).
  std::vector<DeadHead> dead_heads_;
  std::string dead_fingerprint_;
  std::chrono::steady_clock::time_point dead_read_at_{};
  bool in_txn_ = false;
  // When the last statement ended: after an idle spell Run() pings first, so
  // a session that the server's wait_timeout (or a proxy) closed meanwhile is
  // replaced quietly instead of failing a statement with "gone away".
  std::chrono::steady_clock::time_point last_used_{};
};

}  // namespace outbox
