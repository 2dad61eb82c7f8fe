#include "outbox/outbox_admin.h"

#include <cppconn/statement.h>

#include <limits>

#include "outbox/grant_probe.h"
#include "outbox/mysql_connection.h"

namespace outbox {

namespace {

std::string DeadColumns(const TableSchema& schema) {
  return std::string("id, aggregate_type, aggregate_id, event_type, event_key, retry_count, ") +
         (schema.has_last_error ? "last_error" : "NULL") +
         ", UNIX_TIMESTAMP(created_at), TIMESTAMPDIFF(SECOND, updated_at, NOW()), " +
         (schema.has_traceparent ? "traceparent" : "NULL");
}

DeadRow ReadDead(sql::ResultSet& rs) {
  DeadRow d;
  d.id = rs.getInt64(1);
  d.aggregate = {rs.getString(2), rs.getInt64(3)};
  d.event_type = rs.getString(4);
  d.event_key = rs.getString(5);
  d.retry_count = rs.getInt(6);
  if (!rs.isNull(7)) d.last_error = rs.getString(7);
  d.created_at_unix = rs.isNull(8) ? 0 : static_cast<int64_t>(rs.getDouble(8));
  d.age_s = rs.isNull(9) ? 0 : rs.getInt64(9);
  if (!rs.isNull(10)) d.traceparent = rs.getString(10);
  return d;
}

Status Prepare(MysqlConnection& conn, TableSchema* schema) {
  Status s = conn.Connect();
  if (!s.ok()) return s;
  s = InspectTable(conn, schema);
  if (!s.ok()) return s;
  if (!schema->table_exists)
    return Status::Schema("table " + conn.TableName() +
                          " does not exist (or the user cannot see it)");
  return Status::Ok();
}

}  // namespace

Status ListDead(const MysqlConfig& config, int limit, std::vector<DeadRow>* out) {
  out->clear();
  MysqlConnection conn(config);
  TableSchema schema;
  Status s = Prepare(conn, &schema);
  if (!s.ok()) return s;
  try {
    auto* ps = conn.Prepare("SELECT " + DeadColumns(schema) + " FROM " + conn.QualifiedTable() +
                            " WHERE status = 'DEAD' ORDER BY id LIMIT ?");
    ps->setInt(1, limit);
    std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
    while (rs->next()) out->push_back(ReadDead(*rs));
  } catch (const sql::SQLException& e) {
    return SqlErrorStatus("dead list", SqlErrorOf(e));
  }
  return Status::Ok();
}

namespace {

// The DEAD rows a replay selects: its ids, then its event type, are bound in
// that order (then the chunk's lower id, ReplayChunk).
std::string DeadWhere(const DeadSelector& selector) {
  std::string where = "status = 'DEAD'";
  if (!selector.ids.empty()) {
    where += " AND id IN (";
    for (size_t i = 0; i < selector.ids.size(); ++i) where += i ? ",?" : "?";
    where += ")";
  }
  if (selector.event_type) where += " AND event_type = ?";
  return where;
}

// One chunk of a replay: the rows of `select` (DeadWhere, after id `after`)
// set NEW, in one transaction, unless `dry_run`. Throws sql::SQLException.
std::vector<DeadRow> ReplayChunk(MysqlConnection& conn, sql::Statement& st,
                                 const std::string& select, const DeadSelector& selector,
                                 bool dry_run, int64_t after) {
  if (!dry_run) st.execute("START TRANSACTION");
  auto* ps = conn.Prepare(select);
  unsigned i = 1;
  for (int64_t id : selector.ids) ps->setInt64(i++, id);
  if (selector.event_type) ps->setString(i++, *selector.event_type);
  ps->setInt64(i++, after);
  std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
  std::vector<DeadRow> chunk;
  while (rs->next()) chunk.push_back(ReadDead(*rs));
  if (!dry_run && !chunk.empty()) {
    auto* up = conn.Prepare("UPDATE " + conn.QualifiedTable() +
                            " SET status = 'NEW', retry_count = 0, next_retry_at = NOW(),"
                            " updated_at = NOW() WHERE id = ? AND status = 'DEAD'");
    for (const auto& d : chunk) {
      up->setInt64(1, d.id);
      up->executeUpdate();
    }
  }
  if (!dry_run) st.execute("COMMIT");
  return chunk;
}

}  // namespace

Status ReplayDead(const MysqlConfig& config, const DeadSelector& selector, bool dry_run,
                  std::vector<DeadRow>* changed) {
  changed->clear();
  MysqlConnection conn(config);
  TableSchema schema;
  Status s = Prepare(conn, &schema);
  if (!s.ok()) return s;
  const std::string select = "SELECT " + DeadColumns(schema) + " FROM " + conn.QualifiedTable() +
                             " WHERE " + DeadWhere(selector) +
                             " AND id > ? ORDER BY id LIMIT 1000" + (dry_run ? "" : " FOR UPDATE");
  std::unique_ptr<sql::Statement> st(conn.raw()->createStatement());
  try {
    // Chunks of 1000 keep each transaction's locks short on a large replay.
    int64_t after = std::numeric_limits<int64_t>::min();
    for (;;) {
      std::vector<DeadRow> chunk = ReplayChunk(conn, *st, select, selector, dry_run, after);
      for (auto& d : chunk) changed->push_back(std::move(d));
      if (chunk.size() < 1000) break;
      after = changed->back().id;
    }
  } catch (const sql::SQLException& e) {
    try {
      st->execute("ROLLBACK");
    } catch (const sql::SQLException&) {
    }
    return SqlErrorStatus("dead replay", SqlErrorOf(e));
  }
  return Status::Ok();
}

Status CheckTableAccess(const MysqlConfig& config, bool need_delete, TableAccess* out) {
  *out = TableAccess{};
  MysqlConnection conn(config);
  Status s = conn.Connect();
  if (s.ok()) s = InspectTable(conn, &out->schema);
  if (!s.ok() || !out->schema.table_exists || !out->schema.missing_columns.empty()) return s;
  s = ProbeGrants(conn, out->schema, need_delete, &out->granted, &out->grant_problems);
  if (!s.ok()) out->grant_problems.push_back(s.message());
  return Status::Ok();
}

}  // namespace outbox
