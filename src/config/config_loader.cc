#include "config/config_loader.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <regex>
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

std::optional<FileInfo> ReadFileFromDisk(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  FileInfo info;
  info.contents = ss.str();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) info.group_or_other_readable = (st.st_mode & 044) != 0;
  return info;
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
    throw ConfigError(os.str());
  }

  void RequireMap(const YAML::Node& n, const std::string& path) const {
    if (!n.IsMap()) Fail(n.Mark(), path, "must be a mapping (key: value pairs)");
  }

  void CheckKeys(const YAML::Node& map, const std::string& path,
                 const std::vector<std::string>& allowed) const {
    std::set<std::string> seen;
    for (const auto& kv : map) {
      std::string key = kv.first.Scalar();
      std::string where = path.empty() ? key : path + "." + key;
      if (!seen.insert(key).second) Fail(kv.first.Mark(), where, "duplicate key");
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
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

  std::string Str(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) Fail(n.Mark(), path, "must be a string");
    std::string err;
    std::string v = ExpandEnv(n.Scalar(), options_.env, &err);
    if (!err.empty()) Fail(n.Mark(), path, err);
    return v;
  }

  int64_t Int(const YAML::Node& n, const std::string& path, int64_t min, int64_t max) const {
    std::string s = Str(n, path);
    int64_t v = 0;
    size_t used = 0;
    try {
      v = std::stoll(s, &used, 10);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != s.size())
      Fail(n.Mark(), path, "must be an integer (got \"" + s + "\")");
    if (v < min || v > max) {
      Fail(n.Mark(), path,
           "must be between " + std::to_string(min) + " and " + std::to_string(max) + " (got " + s +
               ")");
    }
    return v;
  }

  std::string OneOf(const YAML::Node& n, const std::string& path,
                    const std::vector<std::string>& values) const {
    std::string s = Str(n, path);
    if (std::find(values.begin(), values.end(), s) != values.end()) return s;
    std::string list;
    for (const auto& v : values) list += (list.empty() ? "" : " | ") + v;
    Fail(n.Mark(), path, "must be one of " + list + " (got \"" + s + "\")");
  }

  std::map<std::string, std::string> StringMap(const YAML::Node& n, const std::string& path) const {
    std::map<std::string, std::string> out;
    if (n.IsNull()) return out;
    RequireMap(n, path);
    for (const auto& kv : n) {
      std::string key = kv.first.Scalar();
      out[key] = Str(kv.second, path + "." + key);
    }
    return out;
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
        k.properties[key] = value;
      }
    }
    return k;
  }

  TlsConfig Tls(const YAML::Node& n, const std::string& path) const {
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
    return t;
  }

  static bool IsIdentifier(const std::string& s) {
    static const std::regex re("^[A-Za-z_][A-Za-z0-9_$]{0,63}$");
    return std::regex_match(s, re);
  }

  MysqlConfig Mysql(const YAML::Node& n, const std::string& path,
                    std::vector<std::string>* warnings) const {
    MysqlConfig m;
    if (!n) Fail(YAML::Mark::null_mark(), path, "is required");
    RequireMap(n, path);
    CheckKeys(n, path,
              {"host", "port", "user", "password_env", "password_file", "database", "table",
               "time_zone", "tls", "connect_timeout_ms", "read_timeout_ms"});
    if (n["password"]) Fail(n["password"].Mark(), path + ".password", "not allowed");
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
           "must be a plain identifier ([A-Za-z_][A-Za-z0-9_$]*, at most 64) (got \"" + m.database +
               "\")");
    if (n["table"]) {
      m.table = Str(n["table"], path + ".table");
      if (!IsIdentifier(m.table))
        Fail(n["table"].Mark(), path + ".table",
             "must be a plain identifier ([A-Za-z_][A-Za-z0-9_$]*, at most 64) (got \"" + m.table +
                 "\")");
    }
    if (n["password_env"] && n["password_file"])
      Fail(n["password_file"].Mark(), path + ".password_file",
           "give either password_env or password_file, not both");
    m.password_source = "none";
    if (n["password_env"]) {
      std::string var = Str(n["password_env"], path + ".password_env");
      auto v = options_.env(var);
      if (!v)
        Fail(n["password_env"].Mark(), path + ".password_env",
             "environment variable " + var + " is not set");
      m.password = *v;
      m.password_source = "env:" + var;
    }
    if (n["password_file"]) {
      std::string file = Str(n["password_file"], path + ".password_file");
      auto reader = options_.read_file ? options_.read_file : ReadFileFromDisk;
      auto info = reader(file);
      if (!info)
        Fail(n["password_file"].Mark(), path + ".password_file",
             "cannot read \"" + file + "\" (missing or not readable)");
      if (info->group_or_other_readable)
        warnings->push_back(path + ".password_file: \"" + file +
                            "\" is readable by group or others; chmod 600 it");
      m.password = info->contents;
      while (!m.password.empty() && (m.password.back() == '\n' || m.password.back() == '\r'))
        m.password.pop_back();
      m.password_source = "file:" + file;
    }
    if (n["time_zone"]) {
      std::string tz = Str(n["time_zone"], path + ".time_zone");
      static const std::regex re(
          R"(^([+-](0\d|1[0-4]):[0-5]\d|SYSTEM|[A-Za-z_]+(/[A-Za-z0-9_+-]+)*)$)");
      if (!std::regex_match(tz, re))
        Fail(n["time_zone"].Mark(), path + ".time_zone",
             "must be an offset like +08:00, SYSTEM or a zone name like Asia/Shanghai (got \"" +
                 tz + "\")");
      m.time_zone = tz;
    }
    m.tls = Tls(n["tls"], path + ".tls");
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
    static const std::regex name_re("^[A-Za-z0-9_.-]{1,64}$");
    if (!std::regex_match(s.name, name_re))
      Fail(n["name"].Mark(), path + ".name",
           "must be 1-64 characters of [A-Za-z0-9_.-] (got \"" + s.name + "\")");
    s.mysql = Mysql(n["mysql"], path + ".mysql", warnings);
    if (n["topic"]) s.topic = Str(n["topic"], path + ".topic");
    {
      TopicTemplate t;
      std::string err;
      if (!TopicTemplate::Parse(s.topic, &t, &err))
        Fail(n["topic"] ? n["topic"].Mark() : n.Mark(), path + ".topic", err);
    }
    if (n["topics"]) {
      s.topics = StringMap(n["topics"], path + ".topics");
      for (const auto& [event_type, topic] : s.topics) {
        std::string why;
        if (!IsValidTopicName(topic, &why))
          Fail(n["topics"][event_type].Mark(), path + ".topics." + event_type, why);
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
    if (!root || root.IsNull()) Fail(YAML::Mark::null_mark(), "", "the file is empty");
    RequireMap(root, "");
    CheckKeys(root, "", {"instance_id", "http", "log", "kafka", "services"});
    if (root["instance_id"]) c.instance_id = Str(root["instance_id"], "instance_id");
    if (c.instance_id.empty()) Fail(root["instance_id"].Mark(), "instance_id", "must not be empty");
    if (const YAML::Node h = root["http"]; h && !h.IsNull()) {
      RequireMap(h, "http");
      CheckKeys(h, "http", {"listen"});
      if (h["listen"]) {
        c.http_listen = Str(h["listen"], "http.listen");
        static const std::regex re(R"(^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$)");
        std::smatch m;
        if (!std::regex_match(c.http_listen, m, re) || std::stoi(m[2]) > 65535)
          Fail(h["listen"].Mark(), "http.listen",
               "must be host:port, e.g. 127.0.0.1:9464 (got \"" + c.http_listen + "\")");
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
      c.services.push_back(std::move(s));
    }
    return out;
  }

 private:
  std::string file_;
  const LoadOptions& options_;
};

}  // namespace

LoadedConfig LoadConfigText(const std::string& text, const std::string& name,
                            const LoadOptions& options) {
  Parser parser(name, options);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    parser.Fail(e.mark, "yaml", e.msg);
  }
  try {
    return parser.Root(root);
  } catch (const YAML::Exception& e) {
    parser.Fail(e.mark, "yaml", e.msg);
  }
}

LoadedConfig LoadConfigFile(const std::string& path, const LoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open the config file (missing or not readable)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return LoadConfigText(ss.str(), path, options);
}

}  // namespace outbox
