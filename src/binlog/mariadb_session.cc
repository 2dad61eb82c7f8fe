#include "binlog/mariadb_session.h"

#include <algorithm>
#include <mutex>

namespace outbox {
namespace binlog {

namespace {

// mysql_library_init is not thread-safe; mysql_init calls it on first use.
void InitLibraryOnce() {
  static std::once_flag once;
  std::call_once(once, [] { mysql_library_init(0, nullptr, nullptr); });
}

void ApplyTls(MYSQL* mysql, const TlsConfig& tls) {
  if (tls.mode == TlsMode::kDisabled) return;
  auto or_null = [](const std::string& s) { return s.empty() ? nullptr : s.c_str(); };
  mysql_ssl_set(mysql, or_null(tls.key), or_null(tls.cert), or_null(tls.ca), nullptr, nullptr);
  // "Use TLS when the server offers it". libmariadb 3.3 falls back to plain
  // text when the server does not, unless the certificate is verified:
  // Connect() checks `required` itself.
  my_bool use_tls = 1;
  mysql_optionsv(mysql, MYSQL_OPT_SSL_ENFORCE, &use_tls);
  // libmariadb has no CA-only check: verify_ca also verifies the host name
  // (stricter than Connector/C++'s verify_ca; docs/BINLOG.md).
  my_bool verify = VerifiesServer(tls.mode) ? 1 : 0;
  mysql_optionsv(mysql, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
}

}  // namespace

std::string Endpoint(const MysqlConfig& config) {
  return config.user + "@" + config.host + ":" + std::to_string(config.port);
}

MariadbSession::MariadbSession() { InitLibraryOnce(); }

MariadbSession::~MariadbSession() { Close(); }

void MariadbSession::Close() {
  if (mysql_) mysql_close(mysql_);
  mysql_ = nullptr;
}

Status MariadbSession::Connect(const MysqlConfig& config, int read_timeout_s) {
  Close();
  mysql_ = mysql_init(nullptr);
  if (!mysql_) return Status::Error("out of memory in mysql_init");
  unsigned int connect_s = static_cast<unsigned int>(std::max(1, config.connect_timeout_ms / 1000));
  unsigned int read_s = static_cast<unsigned int>(std::max(1, read_timeout_s));
  mysql_optionsv(mysql_, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
  mysql_optionsv(mysql_, MYSQL_OPT_READ_TIMEOUT, &read_s);
  mysql_optionsv(mysql_, MYSQL_OPT_WRITE_TIMEOUT, &read_s);
  // A replication stream receives whole events: allow the server's largest
  // packet (1 GiB) instead of the client default, or one large event would
  // break the stream.
  unsigned long max_packet = 1UL << 30;
  mysql_optionsv(mysql_, MYSQL_OPT_MAX_ALLOWED_PACKET, &max_packet);
  ApplyTls(mysql_, config.tls);
  if (!mysql_real_connect(mysql_, config.host.c_str(), config.user.c_str(), config.password.c_str(),
                          nullptr, static_cast<unsigned int>(config.port), nullptr, 0)) {
    last_errno_ = mysql_errno(mysql_);
    std::string error = "cannot connect to " + Endpoint(config) + ": MySQL error " +
                        std::to_string(last_errno_) + ": " + mysql_error(mysql_);
    Close();
    return Status::Error(error);
  }
  last_errno_ = 0;
  if (config.tls.mode != TlsMode::kDisabled && config.tls.mode != TlsMode::kPreferred &&
      !mysql_get_ssl_cipher(mysql_)) {
    Close();
    return Status::Error("cannot connect to " + Endpoint(config) + ": tls.mode " +
                         std::string(ToString(config.tls.mode)) +
                         " but the server did not encrypt the connection");
  }
  return Status::Ok();
}

Status MariadbSession::Query(const std::string& sql, std::vector<Row>* rows) {
  if (rows) rows->clear();
  if (mysql_query(mysql_, sql.c_str()) != 0) {
    last_errno_ = mysql_errno(mysql_);
    return Status::Error("MySQL error " + std::to_string(last_errno_) + ": " + mysql_error(mysql_));
  }
  last_errno_ = 0;
  MYSQL_RES* result = mysql_store_result(mysql_);
  if (!result) return Status::Ok();
  const unsigned int fields = mysql_num_fields(result);
  while (MYSQL_ROW row = mysql_fetch_row(result)) {
    if (!rows) continue;
    unsigned long* lengths = mysql_fetch_lengths(result);
    Row out;
    for (unsigned int i = 0; i < fields; ++i) {
      if (row[i])
        out.emplace_back(std::string(row[i], lengths[i]));
      else
        out.emplace_back(std::nullopt);
    }
    rows->push_back(std::move(out));
  }
  mysql_free_result(result);
  return Status::Ok();
}

std::string MariadbSession::Account() {
  std::vector<Row> rows;
  if (!Query("SELECT CURRENT_USER()", &rows).ok() || rows.empty() || !rows[0][0]) return "?";
  const std::string& account = *rows[0][0];
  size_t at = account.rfind('@');
  // Appended, not `"'" + ...`: see common/text.h on GCC bug 105329.
  std::string out = "'";
  if (at == std::string::npos) {
    out += account;
  } else {
    out.append(account, 0, at).append("'@'").append(account, at + 1);
  }
  out += '\'';
  return out;
}

std::string MariadbSession::server_info() const {
  return mysql_ ? mysql_get_server_info(mysql_) : "";
}

bool MariadbSession::is_mariadb() const {
  return server_info().find("MariaDB") != std::string::npos;
}

int MariadbSession::socket() const {
  return mysql_ ? static_cast<int>(mysql_get_socket(mysql_)) : -1;
}

}  // namespace binlog
}  // namespace outbox
