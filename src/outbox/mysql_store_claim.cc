// MysqlStore's claims: ClaimDue (ordering: none) and ClaimIds (the
// per_aggregate planner's choice), each one short transaction.

#include <cppconn/statement.h>

#include <algorithm>

#include "outbox/mysql_store.h"
#include "outbox/mysql_store_sql.h"

namespace outbox {

using mysql_sql::BindIds;
using mysql_sql::Bucket;
using mysql_sql::CeilMicros;
using mysql_sql::Placeholders;

Status MysqlStore::ClaimDue(int limit, int64_t lease_ms, bool include_expired, ClaimedBatch* out,
                            const ClaimedFn& before_commit) {
  *out = ClaimedBatch{};
  return Run("claim", [&] {
    Begin();
    // Expired leases first: a relay that died must not starve behind new work.
    if (include_expired) ClaimExpired(limit, lease_ms, out);
    ResumePoint next;
    const int left = limit - static_cast<int>(out->rows.size());
    if (left > 0) next = ClaimNew(left, lease_ms, include_expired, out);
    resume_ = ResumePoint{};
    if (out->rows.empty()) {
      Rollback();
      return;
    }
    MarkSendingAndCommit(*out, before_commit);
    resume_ = next;
  });
}

void MysqlStore::ClaimExpired(int limit, int64_t lease_ms, ClaimedBatch* out) {
  auto* ps = conn_.Prepare("SELECT " + SelectColumns() + " FROM " + table_ +
                           " WHERE status = 'SENDING' AND next_retry_at <= NOW()"
                           " ORDER BY next_retry_at, id LIMIT ? FOR UPDATE SKIP LOCKED");
  ps->setInt64(1, CeilMicros(lease_ms));
  ps->setInt(2, limit);
  std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
  ReadRows(rs.get(), out);
}

sql::PreparedStatement* MysqlStore::PrepareClaimNew(bool resume, int limit, int64_t lease_ms) {
  const std::string cols = "SELECT " + SelectColumns() +
                           ", DATE_FORMAT(next_retry_at, '%Y-%m-%d %H:%i:%s') FROM " + table_;
  sql::PreparedStatement* ps;
  if (resume) {
    ps = conn_.Prepare(cols + " FORCE INDEX (" + QuoteIdent(schema_.status_index) +
                       ") WHERE status = 'NEW' AND ((next_retry_at = ? AND id > ?) OR"
                       " (next_retry_at > ? AND next_retry_at <= NOW()))"
                       " ORDER BY next_retry_at, id LIMIT ? FOR UPDATE SKIP LOCKED");
    ps->setInt64(1, CeilMicros(lease_ms));
    ps->setString(2, resume_.after_at);
    ps->setInt64(3, resume_.after_id);
    ps->setString(4, resume_.after_at);
    ps->setInt(5, limit);
  } else {
    ps = conn_.Prepare(cols +
                       " WHERE status = 'NEW' AND next_retry_at <= NOW()"
                       " ORDER BY next_retry_at, id LIMIT ? FOR UPDATE SKIP LOCKED");
    ps->setInt64(1, CeilMicros(lease_ms));
    ps->setInt(2, limit);
  }
  return ps;
}

MysqlStore::ResumePoint MysqlStore::ClaimNew(int limit, int64_t lease_ms, bool include_expired,
                                             ClaimedBatch* out) {
  // A claimed row's old entry stays in the NEW range of the status index,
  // delete-marked, until purge removes it, and a scan from the start of the
  // range walks over all of them (~1 us each: tens of ms per claim while a
  // backlog drains). So a claim resumes after the last row the previous one
  // took, in index order. A claim with include_expired (every second) or
  // after a short batch scans from the start again, which picks up rows
  // committed behind that position (a smaller id in the same second, a row
  // another relay skipped and then released).
  const bool resume = resume_.valid && !include_expired && schema_.has_status_index;
  std::unique_ptr<sql::ResultSet> rs(PrepareClaimNew(resume, limit, lease_ms)->executeQuery());
  ClaimedBatch fresh;
  ResumePoint next;
  ReadRows(rs.get(), &fresh, &next.after_at);
  // Resume only after a full batch; a short one reached the range's end.
  if (static_cast<int>(fresh.rows.size()) == limit) {
    next.valid = true;
    next.after_id = fresh.rows.back().id;
  }
  // Both SELECTs ran in one transaction a moment apart; the later deadline
  // is the token for all (a second at most beyond the first's lease).
  if (!fresh.rows.empty()) {
    if (out->lease_token < fresh.lease_token) out->lease_token = fresh.lease_token;
    out->reclaimed += fresh.reclaimed;
    for (auto& r : fresh.rows) out->rows.push_back(std::move(r));
  }
  return next;
}

void MysqlStore::MarkSendingAndCommit(const ClaimedBatch& batch, const ClaimedFn& before_commit) {
  std::vector<int64_t> ids;
  ids.reserve(batch.rows.size());
  for (const auto& r : batch.rows) ids.push_back(r.id);
  auto* up = conn_.Prepare("UPDATE " + table_ +
                           " SET status = 'SENDING', next_retry_at = ?, updated_at = NOW()"
                           " WHERE id IN (" +
                           Placeholders(Bucket(ids.size())) + ")");
  up->setString(1, batch.lease_token);
  BindIds(up, 2, ids);
  up->executeUpdate();
  // The rows are locked and SENDING in this transaction: publishing may
  // start while the COMMIT below waits for its flush (outbox_store.h).
  if (before_commit) before_commit(batch);
  Exec("COMMIT");
  in_txn_ = false;
}

Status MysqlStore::ClaimIds(const std::vector<int64_t>& ids, int64_t lease_ms,
                            const ChooseFn& choose, ClaimedBatch* out,
                            const ClaimedFn& before_commit) {
  *out = ClaimedBatch{};
  if (ids.empty()) return Status::Ok();
  return Run("claim", [&] {
    Begin();
    auto* ps = conn_.Prepare("SELECT " + SelectColumns() + " FROM " + table_ + " WHERE id IN (" +
                             Placeholders(Bucket(ids.size())) +
                             ") AND status IN ('NEW', 'SENDING') AND next_retry_at <= NOW()"
                             " ORDER BY id FOR UPDATE SKIP LOCKED");
    ps->setInt64(1, CeilMicros(lease_ms));
    BindIds(ps, 2, ids);
    std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
    ClaimedBatch locked;
    ReadRows(rs.get(), &locked);
    std::vector<int64_t> chosen = choose(locked.rows);
    std::sort(chosen.begin(), chosen.end());
    out->lease_token = locked.lease_token;
    for (auto& r : locked.rows) {
      if (std::binary_search(chosen.begin(), chosen.end(), r.id)) {
        if (r.reclaimed) ++out->reclaimed;
        out->rows.push_back(std::move(r));
      }
    }
    if (out->rows.empty()) {
      *out = ClaimedBatch{};
      Rollback();
      return;
    }
    MarkSendingAndCommit(*out, before_commit);
  });
}

}  // namespace outbox
