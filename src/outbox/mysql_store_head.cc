// MysqlStore's head read and one-row claim (outbox_store.h): a claim round
// at everyday rates, two statements for a row.

#include <cppconn/statement.h>

#include <algorithm>
#include <utility>

#include "outbox/mysql_store.h"
#include "outbox/mysql_store_sql.h"

namespace outbox {

using mysql_sql::CeilMicros;

Status MysqlStore::ReadHead(const HeadQuery& q, HeadRead* out) {
  *out = HeadRead{};
  return Run("poll", [&] {
    const bool fingerprint = q.ordered && q.dead_heads;
    std::string sql =
        "SELECT " + SelectColumns(q.ordered) + ", status = 'SENDING', next_retry_at <= NOW()";
    if (fingerprint) sql += ", (" + DeadFingerprintSql() + ")";
    sql += " FROM " + table_;
    if (schema_.has_status_index) sql += " FORCE INDEX (" + QuoteIdent(schema_.status_index) + ")";
    sql += " WHERE status IN ('NEW', 'SENDING')";
    if (!q.ordered) sql += " AND next_retry_at <= NOW()";
    sql += " LIMIT ?";
    auto* ps = conn_.Prepare(sql);
    ps->setInt64(1, CeilMicros(q.lease_ms));
    ps->setInt(2, q.limit);
    std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
    std::string dead;
    ReadHeadRows(rs.get(), out, fingerprint ? &dead : nullptr);
    if (!dead.empty()) out->dead_heads = HeadsFor(dead);
  });
}

void MysqlStore::ReadHeadRows(sql::ResultSet* rs, HeadRead* out, std::string* fingerprint) const {
  std::vector<std::pair<OutboxRow, WindowRow>> rows;
  while (rs->next()) {
    OutboxRow r = ReadRow(rs, &out->lease_token);
    WindowRow w{r.id, r.aggregate, rs->getInt(kRowColumns + 1) != 0,
                rs->getInt(kRowColumns + 2) != 0};
    if (fingerprint) *fingerprint = rs->getString(kRowColumns + 3);
    rows.emplace_back(std::move(r), std::move(w));
  }
  // The status index gives (status, next_retry_at) order: id order here.
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first.id < b.first.id; });
  for (auto& [row, window] : rows) {
    out->rows.push_back(std::move(row));
    out->window.push_back(std::move(window));
  }
}

Status MysqlStore::ClaimRow(int64_t id, const std::string& lease_token, bool* claimed) {
  *claimed = false;
  return Run("claim", [&] {
    auto* up = conn_.Prepare("UPDATE " + table_ +
                             " SET status = 'SENDING', next_retry_at = ?, updated_at = NOW()"
                             " WHERE id = ? AND status IN ('NEW', 'SENDING')"
                             " AND next_retry_at <= NOW()");
    up->setString(1, lease_token);
    up->setInt64(2, id);
    *claimed = up->executeUpdate() == 1;
  });
}

}  // namespace outbox
