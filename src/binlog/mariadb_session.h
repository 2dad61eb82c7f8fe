#pragma once

#include <mysql.h>

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/config.h"

namespace outbox {
namespace binlog {

// One connection through MariaDB Connector/C's C API (libmariadb), which the
// replication API (mariadb_rpl.h) needs: Connector/C++ hides its MYSQL*.
// Not thread-safe; owned by one thread, except Shutdown().
class MariadbSession {
 public:
  using Row = std::vector<std::optional<std::string>>;

  MariadbSession();
  ~MariadbSession();
  MariadbSession(const MariadbSession&) = delete;
  MariadbSession& operator=(const MariadbSession&) = delete;

  // Connects without a default database. `read_timeout_s` bounds every wait
  // for the server, including a replication stream's wait for its next event.
  Status Connect(const MysqlConfig& config, int read_timeout_s);
  void Close();
  bool connected() const { return mysql_ != nullptr; }

  // REQUIRES: connected(). Runs `sql`; rows (NULL as nullopt) when it returns
  // any. The error says the MySQL error code and message.
  Status Query(const std::string& sql, std::vector<Row>* rows = nullptr);
  unsigned int last_errno() const { return last_errno_; }

  // 'user'@'host' as the server authenticated us (CURRENT_USER()).
  std::string Account();
  std::string server_info() const;  // e.g. "10.11.19-MariaDB-0+deb12u1"
  bool is_mariadb() const;

  // The connection's socket (-1 when not connected), for a stream that must
  // break its own blocking read from another thread with shutdown(2).
  int socket() const;
  MYSQL* raw() { return mysql_; }

 private:
  MYSQL* mysql_ = nullptr;
  unsigned int last_errno_ = 0;
};

// "user@host:port" for messages (never the password).
std::string Endpoint(const MysqlConfig& config);

}  // namespace binlog
}  // namespace outbox
