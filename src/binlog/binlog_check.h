#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "binlog/binlog_options.h"
#include "binlog/mariadb_session.h"
#include "common/status.h"
#include "config/config.h"

namespace outbox {
namespace binlog {

// What a server says about its binary log, read with ordinary statements.
struct BinlogServerInfo {
  std::string version;  // e.g. "10.11.19-MariaDB-0+deb12u1"
  bool is_mariadb = false;
  bool log_bin = false;   // @@GLOBAL.log_bin
  std::string format;     // @@GLOBAL.binlog_format: ROW | MIXED | STATEMENT
  std::string checksum;   // @@GLOBAL.binlog_checksum: CRC32 | NONE
  std::string file;       // current binary log (SHOW MASTER STATUS)
  uint64_t position = 0;  // its end
  std::string do_db;      // Binlog_Do_DB: only these databases are logged
  std::string ignore_db;  // Binlog_Ignore_DB: these are not
  // True with ROW: a wake-up names the table. MIXED and STATEMENT log most
  // writes as statements, which name only the session's default database.
  bool table_granularity() const { return format == "ROW"; }
  // "table (binlog_format=ROW)" or "database (binlog_format=MIXED)".
  std::string Granularity() const;
};

// Reads the binary log settings and the current end position over `session`,
// and appends one line per problem that stops a stream (log_bin off, a
// missing privilege), each naming the setting or GRANT that fixes it.
// `need_replication_slave` also checks REPLICATION SLAVE among the account's
// global privileges (a stream learns it from its dump request instead).
// Returns an error only when the connection fails.
Status InspectBinlogServer(MariadbSession& session, bool need_replication_slave,
                           BinlogServerInfo* info, std::vector<std::string>* problems);

// Problems that do not stop a stream but make its wake-ups miss a service's
// database: binlog_do_db / binlog_ignore_db filters that leave it out.
void CheckDatabaseFilters(const BinlogServerInfo& info, const std::vector<std::string>& databases,
                          const std::string& where, std::vector<std::string>* problems);

struct BinlogCheck {
  std::vector<std::string> problems;  // each with its fix; empty: all is well
  std::vector<std::string> notes;     // worth knowing, not a problem
  std::string summary;                // e.g. "binlog on 127.0.0.1:3306: wake-ups per table ..."
};

// The host part of a processlist HOST ("10.0.0.5:51234" -> "10.0.0.5").
std::string ClientHost(const std::string& host_port);
// The first of `dumps` (client hosts of binlog dump threads registered
// under this instance_id) that is not `own` (this session's client host):
// a relay on another host with the same instance_id. "" when none.
std::string OtherClientHost(const std::string& own, const std::vector<std::string>& dumps);

// For `outbox-relay check --connect` with `wakeup: binlog`: connects as
// `options.mysql`'s user (its database and table are not used), reads the
// settings and the privileges a stream needs (REPLICATION SLAVE, and BINLOG
// MONITOR on MariaDB / REPLICATION CLIENT on MySQL), whether `databases` are
// logged, and whether another replica already uses the stream's server_id
// (SHOW REPLICA HOSTS), including a relay on another host registered under
// the same instance_id (told from this host's by the client host of its
// binlog dump thread in the processlist). Starts no stream. Returns an error only when it
// cannot connect.
Status CheckBinlog(const BinlogOptions& options, const std::vector<std::string>& databases,
                   BinlogCheck* out);

}  // namespace binlog
}  // namespace outbox
