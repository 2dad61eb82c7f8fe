// MysqlStore's housekeeping: the table gauges and retention.

#include <cppconn/statement.h>

#include <algorithm>

#include "outbox/mysql_store.h"

namespace outbox {

Status MysqlStore::ReadStats(TableStats* out) {
  *out = TableStats{};
  return Run("read table gauges", [&] {
    // The rows not due yet come from the same read (a claim takes a row
    // once next_retry_at <= NOW(), as here).
    auto* ps = conn_.Prepare(
        "SELECT COUNT(*), COALESCE(TIMESTAMPDIFF(SECOND, MIN(created_at), NOW()), 0),"
        " TIMESTAMPDIFF(MICROSECOND, NOW(6), MIN(CASE WHEN next_retry_at > NOW() THEN"
        " next_retry_at END)) FROM " +
        table_ + " WHERE status IN ('NEW', 'SENDING')");
    std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
    if (rs->next()) {
      out->backlog = rs->getInt64(1);
      out->oldest_unsent_age_s = std::max<double>(0, static_cast<double>(rs->getInt64(2)));
      const int64_t due_us = rs->getInt64(3);
      if (!rs->wasNull()) out->next_due_in_s = std::max(0.0, static_cast<double>(due_us) / 1e6);
    }
    auto* dead = conn_.Prepare("SELECT COUNT(*) FROM " + table_ + " WHERE status = 'DEAD'");
    std::unique_ptr<sql::ResultSet> drs(dead->executeQuery());
    if (drs->next()) out->dead = drs->getInt64(1);
    // Index ranges around the four known values: cheap, unlike NOT IN.
    auto* unknown = conn_.Prepare(
        "SELECT COUNT(*) FROM " + table_ +
        " WHERE status < 'DEAD' OR (status > 'DEAD' AND status < 'NEW')"
        " OR (status > 'NEW' AND status < 'SENDING') OR (status > 'SENDING' AND status < 'SENT')"
        " OR status > 'SENT'");
    std::unique_ptr<sql::ResultSet> urs(unknown->executeQuery());
    if (urs->next()) out->unknown_status = urs->getInt64(1);
  });
}

Status MysqlStore::CountBlockedAggregates(int64_t* out) {
  *out = 0;
  return Run("count blocked aggregates", [&] {
    // The DEAD heads (few) become a keyed derived table; the unsent rows are
    // read by the status index, as the backlog query reads them, and looked
    // up in it. (On 200,000 unsent rows this took about 1.5x the backlog
    // query; grouping all unsent rows took 3x.)
    auto* blocked = conn_.Prepare(
        "SELECT COUNT(DISTINCT d.aggregate_type, d.aggregate_id) FROM (SELECT aggregate_type,"
        " aggregate_id, MIN(id) AS dead_id FROM " +
        table_ + " WHERE status = 'DEAD' GROUP BY aggregate_type, aggregate_id) d JOIN " + table_ +
        " u ON u.aggregate_type = d.aggregate_type AND u.aggregate_id = d.aggregate_id"
        " AND u.id > d.dead_id WHERE u.status IN ('NEW', 'SENDING')");
    std::unique_ptr<sql::ResultSet> rs(blocked->executeQuery());
    if (rs->next()) *out = rs->getInt64(1);
  });
}

Status MysqlStore::DeleteSentBatch(int days, int limit, int64_t* cursor, int64_t* deleted,
                                   bool* done) {
  *deleted = 0;
  *done = false;
  return Run("retention", [&] {
    // Bound the chunk by primary key first, so the DELETE locks a short,
    // known id range and never scans the table.
    auto* bound = conn_.Prepare(
        "SELECT MAX(id), COUNT(*), SUM(created_at < NOW() - INTERVAL ? DAY) FROM (SELECT id, "
        "created_at FROM " +
        table_ + " FORCE INDEX (PRIMARY) WHERE id > ? ORDER BY id LIMIT ?) c");
    bound->setInt(1, days);
    bound->setInt64(2, *cursor);
    bound->setInt(3, limit);
    std::unique_ptr<sql::ResultSet> rs(bound->executeQuery());
    if (!rs->next() || rs->isNull(1) || rs->getInt64(2) == 0) {
      *done = true;
      return;
    }
    int64_t upper = rs->getInt64(1);
    int64_t old_rows = rs->isNull(3) ? 0 : rs->getInt64(3);
    if (old_rows > 0) {
      auto* del = conn_.Prepare("DELETE FROM " + table_ +
                                " WHERE id > ? AND id <= ? AND status = 'SENT'"
                                " AND created_at < NOW() - INTERVAL ? DAY");
      del->setInt64(1, *cursor);
      del->setInt64(2, upper);
      del->setInt(3, days);
      *deleted = del->executeUpdate();
    } else {
      // ids grow with time: a chunk with nothing old means the rest is newer.
      *done = true;
    }
    *cursor = upper;
  });
}

}  // namespace outbox
