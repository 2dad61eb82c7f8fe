#include "outbox/table_schema.h"

#include <algorithm>
#include <map>

#include "outbox/mysql_connection.h"

namespace outbox {

std::string TableSchema::Describe() const {
  std::string s;
  s += has_last_error ? "last_error" : "";
  if (has_topic) s += std::string(s.empty() ? "" : ", ") + "topic";
  if (has_headers) s += std::string(s.empty() ? "" : ", ") + "headers";
  if (has_aggregate_version) s += std::string(s.empty() ? "" : ", ") + "aggregate_version";
  if (has_traceparent) s += std::string(s.empty() ? "" : ", ") + "traceparent";
  if (has_tracestate) s += std::string(s.empty() ? "" : ", ") + "tracestate";
  if (has_schema_id) s += std::string(s.empty() ? "" : ", ") + "schema_id";
  return s.empty() ? "none" : s;
}

int64_t IntegerTypeMax(const std::string& data_type, const std::string& column_type) {
  const bool is_unsigned = column_type.find("unsigned") != std::string::npos;
  if (data_type == "tinyint") return is_unsigned ? 255 : 127;
  if (data_type == "smallint") return is_unsigned ? 65535 : 32767;
  if (data_type == "mediumint") return is_unsigned ? 16777215 : 8388607;
  // INT and anything wider: the relay reads retry_count as a 32-bit int.
  return 2147483647;
}

namespace {

// Runs an information_schema query whose two parameters are the table's
// schema and name. Throws sql::SQLException.
std::unique_ptr<sql::ResultSet> QueryAboutTable(MysqlConnection& conn, const std::string& sql) {
  auto* ps = conn.Prepare(sql);
  ps->setString(1, conn.config().database);
  ps->setString(2, conn.config().table);
  return std::unique_ptr<sql::ResultSet>(ps->executeQuery());
}

// Columns and their optional properties. Throws sql::SQLException.
void ReadColumns(MysqlConnection& conn, TableSchema* out) {
  // information_schema's column names are upper case in MySQL 8's result
  // metadata; the relay reads by position, never by name.
  auto rs = QueryAboutTable(
      conn,
      "SELECT COLUMN_NAME, COALESCE(CHARACTER_MAXIMUM_LENGTH, 0), DATA_TYPE, COLUMN_TYPE "
      "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?");
  std::map<std::string, int64_t> cols;
  while (rs->next()) {
    const std::string name(rs->getString(1));
    const std::string data_type(rs->getString(3));
    cols[name] = rs->getInt64(2);
    if (name == "retry_count")
      out->retry_count_max = IntegerTypeMax(data_type, std::string(rs->getString(4)));
    if (name == "payload") out->payload_is_json = data_type == "json";
    if (name == "headers") out->headers_is_json = data_type == "json";
  }
  out->table_exists = !cols.empty();
  static const char* kRequired[] = {
      "id",     "aggregate_type", "aggregate_id",  "event_type", "event_key", "payload",
      "status", "retry_count",    "next_retry_at", "created_at", "updated_at"};
  if (out->table_exists) {
    for (const char* c : kRequired)
      if (!cols.count(c)) out->missing_columns.push_back(c);
  }
  if (auto it = cols.find("last_error"); it != cols.end()) {
    out->has_last_error = true;
    out->last_error_max_len = static_cast<int>(std::min<int64_t>(it->second, 65535));
    if (out->last_error_max_len <= 0) out->last_error_max_len = 1024;
  }
  out->has_topic = cols.count("topic") > 0;
  out->has_headers = cols.count("headers") > 0;
  out->has_aggregate_version = cols.count("aggregate_version") > 0;
  if (auto it = cols.find("traceparent"); it != cols.end()) {
    out->has_traceparent = true;
    out->traceparent_max_len = static_cast<int>(std::min<int64_t>(it->second, 1 << 30));
  }
  out->has_tracestate = cols.count("tracestate") > 0;
  out->has_schema_id = cols.count("schema_id") > 0;
}

// The first index that starts with (status, next_retry_at). Throws
// sql::SQLException.
void ReadIndexes(MysqlConnection& conn, TableSchema* out) {
  auto irs = QueryAboutTable(
      conn,
      "SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME FROM information_schema.STATISTICS "
      "WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX");
  std::map<std::string, std::vector<std::string>> indexes;
  while (irs->next()) indexes[irs->getString(1)].push_back(irs->getString(3));
  for (const auto& [name, columns] : indexes) {
    if (columns.size() >= 2 && columns[0] == "status" && columns[1] == "next_retry_at" &&
        !out->has_status_index) {
      out->has_status_index = true;
      out->status_index = name;
    }
  }
}

}  // namespace

Status InspectTable(MysqlConnection& conn, TableSchema* out) {
  *out = TableSchema{};
  try {
    ReadColumns(conn, out);
    ReadIndexes(conn, out);
  } catch (const sql::SQLException& e) {
    const SqlError err = SqlErrorOf(e);
    if (IsConnectionError(err)) conn.Close();
    return SqlErrorStatus("cannot inspect " + conn.TableName(), err);
  }
  return Status::Ok();
}

}  // namespace outbox
