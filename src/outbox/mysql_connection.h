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
#include "outbox/mysql_errors.h"
// InspectTable and ProbeGrants take a MysqlConnection; included here so that
// callers of the connection find them where they always were.
#include "outbox/grant_probe.h"
#include "outbox/table_schema.h"

namespace outbox {

// One MySQL/MariaDB connection with a cache of server-side prepared
// statements. Not thread-safe; owned by one thread.
class MysqlConnection {
 public:
  explicit MysqlConnection(MysqlConfig config);
  ~MysqlConnection();

  // Connects if not connected, applying session settings (READ COMMITTED,
  // time_zone when configured). Safe to call repeatedly. A failure carries
  // the StatusCode of the SQL error (kUnavailable, kPermission, ...).
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
  // db.table, unquoted, for messages.
  std::string TableName() const;

 private:
  MysqlConfig config_;
  std::unique_ptr<sql::Connection> conn_;
  std::map<std::string, std::unique_ptr<sql::PreparedStatement>> statements_;
};

// Backquotes an identifier, doubling embedded backquotes.
std::string QuoteIdent(const std::string& ident);
// The code, SQLSTATE and message of a Connector/C++ exception, for the
// formatter and classifiers in outbox/mysql_errors.h.
SqlError SqlErrorOf(const sql::SQLException& e);

}  // namespace outbox
