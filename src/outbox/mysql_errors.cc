#include "outbox/mysql_errors.h"

namespace outbox {

bool Is(const SqlError& e, MysqlError code) { return IsMysqlError(e.code, code); }

bool IsConnectionError(const SqlError& e) {
  using E = MysqlError;
  const bool client =
      e.code >= static_cast<int>(E::kClientFirst) && e.code <= static_cast<int>(E::kClientLast);
  return client || Is(e, E::kConnectorInternal) || Is(e, E::kConnectionKilled) ||
         Is(e, E::kServerShutdown) || Is(e, E::kAbortingConnection) ||
         Is(e, E::kTooManyConnections) || Is(e, E::kClientIdleTimeout);
}

bool NeedsFreshSession(const SqlError& e) {
  using E = MysqlError;
  return Is(e, E::kDbAccessDenied) || Is(e, E::kBadDb) || Is(e, E::kBadField) ||
         Is(e, E::kTableAccessDenied) || Is(e, E::kColumnAccessDenied) || Is(e, E::kNoSuchTable) ||
         Is(e, E::kSpecificAccessDenied);
}

bool IsReadOnlyError(const SqlError& e) {
  using E = MysqlError;
  return Is(e, E::kOptionPreventsStatement) || Is(e, E::kReadOnlyTransaction) ||
         Is(e, E::kInnodbReadOnly) || Is(e, E::kInnodbReadOnlyMysql);
}

namespace {
bool IsGrantError(const SqlError& e) {
  using E = MysqlError;
  return Is(e, E::kDbAccessDenied) || Is(e, E::kTableAccessDenied) ||
         Is(e, E::kColumnAccessDenied) || Is(e, E::kSpecificAccessDenied);
}
}  // namespace

StatusCode Classify(const SqlError& e) {
  using E = MysqlError;
  if (IsConnectionError(e) || Is(e, E::kLockWaitTimeout) || Is(e, E::kDeadlock) ||
      Is(e, E::kQueryInterrupted) || IsReadOnlyError(e))
    return StatusCode::kUnavailable;  // a failover makes a read-only server a primary again
  if (IsGrantError(e) || Is(e, E::kAccessDenied)) return StatusCode::kPermission;
  if (Is(e, E::kBadDb) || Is(e, E::kBadField) || Is(e, E::kNoSuchTable)) return StatusCode::kSchema;
  if (Is(e, E::kDupEntry) || Is(e, E::kOutOfRange)) return StatusCode::kInvalid;
  return StatusCode::kError;
}

std::string SqlErrorHint(const SqlError& e) {
  using E = MysqlError;
  if (IsGrantError(e))
    return " (the relay's user needs SELECT and UPDATE on the table, and DELETE if "
           "retention.sent_days is set; it reconnects and retries)";
  if (Is(e, E::kAccessDenied))
    return " (check mysql.user, the password behind password_env or password_file, and the "
           "host part of the account)";
  if (Is(e, E::kBadField) || Is(e, E::kNoSuchTable))
    return " (the relay re-reads the table's columns when it reconnects and retries)";
  if (Is(e, E::kSocketConnect) || Is(e, E::kHostConnect))
    return " (is the server running and reachable at mysql.host:mysql.port?)";
  if (Is(e, E::kLockWaitTimeout))
    return " (another transaction held the rows' locks past innodb_lock_wait_timeout; safe to "
           "retry)";
  if (Is(e, E::kDeadlock)) return " (the server rolled the transaction back; safe to retry)";
  if (IsReadOnlyError(e))
    return " (connected to a read-only server: the relay needs a writable primary; it closes this "
           "session and reconnects through mysql.host)";
  // 2013 "during query" is also what a statement waiting on another
  // transaction's row lock gets once mysql.read_timeout_ms passes: say so,
  // since "lost connection" alone points at the network.
  if (Is(e, E::kServerLost) && e.message.find("during query") != std::string::npos)
    return " (no answer within mysql.read_timeout_ms, or the connection broke: rows locked by "
           "another transaction, a slow statement or a server restart)";
  return "";
}

std::string DescribeSqlError(const SqlError& e) {
  return "MySQL error " + std::to_string(e.code) + " (" + e.sql_state + "): " + e.message;
}

std::string FormatSqlError(const std::string& what, const SqlError& e) {
  return what + ": " + DescribeSqlError(e) + SqlErrorHint(e);
}

Status SqlErrorStatus(const std::string& what, const SqlError& e) {
  return Status::Error(Classify(e), FormatSqlError(what, e));
}

}  // namespace outbox
