#include "config/config_loader.h"

#include <sys/stat.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "config/topic_template.h"

namespace outbox {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

namespace {

// Secrets and certificates are small; a larger "file" is a mistake (a
// device, a log) and must not be slurped into memory.
constexpr std::streamsize kMaxSecretFileBytes = 1 << 20;
// A config of thousands of services is well below this; past it, the file is
// most likely not a config (and yaml-cpp needs seconds per 10 MB).
constexpr size_t kMaxConfigFileBytes = 4 << 20;

FileRead ReadFileFromDisk(const std::string& path) {
  FileRead r;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    r.error = std::strerror(errno);
    return r;
  }
  if (!S_ISREG(st.st_mode)) {
    r.error = "not a regular file";
    return r;
  }
  if (st.st_size > kMaxSecretFileBytes) {
    r.error = "larger than 1 MiB, not a secret or certificate";
    return r;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    r.error = std::strerror(errno);
    return r;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  FileInfo info;
  info.contents = ss.str();
  info.group_or_other_readable = (st.st_mode & 044) != 0;
  r.info = std::move(info);
  return r;
}

// One line, printable: a value may hold newlines or control characters, and
// an error message is a single log or terminal line.
std::string OneLine(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// A value echoed in a message, cut so one bad value cannot flood the output.
std::string Quoted(const std::string& s) {
  constexpr size_t kMax = 200;
  if (s.size() <= kMax) return "\"" + s + "\"";
  return "\"" + s.substr(0, kMax) + "\"... (" + std::to_string(s.size()) + " characters)";
}

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// [A-Za-z_][A-Za-z0-9_$]{0,63}: what the relay splices into SQL, quoted.
bool IsIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 64 || !(IsAlpha(s[0]) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == '$'; });
}

bool IsServiceName(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return IsAlpha(c) || IsDigit(c) || c == '_' || c == '.' || c == '-';
  });
}

bool IsVariableName(const std::string& s) {
  if (s.empty() || !(IsAlpha(s[0]) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '_'; });
}

// +HH:MM / -HH:MM (hours 00-14), SYSTEM, or a zone name like Asia/Shanghai.
bool IsTimeZone(const std::string& tz) {
  if (tz.size() == 6 && (tz[0] == '+' || tz[0] == '-')) {
    return IsDigit(tz[1]) && IsDigit(tz[2]) && tz[3] == ':' && tz[4] >= '0' && tz[4] <= '5' &&
           IsDigit(tz[5]) && (tz[1] - '0') * 10 + (tz[2] - '0') <= 14;
  }
  if (tz.empty() || tz.size() > 64) return false;
  // Zone names: [A-Za-z_]+ then /[A-Za-z0-9_+-]+ parts.
  size_t slash = tz.find('/');
  std::string head = tz.substr(0, slash);
  if (head.empty() ||
      !std::all_of(head.begin(), head.end(), [](char c) { return IsAlpha(c) || c == '_'; }))
    return false;
  while (slash != std::string::npos) {
    size_t next = tz.find('/', slash + 1);
    std::string part = tz.substr(slash + 1, next == std::string::npos ? next : next - slash - 1);
    if (part.empty() || !std::all_of(part.begin(), part.end(), [](char c) {
          return IsAlpha(c) || IsDigit(c) || c == '_' || c == '+' || c == '-';
        }))
      return false;
    slash = next;
  }
  return true;
}

// host:port with a host name, an IPv4 address or a bracketed IPv6 address.
bool IsListenAddress(const std::string& s) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::string host = s.substr(0, colon), port = s.substr(colon + 1);
  if (host.size() > 255) return false;  // DNS names have at most 253 characters
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), IsDigit) ||
      std::stoi(port) > 65535)
    return false;
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return false;
    return std::all_of(host.begin() + 1, host.end() - 1, [](char c) {
      return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
    });
  }
  return std::all_of(host.begin(), host.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '.' || c == '-'; });
}

