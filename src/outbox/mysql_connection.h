#pragma once

#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>

#include <map>
#include <memory>
#include <string>

#include "common/status.h"
#include "config/config.h"

namespace outbox {

// Which of the SPEC §2 columns (and optional ones) the table has.
struct TableSchema {
  bool table_exists = false;
  std::vector<std::string> missing_columns;  // required columns not found
  bool has_last_error = false;
  int last_error_max_len = 0;
  // The largest value retry_count's integer type holds (INT in SPEC §2): the
  // settle never increments past it, so one row at the limit cannot fail
  // every settle of its batch with "Out of range value" (error 1264).
  int64_t retry_count_max = 2147483647;
  bool has_topic = false;
  bool has_headers = false;
  bool has_status_index = false;  // an index whose first columns are (status, next_retry_at)
  std::string status_index;       // its name (idx_status_retry in SPEC §2)
  std::string Describe() const;
};

// One MySQL/MariaDB connection with a cache of server-side prepared
// statements. Not thread-safe; owned by one thread.
class MysqlConnection {
 public:
  explicit MysqlConnection(MysqlConfig config);
  ~MysqlConnection();

  // Connects if not connected, applying session settings (READ COMMITTED,
  // time_zone when configured). Safe to call repeatedly.
  Status Connect();
  void Close();
  bool connected() const { return conn_ != nullptr; }
  // REQUIRES: connected(). Pings the server: false if the session is gone.
  bool Alive();

  // REQUIRES: connected(). The statement stays owned by the cache.
  sql::PreparedStatement* Prepare(const std::string& sql);
  sql::Connection* raw() { return conn_.get(); }
  const MysqlConfig& config() const { return config_; }

  // `db`.`table`, quoted; identifiers were validated by the config loader.
  std::string QualifiedTable() const;

 private:
  MysqlConfig config_;
  std::unique_ptr<sql::Connection> conn_;
  std::map<std::string, std::unique_ptr<sql::PreparedStatement>> statements_;
};

// Backquotes an identifier, doubling embedded backquotes.
std::string QuoteIdent(const std::string& ident);
// "MySQL error 2013 (HY000): Lost connection ..." — never contains a password.
std::string DescribeSqlError(const sql::SQLException& e);
// True for errors that mean the connection is unusable and must be reopened.
bool IsConnectionError(const sql::SQLException& e);
// True for errors that a new session may not have: the table or a column is
// gone (the cached schema is stale), or a privilege is missing (a database-
// level GRANT reaches an open session only after it reconnects).
bool NeedsFreshSession(const sql::SQLException& e);
// What to do about an error, for messages: e.g. the grants the relay needs.
std::string SqlErrorHint(const sql::SQLException& e);
// For 2013 "Lost connection ... during query": the likely causes, e.g. a row
// lock held past read_timeout_ms; "" for any other error.
std::string ReadTimeoutHint(const sql::SQLException& e);

Status InspectTable(MysqlConnection& conn, TableSchema* out);

// The largest value of an integer column, from information_schema's
// DATA_TYPE ("smallint") and COLUMN_TYPE ("smallint(5) unsigned"); INT's for
// INT, BIGINT and anything else.
int64_t IntegerTypeMax(const std::string& data_type, const std::string& column_type);

// The privileges the relay needs on its table, tried the way the relay uses
// them but on no row (`WHERE 1 = 0`: no row is read, locked or changed):
// SELECT of every column it reads, UPDATE of every column it writes, and
// DELETE when `need_delete` (retention). Appends one line per problem to
// *problems, naming the missing grant and the GRANT statement that fixes it;
// a read-only server is a problem too. *granted lists what works, e.g.
// "SELECT, UPDATE". Returns an error only when the connection fails.
// REQUIRES: schema is InspectTable's result for an existing table.
Status ProbeGrants(MysqlConnection& conn, const TableSchema& schema, bool need_delete,
                   std::string* granted, std::vector<std::string>* problems);

// "Connector/C++ 1.1.12, client library 3.3.20": the versions of the MySQL
// client libraries this process runs with (for `outbox-relay version`).
std::string MysqlClientVersions();

}  // namespace outbox
