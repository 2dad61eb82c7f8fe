#include "outbox/mysql_errors.h"

#include <catch2/catch.hpp>

using namespace outbox;

namespace {
SqlError Err(MysqlError code, std::string state, std::string message) {
  return SqlError{static_cast<int>(code), std::move(state), std::move(message)};
}
}  // namespace

TEST_CASE(
    "a SQL error is formatted with what failed and the code and SQLSTATE and message and hint",
    "[store][errors]") {
  const SqlError denied =
      Err(MysqlError::kTableAccessDenied, "42000",
          "UPDATE command denied to user 'relay'@'localhost' for table `d`.`t_outbox`");
  CHECK(FormatSqlError("settle on d.t_outbox", denied) ==
        "settle on d.t_outbox: MySQL error 1142 (42000): UPDATE command denied to user "
        "'relay'@'localhost' for table `d`.`t_outbox` (the relay's user needs SELECT and UPDATE on "
        "the table, and DELETE if retention.sent_days is set; it reconnects and retries)");
  const SqlError plain = Err(MysqlError::kDupEntry, "23000", "Duplicate entry 'k' for key 'uk'");
  CHECK(FormatSqlError("insert", plain) ==
        "insert: MySQL error 1062 (23000): Duplicate entry 'k' for key 'uk'");
  // A lost connection is only a lock wait's symptom when it happened during a query.
  CHECK(
      SqlErrorHint(Err(MysqlError::kServerLost, "HY000", "Lost connection to server during query"))
          .find("mysql.read_timeout_ms") != std::string::npos);
  CHECK(
      SqlErrorHint(Err(MysqlError::kServerLost, "HY000", "Lost connection at handshake")).empty());
}

TEST_CASE(
    "SQL errors are classified as outage or grants or schema so readiness can tell them apart",
    "[store][errors]") {
  struct Case {
    MysqlError code;
    StatusCode want;
    bool connection;
    bool fresh_session;
  };
  const Case cases[] = {
      {MysqlError::kSocketConnect, StatusCode::kUnavailable, true, false},
      {MysqlError::kHostConnect, StatusCode::kUnavailable, true, false},
      {MysqlError::kServerGone, StatusCode::kUnavailable, true, false},
      {MysqlError::kServerLost, StatusCode::kUnavailable, true, false},
      {MysqlError::kConnectionKilled, StatusCode::kUnavailable, true, false},
      {MysqlError::kServerShutdown, StatusCode::kUnavailable, true, false},
      {MysqlError::kClientIdleTimeout, StatusCode::kUnavailable, true, false},
      {MysqlError::kLockWaitTimeout, StatusCode::kUnavailable, false, false},
      {MysqlError::kDeadlock, StatusCode::kUnavailable, false, false},
      {MysqlError::kOptionPreventsStatement, StatusCode::kUnavailable, false, false},
      {MysqlError::kAccessDenied, StatusCode::kPermission, false, false},
      {MysqlError::kTableAccessDenied, StatusCode::kPermission, false, true},
      {MysqlError::kColumnAccessDenied, StatusCode::kPermission, false, true},
      {MysqlError::kDbAccessDenied, StatusCode::kPermission, false, true},
      {MysqlError::kNoSuchTable, StatusCode::kSchema, false, true},
      {MysqlError::kBadField, StatusCode::kSchema, false, true},
      {MysqlError::kBadDb, StatusCode::kSchema, false, true},
      {MysqlError::kDupEntry, StatusCode::kInvalid, false, false},
  };
  for (const auto& c : cases) {
    const SqlError e = Err(c.code, "HY000", "x");
    INFO("MySQL error " << e.code);
    CHECK(Classify(e) == c.want);
    CHECK(IsConnectionError(e) == c.connection);
    CHECK(NeedsFreshSession(e) == c.fresh_session);
    const Status s = SqlErrorStatus("probe", e);
    CHECK_FALSE(s.ok());
    CHECK(s.code() == c.want);
  }
  CHECK(Classify(SqlError{1064, "42000", "syntax"}) == StatusCode::kError);
}

TEST_CASE("every read-only answer of MariaDB and MySQL 8 is an outage that asks for a new session",
          "[store][errors]") {
  for (MysqlError code : {MysqlError::kOptionPreventsStatement, MysqlError::kReadOnlyTransaction,
                          MysqlError::kInnodbReadOnly, MysqlError::kInnodbReadOnlyMysql}) {
    const SqlError e =
        Err(code, "HY000", "The MariaDB server is running with the --read-only option");
    INFO("MySQL error " << e.code);
    CHECK(IsReadOnlyError(e));
    CHECK(Classify(e) == StatusCode::kUnavailable);
    CHECK(SqlErrorHint(e).find("connected to a read-only server") != std::string::npos);
  }
  CHECK_FALSE(IsReadOnlyError(Err(MysqlError::kLockWaitTimeout, "HY000", "x")));
}
