#pragma once

#include <string>

#include "common/status.h"

namespace outbox {

// The MySQL / MariaDB error codes the relay reacts to, by name. Server codes
// are in the manuals' "Server Error Message Reference" (MySQL) and "MariaDB
// Error Codes"; 2000-2999 are the client library's own. No code appears as a
// bare number anywhere else in src/.
enum class MysqlError : int {
  kConnectorInternal = 0,           // Connector/C++ itself (no server code)
  kTooManyConnections = 1040,       // ER_CON_COUNT_ERROR
  kDbAccessDenied = 1044,           // ER_DBACCESS_DENIED_ERROR
  kAccessDenied = 1045,             // ER_ACCESS_DENIED_ERROR: wrong user or password
  kBadDb = 1049,                    // ER_BAD_DB_ERROR: unknown database
  kServerShutdown = 1053,           // ER_SERVER_SHUTDOWN
  kBadField = 1054,                 // ER_BAD_FIELD_ERROR: unknown column
  kDupEntry = 1062,                 // ER_DUP_ENTRY: duplicate key
  kTableAccessDenied = 1142,        // ER_TABLEACCESS_DENIED_ERROR
  kColumnAccessDenied = 1143,       // ER_COLUMNACCESS_DENIED_ERROR
  kNoSuchTable = 1146,              // ER_NO_SUCH_TABLE
  kAbortingConnection = 1152,       // ER_ABORTING_CONNECTION
  kLockWaitTimeout = 1205,          // ER_LOCK_WAIT_TIMEOUT
  kDeadlock = 1213,                 // ER_LOCK_DEADLOCK
  kSpecificAccessDenied = 1227,     // ER_SPECIFIC_ACCESS_DENIED_ERROR: a privilege is missing
  kOutOfRange = 1264,               // ER_WARN_DATA_OUT_OF_RANGE
  kBinlogReadFatal = 1236,          // ER_MASTER_FATAL_ERROR_READING_BINLOG: e.g. a purged position
  kOptionPreventsStatement = 1290,  // ER_OPTION_PREVENTS_STATEMENT: e.g. --read-only
  kQueryInterrupted = 1317,         // ER_QUERY_INTERRUPTED
  kNoBinaryLogging = 1381,          // ER_NO_BINARY_LOGGING: log_bin is off
  kReadOnlyTransaction = 1792,      // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
  kInnodbReadOnly = 1836,           // ER_READ_ONLY_MODE
  kInnodbReadOnlyMysql = 1874,      // ER_INNODB_READ_ONLY (MySQL: --innodb-read-only)
  kConnectionKilled = 1927,         // ER_CONNECTION_KILLED (MariaDB)
  kClientFirst = 2000,              // CR_* client errors span 2000-2999
  kSocketConnect = 2002,            // CR_CONNECTION_ERROR: local socket, or refused
  kHostConnect = 2003,              // CR_CONN_HOST_ERROR: TCP connect failed
  kServerGone = 2006,               // CR_SERVER_GONE_ERROR
  kServerLost = 2013,               // CR_SERVER_LOST: lost during a query (or read timeout)
  kClientLast = 2999,
  kClientIdleTimeout = 4031,  // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8.0.24+ wait_timeout)
};

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
