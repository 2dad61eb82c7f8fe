#include "binlog/binlog_check.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "common/mysql_error.h"

namespace outbox {
namespace binlog {

namespace {

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

std::string Value(const MariadbSession::Row& row, size_t i) {
  return i < row.size() && row[i] ? *row[i] : "";
}

// The privilege that allows SHOW MASTER STATUS: MariaDB 10.5 renamed
// REPLICATION CLIENT to BINLOG MONITOR (the old name still grants it).
const char* MonitorPrivilege(const BinlogServerInfo& info) {
  return info.is_mariadb ? "BINLOG MONITOR" : "REPLICATION CLIENT";
}

// `old_name`, or `new_name` where the server no longer knows the old one
// (a syntax error, 1064: MySQL 8.4 removed SHOW MASTER STATUS and SHOW SLAVE
// HOSTS).
Status QueryRenamed(MariadbSession& session, const char* old_name, const char* new_name,
                    std::vector<MariadbSession::Row>* rows) {
  Status s = session.Query(old_name, rows);
  if (!s.ok() && IsMysqlError(session.last_errno(), MysqlError::kParseError))
    s = session.Query(new_name, rows);
  return s;
}

// SHOW MASTER STATUS, or SHOW BINARY LOG STATUS (MySQL 8.2+ and MariaDB
// 10.5.2+ know the new name).
Status ReadPosition(MariadbSession& session, BinlogServerInfo* info,
                    std::vector<std::string>* problems) {
  std::vector<MariadbSession::Row> rows;
  Status s = QueryRenamed(session, "SHOW MASTER STATUS", "SHOW BINARY LOG STATUS", &rows);
  if (!s.ok()) {
    if (IsMysqlError(session.last_errno(), MysqlError::kSpecificAccessDenied)) {
      const std::string account = session.Account();
      problems->push_back("user " + account + " lacks " + MonitorPrivilege(*info) +
                          " (needed to read the binary log position): GRANT " +
                          MonitorPrivilege(*info) + " ON *.* TO " + account + "; (" + s.message() +
                          ")");
      return Status::Ok();
    }
    if (!session.connected() || session.last_errno() >= 2000) return s;
    problems->push_back("cannot read the binary log position: " + s.message());
    return Status::Ok();
  }
  if (rows.empty()) return Status::Ok();  // log_bin off; reported by the caller
  info->file = Value(rows[0], 0);
  info->position = std::strtoull(Value(rows[0], 1).c_str(), nullptr, 10);
  info->do_db = Value(rows[0], 2);
  info->ignore_db = Value(rows[0], 3);
  return Status::Ok();
}

bool HasGlobalPrivilege(MariadbSession& session, const std::string& privilege) {
  // The account's own rows: GRANTEE is 'user'@'host' as CURRENT_USER() says.
  std::vector<MariadbSession::Row> rows;
  Status s = session.Query(
      "SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = "
      "CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', "
      "SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''') AND PRIVILEGE_TYPE = '" +
          privilege + "'",
      &rows);
  // Unreadable: do not claim a problem the stream may not have.
  return !s.ok() || rows.empty() || Value(rows[0], 0) != "0";
}

bool ListContains(const std::string& csv, const std::string& name) {
  std::stringstream in(csv);
  std::string item;
  while (std::getline(in, item, ','))
    if (item == name) return true;
  return false;
}

// The client hosts (without the port) of this account's binlog dump
// threads, and of this session, as the server's processlist shows them: an
// account sees its own threads without the PROCESS privilege.
Status DumpClientHosts(MariadbSession& session, std::vector<std::string>* dumps, std::string* own) {
  std::vector<MariadbSession::Row> rows;
  Status s = session.Query(
      "SELECT HOST, ID = CONNECTION_ID() FROM information_schema.PROCESSLIST "
      "WHERE COMMAND LIKE 'Binlog Dump%' OR ID = CONNECTION_ID()",
      &rows);
  if (!s.ok()) return s;
  for (const auto& row : rows) {
    const std::string host = ClientHost(Value(row, 0));
    if (Value(row, 1) == "1")
      *own = host;
    else
      dumps->push_back(host);
  }
  return Status::Ok();
}

// The server_id is registered under this instance_id's report host. This
// host's own relay, or another host's with the same instance_id (a unit
// or an image that gives every host the same one): the processlist tells
// them apart by the client host of the dump thread.
void CheckOwnReportHost(MariadbSession& session, const std::string& id, const std::string& host,
                        const BinlogOptions& options, const std::string& where, BinlogCheck* out) {
  std::vector<std::string> dumps;
  std::string own;
  const bool listed = DumpClientHosts(session, &dumps, &own).ok();
  const std::string other = listed ? OtherClientHost(own, dumps) : "";
  if (other.empty()) {
    out->notes.push_back("server_id " + id + " is registered on " + where + " by '" + host +
                         "': this relay's stream if it runs; a second relay with instance_id " +
                         options.instance_id + " would push it off the server");
    return;
  }
  out->problems.push_back("server_id " + id + " is in use on " + where + " by '" + host +
                          "' streaming to " + other + ", not to this host (" + own +
                          "): another relay has the same instance_id " + options.instance_id +
                          ", so the same replica server_id and Kafka client.id; the two would "
                          "push each other off the server: give each host its own instance_id "
                          "(e.g. ${HOSTNAME}) or mysql.binlog_server_id");
}

// Whether another replica already follows the server as `server_id`: SHOW
// REPLICA HOSTS lists the replicas that registered, every relay stream among
// them (as ReportHost). Listing needs REPLICATION MASTER ADMIN on MariaDB
// 10.5.2+ (REPLICATION SLAVE on MySQL), which the stream itself does not.
void CheckServerIdInUse(MariadbSession& session, const BinlogServerInfo& info,
                        const BinlogOptions& options, const std::string& where, BinlogCheck* out) {
  const std::string id = std::to_string(EffectiveServerId(options));
  std::vector<MariadbSession::Row> rows;
  // SHOW REPLICAS: MySQL 8.0.22+.
  Status s = QueryRenamed(session, "SHOW SLAVE HOSTS", "SHOW REPLICAS", &rows);
  if (!s.ok()) {
    const std::string privilege =
        info.is_mariadb ? "REPLICATION MASTER ADMIN" : "REPLICATION SLAVE";
    out->notes.push_back(
        "cannot tell whether another replica uses server_id " + id + " on " + where +
        (IsMysqlError(session.last_errno(), MysqlError::kSpecificAccessDenied)
             ? ": listing replicas needs " + privilege + ", which the stream itself does not need"
             : ": " + s.message()));
    return;
  }
  for (const auto& row : rows) {
    if (Value(row, 0) != id) continue;
    const std::string host = Value(row, 1);
    if (host == ReportHost(options.instance_id)) {
      CheckOwnReportHost(session, id, host, options, where, out);
    } else {
      out->problems.push_back("server_id " + id + " is in use on " + where + " by the replica '" +
                              host +
                              "': the two would push each other off the server; give "
                              "this relay its own mysql.binlog_server_id (or instance_id)");
    }
  }
}

}  // namespace

std::string BinlogServerInfo::Granularity() const {
  return std::string(table_granularity() ? "table" : "database") + " (binlog_format=" + format +
         ")";
}

Status InspectBinlogServer(MariadbSession& session, bool need_replication_slave,
                           BinlogServerInfo* info, std::vector<std::string>* problems) {
  *info = BinlogServerInfo{};
  info->version = session.server_info();
  info->is_mariadb = session.is_mariadb();
  std::vector<MariadbSession::Row> rows;
  Status s = session.Query(
      "SELECT @@GLOBAL.log_bin, @@GLOBAL.binlog_format, @@GLOBAL.binlog_checksum", &rows);
  if (!s.ok()) return s;
  if (!rows.empty()) {
    const std::string log_bin = Upper(Value(rows[0], 0));
    info->log_bin = log_bin == "1" || log_bin == "ON";
    info->format = Upper(Value(rows[0], 1));
    info->checksum = Upper(Value(rows[0], 2));
  }
  if (!info->log_bin) {
    problems->push_back(
        "log_bin is OFF on the server (" + info->version +
        "): the binary log must be on for wake-ups; start the server with --log-bin "
        "(my.cnf: log_bin = mysql-bin, server_id = <unique>) and restart it; the relay "
        "polls meanwhile");
    return Status::Ok();
  }
  s = ReadPosition(session, info, problems);
  if (!s.ok()) return s;
  if (need_replication_slave && !HasGlobalPrivilege(session, "REPLICATION SLAVE")) {
    const std::string account = session.Account();
    problems->push_back("user " + account +
                        " lacks REPLICATION SLAVE (needed to follow the binary log): GRANT "
                        "REPLICATION SLAVE ON *.* TO " +
                        account + ";");
  }
  return Status::Ok();
}

void CheckDatabaseFilters(const BinlogServerInfo& info, const std::vector<std::string>& databases,
                          const std::string& where, std::vector<std::string>* problems) {
  for (const std::string& db : databases) {
    if (!info.do_db.empty() && !ListContains(info.do_db, db))
      problems->push_back("database " + db + " is not in binlog_do_db (" + info.do_db + ") on " +
                          where + ": its commits never reach the binary log, so " + db +
                          " is woken only by the safety poll; add it to binlog_do_db or use "
                          "wakeup: poll");
    if (ListContains(info.ignore_db, db))
      problems->push_back("database " + db + " is in binlog_ignore_db on " + where +
                          ": its commits never reach the binary log; remove it from "
                          "binlog_ignore_db or use wakeup: poll");
  }
}

std::string ClientHost(const std::string& host_port) {
  // "10.0.0.5:51234", "[::1]:51234" or "::1:51234" from older servers;
  // "localhost" (a socket) has no port.
  if (!host_port.empty() && host_port.front() == '[') {
    const size_t close = host_port.find(']');
    return close == std::string::npos ? host_port : host_port.substr(1, close - 1);
  }
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) return host_port;
  const std::string port = host_port.substr(colon + 1);
  const bool digits = !port.empty() && std::all_of(port.begin(), port.end(),
                                                   [](char c) { return c >= '0' && c <= '9'; });
  return digits ? host_port.substr(0, colon) : host_port;
}

std::string OtherClientHost(const std::string& own, const std::vector<std::string>& dumps) {
  for (const auto& d : dumps)
    if (d != own) return d;
  return "";
}

Status CheckBinlog(const BinlogOptions& options, const std::vector<std::string>& databases,
                   BinlogCheck* out) {
  *out = BinlogCheck{};
  const MysqlConfig& mysql = options.mysql;
  MariadbSession session;
  const int read_timeout_s = std::max(1, mysql.read_timeout_ms / 1000);
  Status s = session.Connect(mysql, read_timeout_s);
  if (!s.ok()) return s;
  BinlogServerInfo info;
  s = InspectBinlogServer(session, /*need_replication_slave=*/true, &info, &out->problems);
  if (!s.ok())
    return Status::Error("cannot check the binary log on " + Endpoint(mysql) + ": " + s.message());
  const std::string where = mysql.host + ":" + std::to_string(mysql.port);
  if (info.log_bin) {
    CheckDatabaseFilters(info, databases, where, &out->problems);
    CheckServerIdInUse(session, info, options, where, out);
  }
  if (info.log_bin && info.checksum != "CRC32" && info.checksum != "NONE")
    out->problems.push_back("binlog_checksum=" + info.checksum + " on " + where +
                            " is not one the relay reads (CRC32 or NONE)");
  out->summary = "binary log on " + where + ": " +
                 (info.log_bin ? "on, " + info.file + ":" + std::to_string(info.position) +
                                     ", wake-ups per " + info.Granularity()
                               : std::string("off"));
  return Status::Ok();
}

}  // namespace binlog
}  // namespace outbox
