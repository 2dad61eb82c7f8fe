#pragma once

// The MySQL / MariaDB error numbers the project reacts to, by name: the
// relay's store (src/outbox/mysql_errors.h classifies them), the binlog
// stream (src/binlog/) and the inbox library (src/inbox/) compare against
// these, each through its own client library. Server numbers are in the
// manuals' "Server Error Message Reference" (MySQL) and "MariaDB Error
// Codes"; 2000-2999 are the client library's own. No error number appears as
// a bare number anywhere else in src/. Header-only.

namespace outbox {

enum class MysqlError : int {
  kConnectorInternal = 0,           // Connector/C++ itself (no server code)
  kTooManyConnections = 1040,       // ER_CON_COUNT_ERROR
  kDbAccessDenied = 1044,           // ER_DBACCESS_DENIED_ERROR
  kAccessDenied = 1045,             // ER_ACCESS_DENIED_ERROR: wrong user or password
  kBadNull = 1048,                  // ER_BAD_NULL_ERROR: a column cannot be null
  kBadDb = 1049,                    // ER_BAD_DB_ERROR: unknown database
  kServerShutdown = 1053,           // ER_SERVER_SHUTDOWN
  kBadField = 1054,                 // ER_BAD_FIELD_ERROR: unknown column
  kDupKeyName = 1061,               // ER_DUP_KEYNAME: the index exists already
  kDupEntry = 1062,                 // ER_DUP_ENTRY: duplicate key
  kParseError = 1064,               // ER_PARSE_ERROR: e.g. a statement a newer server removed
  kTableAccessDenied = 1142,        // ER_TABLEACCESS_DENIED_ERROR
  kColumnAccessDenied = 1143,       // ER_COLUMNACCESS_DENIED_ERROR
  kNoSuchTable = 1146,              // ER_NO_SUCH_TABLE
  kAbortingConnection = 1152,       // ER_ABORTING_CONNECTION
  kLockWaitTimeout = 1205,          // ER_LOCK_WAIT_TIMEOUT
  kDeadlock = 1213,                 // ER_LOCK_DEADLOCK
  kSpecificAccessDenied = 1227,     // ER_SPECIFIC_ACCESS_DENIED_ERROR: a privilege is missing
  kBinlogReadFatal = 1236,          // ER_MASTER_FATAL_ERROR_READING_BINLOG: e.g. a purged position
  kOutOfRange = 1264,               // ER_WARN_DATA_OUT_OF_RANGE
  kOptionPreventsStatement = 1290,  // ER_OPTION_PREVENTS_STATEMENT: e.g. --read-only
  kTruncatedWrongValue = 1292,      // ER_TRUNCATED_WRONG_VALUE
  kQueryInterrupted = 1317,         // ER_QUERY_INTERRUPTED
  kIncorrectString = 1366,          // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD: e.g. not utf8mb4
  kDataTooLong = 1406,              // ER_DATA_TOO_LONG
  kTooManyPrepared = 1461,          // ER_MAX_PREPARED_STMT_COUNT_REACHED
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
  kSlaveSameId = 4052,        // ER_SLAVE_SAME_ID (MariaDB; MySQL sends 1236 with the same words)
};

// Whether an error number, as a client library reports it, is `e`.
constexpr bool IsMysqlError(long long code, MysqlError e) { return code == static_cast<int>(e); }

}  // namespace outbox