// Walks the YAML tree, turning every problem into a ConfigError that names
// the file, line, column and key path.
class Parser {
 public:
  Parser(std::string file, const LoadOptions& options)
      : file_(std::move(file)), options_(options) {}

  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& path,
                         const std::string& what) const {
    std::ostringstream os;
    os << file_;
    if (!mark.is_null()) os << ":" << mark.line + 1 << ":" << mark.column + 1;
    os << ": " << (path.empty() ? "(top level)" : path) << ": " << what;
    throw ConfigError(OneLine(os.str()));
  }

  void RequireMap(const YAML::Node& n, const std::string& path) const {
    if (!n.IsMap()) Fail(n.Mark(), path, "must be a mapping (key: value pairs)");
  }

  void CheckKeys(const YAML::Node& map, const std::string& path,
                 const std::vector<std::string>& allowed) const {
    std::set<std::string> seen;
    for (const auto& kv : map) {
      std::string key = Key(kv.first, path);
      std::string where = path.empty() ? key : path + "." + key;
      if (!seen.insert(key).second) Fail(kv.first.Mark(), where, "duplicate key");
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      if (key == "<<")
        Fail(kv.first.Mark(), where,
             "YAML merge keys (<<) are not supported: write the keys out, or use ${VAR} for "
             "shared values");
      std::string best;
      size_t best_d = std::numeric_limits<size_t>::max();
      for (const auto& a : allowed) {
        size_t d = EditDistance(key, a);
        if (d < best_d) {
          best_d = d;
          best = a;
        }
      }
      std::string msg = "unknown key";
      if (best_d <= std::max<size_t>(2, key.size() / 3))
        msg += " (did you mean \"" + best + "\"?)";
      else {
        msg += " (known keys:";
        for (const auto& a : allowed) msg += " " + a;
        msg += ")";
      }
      Fail(kv.first.Mark(), where, msg);
    }
  }

  // A mapping key: a plain scalar, never a list or mapping.
  std::string Key(const YAML::Node& k, const std::string& path) const {
    if (!k.IsScalar()) Fail(k.Mark(), path, "a key must be a plain string, not a list or mapping");
    return k.Scalar();
  }

  // `what` names the expected type, for a value of the wrong shape.
  std::string Str(const YAML::Node& n, const std::string& path,
                  const char* what = "a string") const {
    if (!n.IsScalar()) Fail(n.Mark(), path, std::string("must be ") + what + ", not " + Shape(n));
    std::string err;
    std::string v = ExpandEnv(n.Scalar(), options_.env, &err);
    if (!err.empty()) Fail(n.Mark(), path, err);
    return v;
  }

  static const char* Shape(const YAML::Node& n) {
    if (n.IsNull()) return "empty";
    if (n.IsSequence()) return "a list";
    if (n.IsMap()) return "a mapping";
    return "a scalar";
  }

  int64_t Int(const YAML::Node& n, const std::string& path, int64_t min, int64_t max) const {
    std::string s = Str(n, path, "an integer");
    const std::string range =
        "must be between " + std::to_string(min) + " and " + std::to_string(max);
    // Plain decimal only: no spaces, signs other than '-', fractions or units.
    size_t digits = s.size() > 0 && s[0] == '-' ? 1 : 0;
    if (s.size() == digits || !std::all_of(s.begin() + digits, s.end(), IsDigit))
      Fail(n.Mark(), path, "must be an integer (got " + Quoted(s) + ")");
    int64_t v = 0;
    try {
      v = std::stoll(s);
    } catch (const std::out_of_range&) {
      Fail(n.Mark(), path, range + " (got " + Quoted(s) + ")");
    }
    if (v < min || v > max) Fail(n.Mark(), path, range + " (got " + s + ")");
    return v;
  }

  std::string OneOf(const YAML::Node& n, const std::string& path,
                    const std::vector<std::string>& values) const {
    std::string list;
    for (const auto& v : values) list += (list.empty() ? "" : " | ") + v;
    const std::string what = "one of " + list;
    std::string s = Str(n, path, what.c_str());
    if (std::find(values.begin(), values.end(), s) != values.end()) return s;
    Fail(n.Mark(), path, "must be " + what + " (got " + Quoted(s) + ")");
  }

  std::map<std::string, std::string> StringMap(const YAML::Node& n, const std::string& path) const {
    std::map<std::string, std::string> out;
    if (n.IsNull()) return out;
    RequireMap(n, path);
    for (const auto& kv : n) {
      std::string key = Key(kv.first, path);
      if (out.count(key)) Fail(kv.first.Mark(), path + "." + key, "duplicate key");
      if (key.find("${") != std::string::npos)
        Fail(kv.first.Mark(), path + "." + key,
             "keys are never expanded (${VAR} works in values only); write the key itself");
      out[key] = Str(kv.second, path + "." + key);
    }
    return out;
  }

  // Reads a file named in the config (a secret or a certificate).
  // `shown` is how messages name it (default: the path itself).
  FileInfo ReadNamedFile(const YAML::Node& n, const std::string& path, const std::string& file,
                         const std::string& shown = "") const {
    if (file.empty()) Fail(n.Mark(), path, "must not be empty");
    FileRead r = options_.read_file ? options_.read_file(file) : ReadFileFromDisk(file);
    if (!r.info)
      Fail(n.Mark(), path, "cannot read " + Quoted(shown.empty() ? file : shown) + ": " + r.error);
    return std::move(*r.info);
  }

  KafkaConfig Kafka(const YAML::Node& n, const std::string& path, const KafkaConfig& base) const {
    KafkaConfig k = base;
    if (!n || n.IsNull()) return k;
    RequireMap(n, path);
    CheckKeys(n, path, {"bootstrap_servers", "properties"});
    if (n["bootstrap_servers"]) {
      k.bootstrap_servers = Str(n["bootstrap_servers"], path + ".bootstrap_servers");
      if (k.bootstrap_servers.empty())
        Fail(n["bootstrap_servers"].Mark(), path + ".bootstrap_servers", "must not be empty");
    }
    if (n["properties"]) {
      for (auto& [key, value] : StringMap(n["properties"], path + ".properties")) {
        if (key == "bootstrap.servers")
          Fail(n["properties"].Mark(), path + ".properties." + key,
               "set kafka.bootstrap_servers instead");
        // A transactional producer refuses every produce outside a
        // transaction (_STATE): each row would go DEAD after max_attempts.
        if (key == "transactional.id")
          Fail(n["properties"].Mark(), path + ".properties." + key,
               "the relay does not use Kafka transactions (its producer is idempotent; "
               "consumers deduplicate by event_key): remove it");
        k.properties[key] = value;
      }
    }
    return k;
  }

  TlsConfig Tls(const YAML::Node& n, const std::string& path,
                std::vector<std::string>* warnings) const {
    TlsConfig t;
    if (!n || n.IsNull()) return t;
    RequireMap(n, path);
    CheckKeys(n, path, {"mode", "ca", "cert", "key"});
    if (n["mode"])
      t.mode = OneOf(n["mode"], path + ".mode",
                     {"disabled", "preferred", "required", "verify_ca", "verify_identity"});
    if (n["ca"]) t.ca = Str(n["ca"], path + ".ca");
    if (n["cert"]) t.cert = Str(n["cert"], path + ".cert");
    if (n["key"]) t.key = Str(n["key"], path + ".key");
    if ((t.mode == "verify_ca" || t.mode == "verify_identity") && t.ca.empty())
      Fail(n.Mark(), path + ".ca", "is required when mode is " + t.mode);
    if (t.cert.empty() != t.key.empty())
      Fail(n.Mark(), path, "cert and key must be given together");
    if (t.mode != "disabled") {
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

  // `parent` is the service's mapping, for the position of a missing block.
  MysqlConfig Mysql(const YAML::Node& parent, const YAML::Node& n, const std::string& path,
                    std::vector<std::string>* warnings) const {
    MysqlConfig m;
    if (!n) Fail(parent.Mark(), path, "is required");
    RequireMap(n, path);
    // Before the unknown-key check, which would only say "unknown key".
    if (n["password"])
      Fail(n["password"].Mark(), path + ".password",
           "a password is never written in the config file: use password_env (the name of an "
           "environment variable holding it) or password_file (a file holding it)");
    CheckKeys(n, path,
              {"host", "port", "user", "password_env", "password_file", "database", "table",
               "time_zone", "tls", "connect_timeout_ms", "read_timeout_ms"});
    if (n["host"]) m.host = Str(n["host"], path + ".host");
    if (m.host.empty()) Fail(n.Mark(), path + ".host", "must not be empty");
    if (n["port"]) m.port = static_cast<int>(Int(n["port"], path + ".port", 1, 65535));
    if (!n["user"]) Fail(n.Mark(), path + ".user", "is required");
    m.user = Str(n["user"], path + ".user");
    if (m.user.empty()) Fail(n["user"].Mark(), path + ".user", "must not be empty");
    if (!n["database"]) Fail(n.Mark(), path + ".database", "is required");
    m.database = Str(n["database"], path + ".database");
    if (!IsIdentifier(m.database))
      Fail(n["database"].Mark(), path + ".database",
           "must be a plain identifier ([A-Za-z_][A-Za-z0-9_$]*, at most 64) (got " +
               Quoted(m.database) + ")");
    if (n["table"]) {
      m.table = Str(n["table"], path + ".table");
      if (!IsIdentifier(m.table))
        Fail(n["table"].Mark(), path + ".table",
             "must be a plain identifier ([A-Za-z_][A-Za-z0-9_$]*, at most 64) (got " +
                 Quoted(m.table) + ")");
    }
    if (n["password_env"] && n["password_file"])
      Fail(n["password_file"].Mark(), path + ".password_file",
           "give either password_env or password_file, not both");
    m.password_source = "none";
    if (const YAML::Node pe = n["password_env"]) {
      const std::string where = path + ".password_env";
      // The name of the variable, taken literally: expanding ${...} here would
      // put the password itself where a name belongs, and into this message.
      if (!pe.IsScalar()) Fail(pe.Mark(), where, std::string("must be a string, not ") + Shape(pe));
      const std::string var = pe.Scalar();
      if (var.find('$') != std::string::npos)
        Fail(pe.Mark(), where,
             "takes the name of an environment variable, not its value: write password_env: "
             "ORDER_DB_PASSWORD, without ${}");
      if (!IsVariableName(var))
        Fail(pe.Mark(), where,
             "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*) (got " + Quoted(var) +
                 ")");
      auto v = options_.env(var);
      if (!v) Fail(pe.Mark(), where, "environment variable " + var + " is not set");
      m.password = *v;
      m.password_source = "env:" + var;
    }
    if (const YAML::Node pf = n["password_file"]) {
      const std::string where = path + ".password_file";
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
      m.password = std::move(info.contents);
      while (!m.password.empty() && (m.password.back() == '\n' || m.password.back() == '\r'))
        m.password.pop_back();
      if (m.password.empty())
        Fail(pf.Mark(), where,
             Quoted(shown) + " is empty; leave out password_file to connect without a password");
      m.password_source = "file:" + shown;
    }
    if (n["time_zone"]) {
      std::string tz = Str(n["time_zone"], path + ".time_zone");
      if (!IsTimeZone(tz))
        Fail(n["time_zone"].Mark(), path + ".time_zone",
             "must be an offset like +08:00, SYSTEM or a zone name like Asia/Shanghai (got " +
                 Quoted(tz) + ")");
      m.time_zone = tz;
    }
    m.tls = Tls(n["tls"], path + ".tls", warnings);
    if (n["connect_timeout_ms"])
      m.connect_timeout_ms =
          static_cast<int>(Int(n["connect_timeout_ms"], path + ".connect_timeout_ms", 100, 600000));
    if (n["read_timeout_ms"])
      m.read_timeout_ms =
          static_cast<int>(Int(n["read_timeout_ms"], path + ".read_timeout_ms", 1000, 3600000));
    return m;
  }

  ServiceConfig Service(const YAML::Node& n, const std::string& path, const KafkaConfig& kafka,
                        std::vector<std::string>* warnings) const {
    ServiceConfig s;
    RequireMap(n, path);
    CheckKeys(n, path,
              {"name", "mysql", "topic", "topics", "batch_size", "poll_interval_ms", "lease_ms",
               "ordering", "dead_policy", "retry", "retention", "kafka", "max_inflight_batches",
               "gauge_interval_ms"});
    if (!n["name"]) Fail(n.Mark(), path + ".name", "is required");
    s.name = Str(n["name"], path + ".name");
    if (!IsServiceName(s.name))
      Fail(n["name"].Mark(), path + ".name",
           "must be 1-64 characters of [A-Za-z0-9_.-] (got " + Quoted(s.name) + ")");
    s.mysql = Mysql(n, n["mysql"], path + ".mysql", warnings);
    if (n["topic"]) s.topic = Str(n["topic"], path + ".topic");
    {
      const YAML::Mark mark = n["topic"] ? n["topic"].Mark() : n.Mark();
      TopicTemplate t;
      std::string err;
      if (!TopicTemplate::Parse(s.topic, &t, &err)) Fail(mark, path + ".topic", err);
      // The shortest topic it can render: every row-dependent placeholder empty.
      std::string fixed = t.Render("", "", s.name);
      std::string why;
      if (!t.uses_row_fields() && !IsValidTopicName(fixed, &why))
        Fail(mark, path + ".topic", "renders an invalid Kafka topic name: " + why);
      if (fixed.size() > 249)
        Fail(mark, path + ".topic",
             "renders topic names of at least " + std::to_string(fixed.size()) +
                 " characters; Kafka allows 249");
    }
    if (const YAML::Node topics = n["topics"]) {
      s.topics = StringMap(topics, path + ".topics");
      for (const auto& kv : topics) {
        const std::string event_type = kv.first.Scalar();
        const std::string& topic = s.topics[event_type];
        std::string why;
        if (!IsValidTopicName(topic, &why)) {
          if (topic.find('{') != std::string::npos)
            why +=
                " (topics values are topic names taken literally; placeholders work only in "
                "topic)";
          Fail(kv.second.Mark(), path + ".topics." + event_type, why);
        }
      }
    }
    if (n["batch_size"])
      s.batch_size = static_cast<int>(Int(n["batch_size"], path + ".batch_size", 1, 10000));
    if (n["poll_interval_ms"])
      s.poll_interval_ms =
          static_cast<int>(Int(n["poll_interval_ms"], path + ".poll_interval_ms", 1, 60000));
    // Leases are whole seconds in the DATETIME column, and the fencing token is
    // the lease deadline, so a lease must span at least two seconds.
    if (n["lease_ms"]) s.lease_ms = Int(n["lease_ms"], path + ".lease_ms", 2000, 86400000);
    if (n["ordering"])
      s.ordering = OneOf(n["ordering"], path + ".ordering", {"per_aggregate", "none"}) == "none"
                       ? Ordering::kNone
                       : Ordering::kPerAggregate;
    if (n["dead_policy"])
      s.dead_policy = OneOf(n["dead_policy"], path + ".dead_policy", {"block", "skip"}) == "skip"
                          ? DeadPolicy::kSkip
                          : DeadPolicy::kBlock;
    if (const YAML::Node r = n["retry"]; r && !r.IsNull()) {
      std::string rp = path + ".retry";
      RequireMap(r, rp);
      CheckKeys(r, rp, {"max_attempts", "initial_backoff_ms", "max_backoff_ms"});
      if (r["max_attempts"])
        s.retry.max_attempts =
            static_cast<int>(Int(r["max_attempts"], rp + ".max_attempts", 1, 1000));
      if (r["initial_backoff_ms"])
        s.retry.initial_backoff_ms =
            Int(r["initial_backoff_ms"], rp + ".initial_backoff_ms", 1, 86400000);
      if (r["max_backoff_ms"])
        s.retry.max_backoff_ms = Int(r["max_backoff_ms"], rp + ".max_backoff_ms", 1, 86400000);
      if (s.retry.max_backoff_ms < s.retry.initial_backoff_ms)
        Fail(r["max_backoff_ms"] ? r["max_backoff_ms"].Mark() : r.Mark(), rp + ".max_backoff_ms",
             "must be >= initial_backoff_ms (" + std::to_string(s.retry.initial_backoff_ms) + ")");
    }
    if (const YAML::Node r = n["retention"]; r && !r.IsNull()) {
      std::string rp = path + ".retention";
      RequireMap(r, rp);
      CheckKeys(r, rp, {"sent_days", "batch_rows", "pause_ms", "interval_s"});
      if (r["sent_days"])
        s.retention.sent_days = static_cast<int>(Int(r["sent_days"], rp + ".sent_days", 1, 36500));
      if (r["batch_rows"])
        s.retention.batch_rows =
            static_cast<int>(Int(r["batch_rows"], rp + ".batch_rows", 1, 100000));
      if (r["pause_ms"])
        s.retention.pause_ms = static_cast<int>(Int(r["pause_ms"], rp + ".pause_ms", 0, 60000));
      if (r["interval_s"])
        s.retention.interval_s =
            static_cast<int>(Int(r["interval_s"], rp + ".interval_s", 1, 86400));
    }
    s.kafka = Kafka(n["kafka"], path + ".kafka", kafka);
    if (s.kafka.bootstrap_servers.empty())
      Fail(n.Mark(), path + ".kafka.bootstrap_servers",
           "is required (here or in the top-level kafka block)");
    if (n["max_inflight_batches"])
      s.max_inflight_batches =
          static_cast<int>(Int(n["max_inflight_batches"], path + ".max_inflight_batches", 1, 64));
    if (n["gauge_interval_ms"])
      s.gauge_interval_ms =
          static_cast<int>(Int(n["gauge_interval_ms"], path + ".gauge_interval_ms", 100, 600000));
    return s;
  }

  LoadedConfig Root(const YAML::Node& root) const {
    LoadedConfig out;
    Config& c = out.config;
    c.path = file_;
    if (!root || root.IsNull()) Fail(YAML::Mark(), "", "the file is empty");
    RequireMap(root, "");
    CheckKeys(root, "", {"instance_id", "http", "log", "kafka", "services"});
    if (root["instance_id"]) c.instance_id = Str(root["instance_id"], "instance_id");
    if (c.instance_id.empty()) Fail(root["instance_id"].Mark(), "instance_id", "must not be empty");
    if (const YAML::Node h = root["http"]; h && !h.IsNull()) {
      RequireMap(h, "http");
      CheckKeys(h, "http", {"listen"});
      if (h["listen"]) {
        c.http_listen = Str(h["listen"], "http.listen");
        if (!IsListenAddress(c.http_listen))
          Fail(h["listen"].Mark(), "http.listen",
               "must be host:port, e.g. 127.0.0.1:9464 (got " + Quoted(c.http_listen) + ")");
      }
    }
    if (const YAML::Node l = root["log"]; l && !l.IsNull()) {
      RequireMap(l, "log");
      CheckKeys(l, "log", {"level", "format"});
      if (l["level"])
        c.log_level = OneOf(l["level"], "log.level", {"debug", "info", "warn", "error"});
      if (l["format"]) c.log_format = OneOf(l["format"], "log.format", {"json", "text"});
    }
    c.kafka = Kafka(root["kafka"], "kafka", KafkaConfig{});
    const YAML::Node services = root["services"];
    if (!services) Fail(root.Mark(), "services", "is required (a list of at least one service)");
    if (!services.IsSequence() || services.size() == 0)
      Fail(services.Mark(), "services", "must be a list of at least one service");
    std::set<std::string> names;
    for (size_t i = 0; i < services.size(); ++i) {
      std::string path = "services[" + std::to_string(i) + "]";
      ServiceConfig s = Service(services[i], path, c.kafka, &out.warnings);
      if (!names.insert(s.name).second)
        Fail(services[i]["name"].Mark(), path + ".name",
             "duplicate service name \"" + s.name + "\"");
      // Legal (they act as two replicas of one service, each row going to one
      // of them), but far more often a copied block whose database was not
      // changed: the other table would be left undrained.
      for (size_t j = 0; j < c.services.size(); ++j) {
        const MysqlConfig& a = c.services[j].mysql;
        if (a.host == s.mysql.host && a.port == s.mysql.port && a.database == s.mysql.database &&
            a.table == s.mysql.table)
          out.warnings.push_back(path + ".mysql: the same table as services[" + std::to_string(j) +
                                 "] (" + s.mysql.database + "." + s.mysql.table + " on " +
                                 s.mysql.host + ":" + std::to_string(s.mysql.port) +
                                 "): both drain it like two replicas; was another database meant?");
      }
      c.services.push_back(std::move(s));
    }
    return out;
  }

 private:
  std::string file_;
  const LoadOptions& options_;
};

// Sees where each document of a stream starts and whether it holds anything.
class DocumentScan : public YAML::EventHandler {
 public:
  struct Doc {
    YAML::Mark start;
    bool has_content = false;
  };
  std::vector<Doc> docs;

  void OnDocumentStart(const YAML::Mark& mark) override { docs.push_back({mark, false}); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { Content(); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Content();
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Content();
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Content();
  }
  void OnMapEnd() override {}

 private:
  void Content() {
    if (!docs.empty()) docs.back().has_content = true;
  }
};

// The usual causes of a YAML syntax error, recognised on the offending line.
std::string SyntaxHint(const std::string& text, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return "";
  std::istringstream in(text);
  std::string line;
  for (int i = 0; i <= mark.line; ++i)
    if (!std::getline(in, line)) return "";
  if (line.find_first_not_of(" \t") != std::string::npos &&
      line.substr(0, line.find_first_not_of(" \t")).find('\t') != std::string::npos)
    return " (the line is indented with a tab; YAML allows only spaces)";
  if (size_t close = line.find("]:");
      close != std::string::npos && line.rfind('[', close) != std::string::npos)
    return " (a value starting with [ is a list: quote an IPv6 address, \"[::1]:9464\")";
  if (line.find("${") != std::string::npos)
    return " (inside {...} or [...], quote a value with ${VAR}: \"${VAR}\")";
  if (line.find('`') != std::string::npos) return " (a value starting with ` must be quoted)";
  return "";
}

}  // namespace

LoadedConfig LoadConfigText(const std::string& text, const std::string& name,
                            const LoadOptions& options) {
  Parser parser(name, options);
  YAML::Node root;
  try {
    // Look at the documents before loading the first. Not YAML::LoadAll:
    // yaml-cpp 0.7 answers a ',' outside [...] or {...} with an endless series
    // of empty documents that never advance, and LoadAll collects them until
    // memory runs out (found by fuzzing: a file starting with ',' hung check).
    std::istringstream in(text);
    YAML::Parser stream(in);
    DocumentScan scan;
    for (int i = 0; i < 3 && stream.HandleNextDocument(scan); ++i) {
      const auto& docs = scan.docs;
      if (docs.size() >= 2 && docs.back().start.pos == docs[docs.size() - 2].start.pos) {
        const YAML::Mark& at = docs.back().start;
        char c = at.pos >= 0 && static_cast<size_t>(at.pos) < text.size() ? text[at.pos] : ' ';
        parser.Fail(at, "yaml",
                    c == ',' ? "unexpected ',' (a comma separates items only inside [...] or {...})"
                             : "cannot parse the text here");
      }
      // A second document would be ignored silently; a bare trailing "---" is harmless.
      if (docs.size() >= 2 && docs.back().has_content)
        parser.Fail(docs.back().start, "yaml",
                    "more than one YAML document (a second \"---\"); the config is one document");
    }
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    parser.Fail(e.mark, "yaml", e.msg + SyntaxHint(text, e.mark));
  }
  try {
    return parser.Root(root);
  } catch (const YAML::Exception& e) {
    parser.Fail(e.mark, "yaml", e.msg);
  }
}

LoadedConfig LoadConfigFile(const std::string& path, const LoadOptions& options) {
  // A directory opens and reads as nothing ("the file is empty" misled), and
  // a device such as /dev/zero never ends: name the one, bound the other.
  // Pipes stay allowed (--config <(envsubst < tmpl.yaml)).
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw ConfigError(path + ": cannot read the config file: it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ConfigError(path + ": cannot open the config file: " + std::strerror(errno) +
                      " (missing or not readable)");
  std::string text;
  char buf[64 * 1024];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxConfigFileBytes)
      throw ConfigError(path + ": the config file is larger than 4 MiB; is it the right file?");
  }
  return LoadConfigText(text, path, options);
}

}  // namespace outbox
