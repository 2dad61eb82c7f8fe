// The mysql block of a service (docs/CONFIG.md "services[].mysql").

#include "config/config_parser.h"

namespace outbox {
namespace config_internal {

MysqlConfig Parser::Mysql(const YAML::Node& parent, const YAML::Node& n, const std::string& path,
                          std::vector<std::string>* warnings) const {
  MysqlConfig m;
  if (!n) Fail(parent.Mark(), path, "is required");
  RequireMap(n, path);
  // Before the unknown-key check, which would only say "unknown key".
  if (n["password"])
    Report(n["password"].Mark(), path + ".password",
           "a password is never written in the config file: use password_env (the name of an "
           "environment variable holding it) or password_file (a file holding it)");
  CheckKeys(n, path,
            {"host", "port", "user", "password_env", "password_file", "database", "table",
             "time_zone", "tls", "connect_timeout_ms", "read_timeout_ms", "binlog_server_id"});
  (void)Guard([&] { MysqlTarget(n, path, &m); });
  (void)Guard([&] { MysqlPassword(n, path, &m, warnings); });
  (void)Guard([&] { MysqlSession(n, path, &m, warnings); });
  return m;
}

// host, port, user, database, table.
void Parser::MysqlTarget(const YAML::Node& n, const std::string& path, MysqlConfig* m) const {
  if (n["host"]) m->host = Str(n["host"], path + ".host");
  if (m->host.empty()) Report(n.Mark(), path + ".host", "must not be empty");
  if (n["port"]) m->port = static_cast<int>(Int(n["port"], path + ".port", 1, 65535));
  if (!n["user"])
    Report(n.Mark(), path + ".user", "is required");
  else if ((m->user = Str(n["user"], path + ".user")).empty())
    Report(n["user"].Mark(), path + ".user", "must not be empty");
  if (!n["database"])
    Report(n.Mark(), path + ".database", "is required");
  else if (m->database = Str(n["database"], path + ".database"); !IsIdentifier(m->database))
    Report(n["database"].Mark(), path + ".database",
           "must be a plain identifier ([A-Za-z_][A-Za-z0-9_$]*, at most 64) (got " +
               Quoted(m->database) + ")");
  if (n["table"]) {
    m->table = Str(n["table"], path + ".table");
    if (!IsIdentifier(m->table))
      Report(n["table"].Mark(), path + ".table",
             "must be a plain identifier ([A-Za-z_][A-Za-z0-9_$]*, at most 64) (got " +
                 Quoted(m->table) + ")");
  }
}

void Parser::MysqlPassword(const YAML::Node& n, const std::string& path, MysqlConfig* m,
                           std::vector<std::string>* warnings) const {
  if (n["password_env"] && n["password_file"])
    Fail(n["password_file"].Mark(), path + ".password_file",
         "give either password_env or password_file, not both");
  m->password_source = "none";
  if (const YAML::Node pe = n["password_env"]) PasswordFromEnv(pe, path + ".password_env", m);
  if (const YAML::Node pf = n["password_file"])
    PasswordFromFile(pf, path + ".password_file", m, warnings);
}

void Parser::PasswordFromEnv(const YAML::Node& pe, const std::string& where, MysqlConfig* m) const {
  // The name of the variable, taken literally: expanding ${...} here would
  // put the password itself where a name belongs, and into this message.
  if (!pe.IsScalar()) Fail(pe.Mark(), where, std::string("must be a string, not ") + Shape(pe));
  const std::string& var = pe.Scalar();
  if (var.find('$') != std::string::npos)
    Fail(pe.Mark(), where,
         "takes the name of an environment variable, not its value: write password_env: "
         "ORDER_DB_PASSWORD, without ${}");
  if (!IsVariableName(var))
    Fail(pe.Mark(), where,
         "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*) (got " + Quoted(var) + ")");
  auto v = options().env(var);
  if (!v) Fail(pe.Mark(), where, "environment variable " + var + " is not set");
  m->password = *v;
  m->password_source = "env:" + var;
}

void Parser::PasswordFromFile(const YAML::Node& pf, const std::string& where, MysqlConfig* m,
                              std::vector<std::string>* warnings) const {
  std::string file = Str(pf, where);
  // Messages name the path as written: a mistaken ${DB_PASSWORD} here
  // must not print the password it expands to.
  const std::string shown = file == pf.Scalar() ? file : pf.Scalar() + " (expanded)";
  FileInfo info = ReadNamedFile(pf, where, file, shown);
  // Warned, not refused: Kubernetes mounts Secrets 0644 unless told
  // otherwise, and the process user is what protects the file there.
  if (info.group_or_other_readable)
    warnings->push_back(where + ": " + Quoted(shown) +
                        " is readable by group or others; chmod 600 it");
  m->password = std::move(info.contents);
  while (!m->password.empty() && (m->password.back() == '\n' || m->password.back() == '\r'))
    m->password.pop_back();
  if (m->password.empty())
    Fail(pf.Mark(), where,
         Quoted(shown) + " is empty; leave out password_file to connect without a password");
  m->password_source = "file:" + shown;
}

// time_zone, tls, timeouts, binlog_server_id.
void Parser::MysqlSession(const YAML::Node& n, const std::string& path, MysqlConfig* m,
                          std::vector<std::string>* warnings) const {
  if (n["time_zone"]) {
    std::string tz = Str(n["time_zone"], path + ".time_zone");
    if (!IsTimeZone(tz))
      Report(n["time_zone"].Mark(), path + ".time_zone",
             "must be an offset like +08:00, SYSTEM or a zone name like Asia/Shanghai (got " +
                 Quoted(tz) + ")");
    m->time_zone = tz;
  }
  (void)Guard([&] { m->tls = Tls(n["tls"], path + ".tls", warnings); });
  if (n["connect_timeout_ms"])
    m->connect_timeout_ms =
        static_cast<int>(Int(n["connect_timeout_ms"], path + ".connect_timeout_ms", 100, 600000));
  if (n["read_timeout_ms"])
    m->read_timeout_ms =
        static_cast<int>(Int(n["read_timeout_ms"], path + ".read_timeout_ms", 1000, 3600000));
  // 0 is how a server says "not a replica"; a replica's id is 1..2^32-1.
  if (n["binlog_server_id"])
    m->binlog_server_id = static_cast<uint32_t>(
        Int(n["binlog_server_id"], path + ".binlog_server_id", 1, 4294967295LL));
}

TlsConfig Parser::Tls(const YAML::Node& n, const std::string& path,
                      std::vector<std::string>* warnings) const {
  TlsConfig t;
  if (!n || n.IsNull()) return t;
  RequireMap(n, path);
  CheckKeys(n, path, {"mode", "ca", "cert", "key"});
  if (n["mode"]) t.mode = static_cast<TlsMode>(OneOf(n["mode"], path + ".mode", TlsModeNames()));
  if (n["ca"]) t.ca = Str(n["ca"], path + ".ca");
  if (n["cert"]) t.cert = Str(n["cert"], path + ".cert");
  if (n["key"]) t.key = Str(n["key"], path + ".key");
  if (VerifiesServer(t.mode) && t.ca.empty())
    Report(n.Mark(), path + ".ca", std::string("is required when mode is ") + ToString(t.mode));
  if (t.cert.empty() != t.key.empty())
    Report(n.Mark(), path, "cert and key must be given together");
  if (t.mode != TlsMode::kDisabled) {
    // Found now rather than at the first connect, where it would read as a
    // database outage.
    if (!t.ca.empty()) (void)ReadNamedFile(n["ca"], path + ".ca", t.ca);
    if (!t.cert.empty()) (void)ReadNamedFile(n["cert"], path + ".cert", t.cert);
    if (!t.key.empty() && ReadNamedFile(n["key"], path + ".key", t.key).group_or_other_readable)
      warnings->push_back(path + ".key: " + Quoted(t.key) +
                          " is readable by group or others; chmod 600 it");
  }
  return t;
}

}  // namespace config_internal
}  // namespace outbox
