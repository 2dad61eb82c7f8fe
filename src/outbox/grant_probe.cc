#include "outbox/grant_probe.h"

#include <cppconn/statement.h>

#include "outbox/mysql_connection.h"

namespace outbox {

namespace {

// 'user'@'host' of the account the server authenticated us as.
std::string CurrentAccount(MysqlConnection& conn) {
  std::unique_ptr<sql::Statement> st(conn.raw()->createStatement());
  std::unique_ptr<sql::ResultSet> rs(st->executeQuery("SELECT CURRENT_USER()"));
  std::string account = rs->next() ? std::string(rs->getString(1)) : conn.config().user;
  size_t at = account.rfind('@');
  if (at == std::string::npos) return "'" + account + "'";
  return "'" + account.substr(0, at) + "'@'" + account.substr(at + 1) + "'";
}

struct Probe {
  const char* privilege;
  std::string sql;
  const char* why;
  const char* alternative = "";
};

std::vector<Probe> Probes(const std::string& table, const TableSchema& schema, bool need_delete) {
  std::string read_cols =
      "id, aggregate_type, aggregate_id, event_type, event_key, payload, status, retry_count, "
      "next_retry_at, created_at, updated_at";
  std::string write_cols =
      "status = status, retry_count = retry_count, next_retry_at = next_retry_at, "
      "updated_at = updated_at";
  if (schema.has_last_error) {
    read_cols += ", last_error";
    write_cols += ", last_error = last_error";
  }
  if (schema.has_topic) read_cols += ", topic";
  if (schema.has_headers) read_cols += ", headers";
  if (schema.has_aggregate_version) read_cols += ", aggregate_version";
  if (schema.has_traceparent) read_cols += ", traceparent";
  if (schema.has_tracestate) read_cols += ", tracestate";
  if (schema.has_schema_id) read_cols += ", schema_id";
  std::vector<Probe> probes = {
      {"SELECT", "SELECT " + read_cols + " FROM " + table + " WHERE 1 = 0",
       "to scan and claim rows"},
      {"UPDATE", "UPDATE " + table + " SET " + write_cols + " WHERE 1 = 0",
       "to claim and settle rows, and for dead replay"},
  };
  if (need_delete)
    probes.push_back({"DELETE", "DELETE FROM " + table + " WHERE 1 = 0", "by retention.sent_days",
                      " or remove the service's retention block"});
  return probes;
}

// Runs one probe in a transaction that is rolled back (though WHERE 1 = 0
// changes nothing). Throws sql::SQLException.
void RunProbe(sql::Statement& st, const Probe& p) {
  st.execute("START TRANSACTION");
  if (p.sql.rfind("SELECT", 0) == 0) {
    std::unique_ptr<sql::ResultSet> rs(st.executeQuery(p.sql));
    while (rs->next()) {
    }
  } else {
    st.executeUpdate(p.sql);
  }
  st.execute("ROLLBACK");
}

// The line for a probe the server refused.
std::string ProblemLine(MysqlConnection& conn, const Probe& p, const SqlError& err,
                        std::string* account) {
  const std::string name = conn.TableName();
  const std::string privilege = p.privilege;
  if (Is(err, MysqlError::kTableAccessDenied) || Is(err, MysqlError::kColumnAccessDenied)) {
    if (account->empty()) *account = CurrentAccount(conn);
    return "user " + *account + " lacks " + privilege + " on " + name + " (needed " + p.why +
           "): GRANT " + privilege + " ON " + conn.QualifiedTable() + " TO " + *account + ";" +
           p.alternative + " (" + DescribeSqlError(err) + ")";
  }
  if (IsReadOnlyError(err))
    return "the server rejects " + privilege + " on " + name +
           " as read-only: the relay needs a writable primary (" + DescribeSqlError(err) + ")";
  return FormatSqlError(privilege + " on " + name + " failed", err);
}

}  // namespace

Status ProbeGrants(MysqlConnection& conn, const TableSchema& schema, bool need_delete,
                   std::string* granted, std::vector<std::string>* problems) {
  granted->clear();
  try {
    std::string account;
    std::unique_ptr<sql::Statement> st(conn.raw()->createStatement());
    for (const Probe& p : Probes(conn.QualifiedTable(), schema, need_delete)) {
      try {
        RunProbe(*st, p);
        *granted += std::string(granted->empty() ? "" : ", ") + p.privilege;
      } catch (const sql::SQLException& e) {
        const SqlError err = SqlErrorOf(e);
        if (IsConnectionError(err)) throw;
        st->execute("ROLLBACK");
        problems->push_back(ProblemLine(conn, p, err, &account));
      }
    }
  } catch (const sql::SQLException& e) {
    conn.Close();
    return SqlErrorStatus("cannot check the grants on " + conn.TableName(), SqlErrorOf(e));
  }
  return Status::Ok();
}

}  // namespace outbox
