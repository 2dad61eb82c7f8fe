#include "outbox/mysql_connection.h"

#include <cppconn/statement.h>
#include <dlfcn.h>
#include <mysql_driver.h>

#include <algorithm>
#include <map>

#include "common/mutex.h"
#include "common/mysql_options.h"
#include "outbox/mysql_store_factory.h"

namespace outbox {

std::string QuoteIdent(const std::string& ident) {
  std::string out = "`";
  for (char c : ident) {
    if (c == '`') out += '`';
    out += c;
  }
  return out + "`";
}

SqlError SqlErrorOf(const sql::SQLException& e) {
  return SqlError{e.getErrorCode(), e.getSQLState(), e.what()};
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

bool MysqlConnection::StillWritable() {
  try {
    std::unique_ptr<sql::Statement> st(conn_->createStatement());
    std::unique_ptr<sql::ResultSet> rs(st->executeQuery("SELECT @@GLOBAL.read_only"));
    return rs->next() && rs->getInt(1) == 0;
  } catch (const sql::SQLException&) {
    return false;
  }
}

std::string MysqlConnection::QualifiedTable() const {
  return QuoteIdent(config_.database) + "." + QuoteIdent(config_.table);
}

std::string MysqlConnection::TableName() const { return config_.database + "." + config_.table; }

namespace {

int SslMode(TlsMode mode) {
  switch (mode) {
    case TlsMode::kDisabled:
      return sql::SSL_MODE_DISABLED;
    case TlsMode::kRequired:
      return sql::SSL_MODE_REQUIRED;
    case TlsMode::kVerifyCa:
      return sql::SSL_MODE_VERIFY_CA;
    case TlsMode::kVerifyIdentity:
      return sql::SSL_MODE_VERIFY_IDENTITY;
    case TlsMode::kPreferred:
      break;
  }
  return sql::SSL_MODE_PREFERRED;
}

sql::ConnectOptionsMap ConnectOptions(const MysqlConfig& config) {
  sql::ConnectOptionsMap opts;
  SetStoreSessionOptions(config, &opts);  // reconnects are ours
  opts["CLIENT_MULTI_STATEMENTS"] = false;
  const TlsConfig& tls = config.tls;
  opts["OPT_SSL_MODE"] = SslMode(tls.mode);
  if (tls.mode != TlsMode::kDisabled) {
    if (!tls.ca.empty()) opts["sslCA"] = sql::SQLString(tls.ca);
    if (!tls.cert.empty()) opts["sslCert"] = sql::SQLString(tls.cert);
    if (!tls.key.empty()) opts["sslKey"] = sql::SQLString(tls.key);
    if (tls.mode != TlsMode::kPreferred) opts["sslEnforce"] = true;
    if (VerifiesServer(tls.mode)) opts["sslVerify"] = true;
  }
  return opts;
}

// The server's identity and read-only switches. SHOW GLOBAL VARIABLES with a
// WHERE: a variable the server lacks is simply not returned, so one statement
// works on MariaDB 10.6+ and MySQL 8 alike.
ServerState ReadServerState(sql::Connection* conn) {
  std::unique_ptr<sql::Statement> st(conn->createStatement());
  std::unique_ptr<sql::ResultSet> rs(st->executeQuery(
      "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('server_uuid', 'server_id', 'hostname', "
      "'port', 'read_only', 'super_read_only', 'innodb_read_only')"));
  std::map<std::string, std::string> vars;
  while (rs->next()) vars[rs->getString(1)] = rs->getString(2);
  ServerState out;
  for (const char* name : {"read_only", "super_read_only", "innodb_read_only"}) {
    auto it = vars.find(name);
    // Any value but OFF: MariaDB 11's read_only also has NO_LOCK variants.
    if (it != vars.end() && it->second != "OFF" && it->second != "0" && !it->second.empty())
      out.read_only.push_back(name);
  }
  auto uuid = vars.find("server_uuid");
  if (uuid != vars.end() && !uuid->second.empty())
    out.identity = uuid->second;
  else
    out.identity = vars["server_id"] + "@" + vars["hostname"] + ":" + vars["port"];
  return out;
}

}  // namespace

Status MysqlConnection::Connect() {
  if (conn_) return Status::Ok();
  static Mutex driver_mu;  // get_driver_instance is not thread-safe on first call
  sql::mysql::MySQL_Driver* driver;
  {
    MutexLock lock(&driver_mu);
    driver = sql::mysql::get_mysql_driver_instance();
  }
  sql::ConnectOptionsMap opts = ConnectOptions(config_);
  try {
    conn_.reset(driver->connect(opts));
    std::unique_ptr<sql::Statement> st(conn_->createStatement());
    // READ COMMITTED: locking reads see the latest committed row and take no
    // gap locks, so claims by replicas do not block each other.
    st->execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    // A session this process gave up on (a read timeout under load, a
    // statement cut off by a network fault) may stay open on the server with
    // the claim's row locks, which SKIP LOCKED then skips: with the default
    // wait_timeout (8 hours) its rows and the later events of their
    // aggregates would wait that long. The relay never leaves a session idle
    // inside a transaction, and an idle one it still wants is pinged and
    // opened again (MysqlStore::Run), so the server may end it after a minute.
    st->execute("SET SESSION wait_timeout = " + std::to_string(kSessionWaitTimeoutS));
    if (config_.time_zone) {
      std::unique_ptr<sql::PreparedStatement> ps(conn_->prepareStatement("SET time_zone = ?"));
      ps->setString(1, *config_.time_zone);
      ps->execute();
    }
    conn_->setAutoCommit(true);
    server_ = ReadServerState(conn_.get());
  } catch (const sql::SQLException& e) {
    conn_.reset();
    return SqlErrorStatus("cannot connect to " + config_.user + "@" + config_.host + ":" +
                              std::to_string(config_.port) + "/" + config_.database,
                          SqlErrorOf(e));
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
