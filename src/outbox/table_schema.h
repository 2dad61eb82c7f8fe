#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace outbox {

class MysqlConnection;

// Which of the table's required columns (README.md "The outbox table") and
// optional ones the table has.
struct TableSchema {
  bool table_exists = false;
  std::vector<std::string> missing_columns;  // required columns not found
  bool has_last_error = false;
  int last_error_max_len = 0;
  // The largest value retry_count's integer type holds (INT in
  // sql/t_outbox.sql): the settle never increments past it, so one row at the
  // limit cannot fail every settle of its batch with "Out of range value"
  // (MysqlError::kOutOfRange).
  int64_t retry_count_max = 2147483647;
  bool has_topic = false;
  bool has_headers = false;
  bool has_aggregate_version = false;
  // W3C trace context (docs/DEPLOY.md "Tracing"). A traceparent column
  // narrower than 55 characters cannot hold a valid value: check --connect
  // says so.
  bool has_traceparent = false;
  int traceparent_max_len = 0;
  bool has_tracestate = false;
  bool has_schema_id = false;
  // Columns of MySQL's JSON type (MySQL 8; MariaDB's JSON is LONGTEXT and
  // reports "longtext"): read through JsonAsText (mysql_store_sql.h).
  bool payload_is_json = false;
  bool headers_is_json = false;
  bool has_status_index = false;  // an index whose first columns are (status, next_retry_at)
  std::string status_index;       // its name (idx_status_retry in sql/t_outbox.sql)
  // The optional columns found, e.g. "last_error, topic", or "none".
  std::string Describe() const;
};

// Reads the table's columns and indexes from information_schema.
// REQUIRES: conn.connected().
Status InspectTable(MysqlConnection& conn, TableSchema* out);

// The largest value of an integer column, from information_schema's
// DATA_TYPE ("smallint") and COLUMN_TYPE ("smallint(5) unsigned"); INT's for
// INT, BIGINT and anything else.
int64_t IntegerTypeMax(const std::string& data_type, const std::string& column_type);

}  // namespace outbox
