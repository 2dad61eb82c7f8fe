// MysqlStore's reads for one per_aggregate pass (outbox_store.h): a
// consistent snapshot, the smallest unsent id, the DEAD heads and the window
// of unsent rows.

#include <cppconn/statement.h>

#include <algorithm>

#include "outbox/mysql_store.h"

namespace outbox {

Status MysqlStore::BeginSnapshot() {
  return Run("begin pass snapshot", [&] {
    if (in_txn_) Exec("ROLLBACK");
    // The session runs READ COMMITTED (a fresh view per statement); the
    // pass needs one view for all its statements.
    Exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    Exec("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY");
    in_txn_ = true;
  });
}

void MysqlStore::EndSnapshot() {
  if (in_txn_ && conn_.connected()) {
    try {
      Exec("COMMIT");
    } catch (const sql::SQLException&) {
      conn_.Close();
    }
  }
  in_txn_ = false;
}

Status MysqlStore::MinPendingId(std::optional<int64_t>* id) {
  return Run("probe", [&] {
    auto* ps =
        conn_.Prepare("SELECT MIN(id) FROM " + table_ + " WHERE status IN ('NEW', 'SENDING')");
    std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
    id->reset();
    if (rs->next() && !rs->isNull(1)) *id = rs->getInt64(1);
  });
}

std::string MysqlStore::DeadFingerprintSql() const {
  return "SELECT CONCAT(COUNT(*), '/', COALESCE(SUM(id), 0), '/', "
         "COALESCE(BIT_XOR(CRC32(id)), 0)) FROM " +
         table_ + " WHERE status = 'DEAD'";
}

std::vector<DeadHead> MysqlStore::HeadsFor(const std::string& fingerprint) {
  // Grouping the DEAD rows by aggregate reads every one of them from the
  // table (1-2 s per pass with 100,000 DEAD rows after an incident). The
  // set changes rarely, so first a fingerprint of it from the status index
  // alone (about a tenth of that); the grouping runs only when it changed,
  // and at least once a minute.
  const auto now = clock_->Now();
  if (!dead_fingerprint_.empty() && fingerprint == dead_fingerprint_ &&
      now - dead_read_at_ < std::chrono::minutes(1))
    return dead_heads_;
  dead_fingerprint_.clear();
  dead_heads_.clear();
  if (fingerprint.rfind("0/", 0) != 0) {
    auto* ps = conn_.Prepare("SELECT aggregate_type, aggregate_id, MIN(id) FROM " + table_ +
                             " WHERE status = 'DEAD' GROUP BY aggregate_type, aggregate_id");
    std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
    while (rs->next())
      dead_heads_.push_back({AggregateKey{rs->getString(1), rs->getInt64(2)}, rs->getInt64(3)});
  }
  dead_fingerprint_ = fingerprint;
  dead_read_at_ = now;
  return dead_heads_;
}

Status MysqlStore::DeadHeads(std::vector<DeadHead>* out) {
  out->clear();
  return Run("read DEAD aggregates", [&] {
    std::unique_ptr<sql::ResultSet> frs(conn_.Prepare(DeadFingerprintSql())->executeQuery());
    *out = HeadsFor(frs->next() ? frs->getString(1) : "");
  });
}

void MysqlStore::ReadWindow(sql::PreparedStatement* ps, std::vector<WindowRow>* out) {
  std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
  while (rs->next()) {
    WindowRow w;
    w.id = rs->getInt64(1);
    w.aggregate.type = rs->getString(2);
    w.aggregate.id = rs->getInt64(3);
    w.sending = rs->getInt(4) != 0;
    w.due = rs->getInt(5) != 0;
    out->push_back(std::move(w));
  }
}

Status MysqlStore::ScanWindow(int64_t from_id, int limit, std::vector<WindowRow>* out) {
  out->clear();
  return Run("scan", [&] {
    // The planner needs every unsent row from the cursor on, in id order, to
    // know which events head their aggregates. Two ways to read them:
    // - few unsent rows (the steady state): the status index lists them all
    //   in one short range read, however many SENT rows lie between them (one
    //   old row waiting out a 5-minute backoff must not make every pass walk
    //   the primary key across everything written since);
    // - a backlog larger than a page: a primary-key range from the cursor,
    //   where nearly every row is unsent. Later pages of such a pass go there
    //   directly.
    const std::string columns =
        "SELECT id, aggregate_type, aggregate_id, status = 'SENDING', next_retry_at <= NOW() "
        "FROM " +
        table_;
    bool continuing_dense = last_scan_dense_ && from_id > last_scan_from_;
    last_scan_from_ = from_id;
    if (!continuing_dense && schema_.has_status_index) {
      auto* ps = conn_.Prepare(columns + " FORCE INDEX (" + QuoteIdent(schema_.status_index) +
                               ") WHERE status IN ('NEW', 'SENDING') AND id >= ? LIMIT ?");
      ps->setInt64(1, from_id);
      ps->setInt(2, limit + 1);
      ReadWindow(ps, out);
      last_scan_dense_ = static_cast<int>(out->size()) > limit;
      if (!last_scan_dense_) {
        std::sort(out->begin(), out->end(),
                  [](const WindowRow& a, const WindowRow& b) { return a.id < b.id; });
        return;
      }
      out->clear();
    }
    auto* ps = conn_.Prepare(columns +
                             " FORCE INDEX (PRIMARY) WHERE id >= ? AND status IN ('NEW', 'SENDING')"
                             " ORDER BY id LIMIT ?");
    ps->setInt64(1, from_id);
    ps->setInt(2, limit);
    ReadWindow(ps, out);
  });
}

}  // namespace outbox
