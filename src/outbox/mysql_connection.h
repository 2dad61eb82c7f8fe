#pragma once

#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/config.h"
#include "outbox/mysql_errors.h"
// InspectTable and ProbeGrants take a MysqlConnection; included here so that
// callers of the connection find them where they always were.
#include "outbox/grant_probe.h"
#include "outbox/table_schema.h"

namespace outbox {

// What a connect learnt about the server (SHOW GLOBAL VARIABLES, which needs
// no privilege and leaves out variables the server does not have: MariaDB
// has neither super_read_only nor server_uuid).
struct ServerState {
  // @@server_uuid where it exists, else "server_id@hostname:port": what
  // changes when a failover puts another server behind mysql.host.
  std::string identity;
  // The read-only switches that are ON ("read_only", "super_read_only",
  // "innodb_read_only"); empty on a writable primary.
  std::vector<std::string> read_only;
};

// The server ends a relay session idle this long (seconds): a session the
// relay gave up on cannot keep its row locks for the default 8 hours.
inline constexpr int kSessionWaitTimeoutS = 60;

// One MySQL/MariaDB connection with a cache of server-side prepared
// statements. Not thread-safe; owned by one thread.
class MysqlConnection {
 public:
  explicit MysqlConnection(MysqlConfig config);
  ~MysqlConnection();

  // Connects if not connected, applying session settings (READ COMMITTED,
  // wait_timeout kSessionWaitTimeoutS, time_zone when configured), and reads server() anew. Safe to
  // call repeatedly. A failure carries the StatusCode of the SQL error (kUnavailable, kPermission,
  // ...). A read-only server is connected to: whether that is acceptable is the caller's decision
  // (MysqlStore refuses it, `check` and the dead-letter commands read on).
  Status Connect();
  void Close();
  bool connected() const { return conn_ != nullptr; }
  // REQUIRES: connected(). Reads @@GLOBAL.read_only (one round trip, no
  // privilege needed; MySQL turns it on with super_read_only): false if the
  // server was demoted since the connect, or the session is gone.
  bool StillWritable();

  // REQUIRES: connected(). The statement stays owned by the cache.
  sql::PreparedStatement* Prepare(const std::string& sql);
  sql::Connection* raw() { return conn_.get(); }
  const MysqlConfig& config() const { return config_; }
  // As read at the last successful Connect().
  const ServerState& server() const { return server_; }

  // `db`.`table`, quoted; identifiers were validated by the config loader.
  std::string QualifiedTable() const;
  // db.table, unquoted, for messages.
  std::string TableName() const;

 private:
  MysqlConfig config_;
  std::unique_ptr<sql::Connection> conn_;
  ServerState server_;
  std::map<std::string, std::unique_ptr<sql::PreparedStatement>> statements_;
};

// Backquotes an identifier, doubling embedded backquotes.
std::string QuoteIdent(const std::string& ident);
// The code, SQLSTATE and message of a Connector/C++ exception, for the
// formatter and classifiers in outbox/mysql_errors.h.
SqlError SqlErrorOf(const sql::SQLException& e);

}  // namespace outbox
