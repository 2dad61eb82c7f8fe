#include "outbox/mysql_connection.h"

#include <cppconn/statement.h>
#include <dlfcn.h>
#include <mysql_driver.h>
#include <spdlog/spdlog.h>

#include <mutex>

namespace outbox {

std::string QuoteIdent(const std::string& ident) {
  std::string out = "`";
  for (char c : ident) {
    if (c == '`') out += '`';
    out += c;
  }
  return out + "`";
}

std::string DescribeSqlError(const sql::SQLException& e) {
  return "MySQL error " + std::to_string(e.getErrorCode()) + " (" + e.getSQLState() +
         "): " + e.what();
}

bool IsConnectionError(const sql::SQLException& e) {
  int code = e.getErrorCode();
  // 2000-2999: client errors (lost connection, server gone away, can't
  // connect); 1927 connection killed; 1053 server shutdown; 0 = connector.
  return code == 0 || (code >= 2000 && code < 3000) || code == 1927 || code == 1053 ||
         code == 1152 || code == 1040;
}

bool NeedsFreshSession(const sql::SQLException& e) {
  switch (e.getErrorCode()) {
    case 1044:  // access denied to the database
    case 1049:  // unknown database
    case 1054:  // unknown column
    case 1142:  // command denied on the table
    case 1143:  // command denied on a column
    case 1146:  // table does not exist
    case 1227:  // a privilege is missing
      return true;
    default:
      return false;
  }
}

std::string ReadTimeoutHint(const sql::SQLException& e) {
  // 2013 "during query" is also what a statement waiting on another
  // transaction's row lock gets once mysql.read_timeout_ms passes: say so,
  // since "lost connection" alone points at the network.
  if (e.getErrorCode() != 2013 || std::string(e.what()).find("during query") == std::string::npos)
    return "";
  return " (no answer within mysql.read_timeout_ms, or the connection broke: rows locked by "
         "another transaction, a slow statement or a server restart)";
}

std::string SqlErrorHint(const sql::SQLException& e) {
  switch (e.getErrorCode()) {
    case 1044:
    case 1142:
    case 1143:
      return " (the relay's user needs SELECT and UPDATE on the table, and DELETE if "
             "retention.sent_days is set; it reconnects and retries)";
    case 1054:
    case 1146:
      return " (the relay re-reads the table's columns when it reconnects and retries)";
    case 2013:
      return ReadTimeoutHint(e);
    default:
      return "";
  }
}

std::string TableSchema::Describe() const {
  std::string s;
  s += has_last_error ? "last_error" : "";
  if (has_topic) s += std::string(s.empty() ? "" : ", ") + "topic";
  if (has_headers) s += std::string(s.empty() ? "" : ", ") + "headers";
  return s.empty() ? "none" : s;
}

MysqlConnection::MysqlConnection(MysqlConfig config) : config_(std::move(config)) {}

MysqlConnection::~MysqlConnection() { Close(); }

void MysqlConnection::Close() {
  statements_.clear();
  if (conn_) {
    try {
      conn_->close();
    } catch (const sql::SQLException&) {
      // Closing a dead connection fails; nothing to do.
    }
    conn_.reset();
  }
}

bool MysqlConnection::Alive() {
  try {
    return conn_->isValid();  // a ping; OPT_RECONNECT is off, so it never reconnects
  } catch (const sql::SQLException&) {
    return false;
  }
}

std::string MysqlConnection::QualifiedTable() const {
  return QuoteIdent(config_.database) + "." + QuoteIdent(config_.table);
}

Status MysqlConnection::Connect() {
  if (conn_) return Status::Ok();
  static std::mutex driver_mu;  // get_driver_instance is not thread-safe on first call
  sql::mysql::MySQL_Driver* driver;
  {
    std::lock_guard<std::mutex> lock(driver_mu);
    driver = sql::mysql::get_mysql_driver_instance();
  }
  sql::ConnectOptionsMap opts;
  opts["hostName"] = sql::SQLString(config_.host);
  opts["port"] = config_.port;
  opts["userName"] = sql::SQLString(config_.user);
  opts["password"] = sql::SQLString(config_.password);
  opts["schema"] = sql::SQLString(config_.database);
  opts["OPT_CONNECT_TIMEOUT"] = std::max(1, config_.connect_timeout_ms / 1000);
  opts["OPT_READ_TIMEOUT"] = std::max(1, config_.read_timeout_ms / 1000);
  opts["OPT_WRITE_TIMEOUT"] = std::max(1, config_.read_timeout_ms / 1000);
  opts["OPT_RECONNECT"] = false;  // reconnects are ours: a silent reconnect would lose the txn
  opts["CLIENT_MULTI_STATEMENTS"] = false;
  const TlsConfig& tls = config_.tls;
  int mode = sql::SSL_MODE_PREFERRED;
  if (tls.mode == "disabled") mode = sql::SSL_MODE_DISABLED;
  if (tls.mode == "required") mode = sql::SSL_MODE_REQUIRED;
  if (tls.mode == "verify_ca") mode = sql::SSL_MODE_VERIFY_CA;
  if (tls.mode == "verify_identity") mode = sql::SSL_MODE_VERIFY_IDENTITY;
  opts["OPT_SSL_MODE"] = mode;
  if (tls.mode != "disabled") {
    if (!tls.ca.empty()) opts["sslCA"] = sql::SQLString(tls.ca);
    if (!tls.cert.empty()) opts["sslCert"] = sql::SQLString(tls.cert);
    if (!tls.key.empty()) opts["sslKey"] = sql::SQLString(tls.key);
    if (tls.mode != "preferred") opts["sslEnforce"] = true;
    if (tls.mode == "verify_ca" || tls.mode == "verify_identity") opts["sslVerify"] = true;
  }
  try {
    conn_.reset(driver->connect(opts));
    std::unique_ptr<sql::Statement> st(conn_->createStatement());
    // READ COMMITTED: locking reads see the latest committed row and take no
    // gap locks, so claims by replicas do not block each other.
    st->execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    if (config_.time_zone) {
      std::unique_ptr<sql::PreparedStatement> ps(conn_->prepareStatement("SET time_zone = ?"));
      ps->setString(1, *config_.time_zone);
      ps->execute();
    }
    conn_->setAutoCommit(true);
  } catch (const sql::SQLException& e) {
    conn_.reset();
    return Status::Error("cannot connect to " + config_.user + "@" + config_.host + ":" +
                         std::to_string(config_.port) + "/" + config_.database + ": " +
                         DescribeSqlError(e));
  }
  return Status::Ok();
}

sql::PreparedStatement* MysqlConnection::Prepare(const std::string& sql) {
  auto it = statements_.find(sql);
  if (it != statements_.end()) return it->second.get();
  std::unique_ptr<sql::PreparedStatement> ps(conn_->prepareStatement(sql));
  auto* raw = ps.get();
  statements_.emplace(sql, std::move(ps));
  return raw;
}

int64_t IntegerTypeMax(const std::string& data_type, const std::string& column_type) {
  const bool is_unsigned = column_type.find("unsigned") != std::string::npos;
  if (data_type == "tinyint") return is_unsigned ? 255 : 127;
  if (data_type == "smallint") return is_unsigned ? 65535 : 32767;
  if (data_type == "mediumint") return is_unsigned ? 16777215 : 8388607;
  // INT and anything wider: the relay reads retry_count as a 32-bit int.
  return 2147483647;
}

Status InspectTable(MysqlConnection& conn, TableSchema* out) {
  *out = TableSchema{};
  const MysqlConfig& cfg = conn.config();
  try {
    auto* ps = conn.Prepare(
        "SELECT COLUMN_NAME, COALESCE(CHARACTER_MAXIMUM_LENGTH, 0), DATA_TYPE, COLUMN_TYPE "
        "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?");
    ps->setString(1, cfg.database);
    ps->setString(2, cfg.table);
    std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
    std::map<std::string, int64_t> cols;
    while (rs->next()) {
      const std::string name(rs->getString(1));
      cols[name] = rs->getInt64(2);
      if (name == "retry_count")
        out->retry_count_max =
            IntegerTypeMax(std::string(rs->getString(3)), std::string(rs->getString(4)));
    }
    out->table_exists = !cols.empty();
    static const char* kRequired[] = {
        "id",     "aggregate_type", "aggregate_id",  "event_type", "event_key", "payload",
        "status", "retry_count",    "next_retry_at", "created_at", "updated_at"};
    if (out->table_exists) {
      for (const char* c : kRequired)
        if (!cols.count(c)) out->missing_columns.push_back(c);
    }
    if (auto it = cols.find("last_error"); it != cols.end()) {
      out->has_last_error = true;
      out->last_error_max_len = static_cast<int>(std::min<int64_t>(it->second, 65535));
      if (out->last_error_max_len <= 0) out->last_error_max_len = 1024;
    }
    out->has_topic = cols.count("topic") > 0;
    out->has_headers = cols.count("headers") > 0;
    auto* idx = conn.Prepare(
        "SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME FROM information_schema.STATISTICS "
        "WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX");
    idx->setString(1, cfg.database);
    idx->setString(2, cfg.table);
    std::unique_ptr<sql::ResultSet> irs(idx->executeQuery());
    std::map<std::string, std::vector<std::string>> indexes;
    while (irs->next()) indexes[irs->getString(1)].push_back(irs->getString(3));
    for (const auto& [name, columns] : indexes) {
      if (columns.size() >= 2 && columns[0] == "status" && columns[1] == "next_retry_at" &&
          !out->has_status_index) {
        out->has_status_index = true;
        out->status_index = name;
      }
    }
  } catch (const sql::SQLException& e) {
    if (IsConnectionError(e)) conn.Close();
    return Status::Error("cannot inspect " + cfg.database + "." + cfg.table + ": " +
                         DescribeSqlError(e));
  }
  return Status::Ok();
}

namespace {

// 'user'@'host' of the account the server authenticated us as.
std::string CurrentAccount(MysqlConnection& conn) {
  std::unique_ptr<sql::Statement> st(conn.raw()->createStatement());
  std::unique_ptr<sql::ResultSet> rs(st->executeQuery("SELECT CURRENT_USER()"));
  std::string account = rs->next() ? std::string(rs->getString(1)) : conn.config().user;
  size_t at = account.rfind('@');
  if (at == std::string::npos) return "'" + account + "'";
  return "'" + account.substr(0, at) + "'@'" + account.substr(at + 1) + "'";
}

}  // namespace

Status ProbeGrants(MysqlConnection& conn, const TableSchema& schema, bool need_delete,
                   std::string* granted, std::vector<std::string>* problems) {
  granted->clear();
  const MysqlConfig& cfg = conn.config();
  const std::string table = conn.QualifiedTable();
  const std::string name = cfg.database + "." + cfg.table;
  std::string read_cols =
      "id, aggregate_type, aggregate_id, event_type, event_key, payload, status, retry_count, "
      "next_retry_at, created_at, updated_at";
  std::string write_cols =
      "status = status, retry_count = retry_count, next_retry_at = next_retry_at, "
      "updated_at = updated_at";
  if (schema.has_last_error) {
    read_cols += ", last_error";
    write_cols += ", last_error = last_error";
  }
  if (schema.has_topic) read_cols += ", topic";
  if (schema.has_headers) read_cols += ", headers";
  struct Probe {
    const char* privilege;
    std::string sql;
    const char* why;
    const char* alternative = "";
  };
  std::vector<Probe> probes = {
      {"SELECT", "SELECT " + read_cols + " FROM " + table + " WHERE 1 = 0",
       "to scan and claim rows"},
      {"UPDATE", "UPDATE " + table + " SET " + write_cols + " WHERE 1 = 0",
       "to claim and settle rows, and for dead replay"},
  };
  if (need_delete)
    probes.push_back({"DELETE", "DELETE FROM " + table + " WHERE 1 = 0", "by retention.sent_days",
                      " or remove the service's retention block"});
  try {
    std::string account;
    std::unique_ptr<sql::Statement> st(conn.raw()->createStatement());
    for (const Probe& p : probes) {
      try {
        // In a transaction that is rolled back, though WHERE 1 = 0 changes nothing.
        st->execute("START TRANSACTION");
        if (p.sql.rfind("SELECT", 0) == 0) {
          std::unique_ptr<sql::ResultSet> rs(st->executeQuery(p.sql));
          while (rs->next()) {
          }
        } else {
          st->executeUpdate(p.sql);
        }
        st->execute("ROLLBACK");
        *granted += std::string(granted->empty() ? "" : ", ") + p.privilege;
      } catch (const sql::SQLException& e) {
        if (IsConnectionError(e)) throw;
        st->execute("ROLLBACK");
        const int code = e.getErrorCode();
        if (code == 1142 || code == 1143) {  // table / column access denied
          if (account.empty()) account = CurrentAccount(conn);
          problems->push_back("user " + account + " lacks " + p.privilege + " on " + name +
                              " (needed " + p.why + "): GRANT " + p.privilege + " ON " + table +
                              " TO " + account + ";" + p.alternative + " (" + DescribeSqlError(e) +
                              ")");
        } else if (code == 1290 || code == 1792 || code == 1836) {  // read-only server
          problems->push_back("the server rejects " + std::string(p.privilege) + " on " + name +
                              " as read-only: the relay needs a writable primary (" +
                              DescribeSqlError(e) + ")");
        } else {
          problems->push_back(std::string(p.privilege) + " on " + name +
                              " failed: " + DescribeSqlError(e));
        }
      }
    }
  } catch (const sql::SQLException& e) {
    conn.Close();
    return Status::Error("cannot check the grants on " + name + ": " + DescribeSqlError(e));
  }
  return Status::Ok();
}

std::string MysqlClientVersions() {
  auto* driver = sql::mysql::get_mysql_driver_instance();
  // libmariadb is loaded by Connector/C++; ask it for its version directly.
  using ClientInfoFn = const char* (*)();
  auto client_info = reinterpret_cast<ClientInfoFn>(dlsym(RTLD_DEFAULT, "mysql_get_client_info"));
  return "Connector/C++ " + std::to_string(driver->getMajorVersion()) + "." +
         std::to_string(driver->getMinorVersion()) + "." +
         std::to_string(driver->getPatchVersion()) + ", client library " +
         (client_info ? client_info() : "unknown");
}

}  // namespace outbox
