#pragma once

#include <string>

#include "common/mysql_error.h"  // MysqlError
#include "common/status.h"

namespace outbox {

// One SQL failure as the server or client library reported it.
struct SqlError {
  int code = 0;
  std::string sql_state;  // five characters, e.g. "42S02"
  std::string message;
};

bool Is(const SqlError& e, MysqlError code);

// The connection is unusable and must be reopened (lost, killed, server gone,
// client library errors).
bool IsConnectionError(const SqlError& e);
// A new session may not have this error: the table or a column is gone (the
// cached schema is stale), or a privilege is missing (a database-level GRANT
// reaches an open session only after it reconnects).
bool NeedsFreshSession(const SqlError& e);
// The server refused a write as read-only (a replica, --read-only,
// super_read_only, --innodb-read-only, a read-only transaction): MariaDB and
// MySQL 8 answer 1290, 1792 or 1836, MySQL also 1874.
bool IsReadOnlyError(const SqlError& e);
// How the caller should see it (StatusCode in common/status.h): outage,
// grants, schema or data.
StatusCode Classify(const SqlError& e);

// What to do about it, as " (...)" to append to a message, or "".
std::string SqlErrorHint(const SqlError& e);
// "MySQL error 2013 (HY000): Lost connection ..." — never contains a password.
std::string DescribeSqlError(const SqlError& e);
// The one formatter for every SQL path (store, admin, grant probe, connect,
// check): "<what>: MySQL error <code> (<SQLSTATE>): <message>< (hint)>".
// `what` says what failed and where, e.g. "claim on order_db.t_outbox".
std::string FormatSqlError(const std::string& what, const SqlError& e);
// FormatSqlError as a Status carrying Classify(e).
Status SqlErrorStatus(const std::string& what, const SqlError& e);

}  // namespace outbox
