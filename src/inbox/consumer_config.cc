#include "inbox/consumer_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "config/config_password.h"
#include "config/env_expand.h"
#include "config/topic_template.h"  // IsValidTopicName
#include "inbox/consumer_rules.h"

namespace outbox::inbox {

using outbox::ConfigError;

std::string DeadLetterTopic(const std::string& tmpl, const std::string& topic) {
  std::string out;
  for (size_t i = 0; i < tmpl.size();) {
    if (tmpl.compare(i, 7, "{topic}") == 0) {
      out += topic;
      i += 7;
    } else {
      out += tmpl[i++];
    }
  }
  return out;
}

bool IsDeadLetterTopic(const std::string& tmpl, const std::string& topic) {
  const size_t at = tmpl.find("{topic}");
  if (at == std::string::npos) return topic == tmpl;
  if (tmpl.find("{topic}", at + 1) != std::string::npos) return false;  // not worth inverting
  const std::string prefix = tmpl.substr(0, at), suffix = tmpl.substr(at + 7);
  return topic.size() > prefix.size() + suffix.size() &&
         topic.compare(0, prefix.size(), prefix) == 0 &&
         topic.compare(topic.size() - suffix.size(), suffix.size(), suffix) == 0;
}

namespace {

// Not ::isdigit: that is undefined for a plain char >= 0x80 and follows the locale.
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

// Walks the YAML tree; every problem becomes a ConfigError naming the file,
// line, column and key path, like the relay's config (src/config/config_loader.cc).
class Parser {
 public:
  Parser(std::string file, const outbox::LoadOptions& options)
      : file_(std::move(file)), options_(options) {}

  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& path,
                         const std::string& what) const {
    std::ostringstream os;
    os << file_;
    if (!mark.is_null()) os << ":" << mark.line + 1 << ":" << mark.column + 1;
    os << ": " << (path.empty() ? "(top level)" : path) << ": " << what;
    throw ConfigError(os.str());
  }

  void Map(const YAML::Node& n, const std::string& path,
           const std::vector<std::string>& allowed) const {
    if (!n.IsMap()) Fail(n.Mark(), path, "must be a mapping (key: value pairs)");
    std::set<std::string> seen;
    for (const auto& kv : n) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      const std::string where = path.empty() ? key : fmt::format("{}.{}", path, key);
      if (!seen.insert(key).second) Fail(kv.first.Mark(), where, "duplicate key");
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string best;
      size_t best_d = 1000;
      for (const auto& a : allowed) {
        if (size_t d = outbox::EditDistance(key, a); d < best_d) best_d = d, best = a;
      }
      if (best_d <= std::max<size_t>(2, key.size() / 3))
        Fail(kv.first.Mark(), where, "unknown key (did you mean \"" + best + "\"?)");
      std::string known;
      for (const auto& a : allowed) known += " " + a;
      Fail(kv.first.Mark(), where, "unknown key (known keys:" + known + ")");
    }
  }

  std::string Str(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) Fail(n.Mark(), path, "must be a string");
    std::string err;
    std::string v = outbox::ExpandEnv(n.Scalar(), options_.env, &err);
    if (!err.empty()) Fail(n.Mark(), path, err);
    return v;
  }

  std::string NonEmpty(const YAML::Node& n, const std::string& path) const {
    std::string v = Str(n, path);
    if (v.empty()) Fail(n.Mark(), path, "must not be empty");
    return v;
  }

  int Int(const YAML::Node& n, const std::string& path, int min, int max) const {
    std::string s = Str(n, path);
    const std::string range =
        "must be an integer between " + std::to_string(min) + " and " + std::to_string(max);
    if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), IsAsciiDigit))
      Fail(n.Mark(), path, range + " (got \"" + s + "\")");
    int v = std::stoi(s);
    if (std::string w = rules::Range(v, min, max); !w.empty()) Fail(n.Mark(), path, w);
    return v;
  }

  std::string OneOf(const YAML::Node& n, const std::string& path,
                    const std::vector<std::string>& values) const {
    std::string v = Str(n, path);
    if (std::string w = rules::OneOf(v, values); !w.empty()) Fail(n.Mark(), path, w);
    return v;
  }

  void Topics(const YAML::Node& k, ConsumerKafkaConfig* c) const {
    const YAML::Node t = k["topics"], r = k["topic_regex"];
    if (!t == !r) Fail(k.Mark(), "kafka", "set exactly one of topics (a list) and topic_regex");
    if (t) {
      if (!t.IsSequence() || t.size() == 0)
        Fail(t.Mark(), "kafka.topics", "must be a list of at least one topic");
      for (size_t i = 0; i < t.size(); ++i) {
        const std::string path = "kafka.topics[" + std::to_string(i) + "]";
        std::string name = Str(t[i], path);
        if (std::string w = rules::Topic(name); !w.empty()) Fail(t[i].Mark(), path, w);
        c->topics.push_back(name);
      }
      return;
    }
    c->topic_regex = NonEmpty(r, "kafka.topic_regex");
    if (std::string w = rules::TopicRegex(c->topic_regex); !w.empty())
      Fail(r.Mark(), "kafka.topic_regex", w);
  }

  // `n`: where messages point (the key, or the kafka block when it is left out).
  void DeadLetter(const YAML::Node& n, ConsumerKafkaConfig* c) const {
    if (std::string w = rules::DeadLetter(*c); !w.empty())
      Fail(n.Mark(), "kafka.dead_letter_topic", w);
  }

  void Properties(const YAML::Node& n, ConsumerKafkaConfig* c) const {
    if (n.IsNull()) return;
    if (!n.IsMap()) Fail(n.Mark(), "kafka.properties", "must be a mapping of librdkafka settings");
    for (const auto& kv : n) {
      const std::string key = kv.first.Scalar(), path = "kafka.properties." + key;
      const std::string value = Str(kv.second, path);
      if (std::string w = rules::Property(key, value); !w.empty())
        Fail(rules::Property(key, "") == w ? kv.first.Mark() : kv.second.Mark(), path, w);
      c->properties[key] = value;
    }
  }

  void Kafka(const YAML::Node& k, ConsumerConfig* c) const {
    if (!k) Fail(YAML::Mark(), "kafka", "is required");
    Map(k, "kafka",
        {"bootstrap_servers", "group_id", "topics", "topic_regex", "auto_offset_reset",
         "dead_letter_topic", "properties"});
    ConsumerKafkaConfig& kc = c->kafka;
    if (!k["bootstrap_servers"]) Fail(k.Mark(), "kafka.bootstrap_servers", "is required");
    kc.bootstrap_servers = NonEmpty(k["bootstrap_servers"], "kafka.bootstrap_servers");
    kc.group_id = k["group_id"] ? NonEmpty(k["group_id"], "kafka.group_id") : c->consumer;
    Topics(k, &kc);
    if (k["auto_offset_reset"])
      kc.auto_offset_reset =
          OneOf(k["auto_offset_reset"], "kafka.auto_offset_reset", {"earliest", "latest"});
    if (k["dead_letter_topic"])
      kc.dead_letter_topic = NonEmpty(k["dead_letter_topic"], "kafka.dead_letter_topic");
    DeadLetter(k["dead_letter_topic"] ? k["dead_letter_topic"] : k, &kc);
    if (k["properties"]) Properties(k["properties"], &kc);
  }

  // The relay's rules and messages (src/config/config_password.h).
  void Password(const YAML::Node& m, DbConfig* d, std::vector<std::string>* warnings) const {
    try {
      outbox::Password p =
          outbox::ReadPassword(m, "mysql", options_, "INBOX_DB_PASSWORD", warnings);
      d->password = std::move(p.value);
      d->password_source = std::move(p.source);
    } catch (const outbox::ConfigProblem& p) {
      Fail(p.mark, p.path, p.what);
    }
  }

  void Tls(const YAML::Node& t, DbConfig* d) const {
    Map(t, "mysql.tls", {"mode", "ca", "cert", "key"});
    if (t["mode"])
      d->tls_mode = OneOf(t["mode"], "mysql.tls.mode",
                          {"disabled", "preferred", "required", "verify_ca", "verify_identity"});
    if (t["ca"]) d->tls_ca = NonEmpty(t["ca"], "mysql.tls.ca");
    if (t["cert"]) d->tls_cert = NonEmpty(t["cert"], "mysql.tls.cert");
    if (t["key"]) d->tls_key = NonEmpty(t["key"], "mysql.tls.key");
    if (auto p = rules::Tls(*d)) Fail(t.Mark(), p->path, p->what);
  }

  // A key that must be there, read with NonEmpty.
  std::string Required(const YAML::Node& parent, const char* key, const std::string& path,
                       const std::string& why = "is required") const {
    if (!parent[key]) Fail(parent.Mark(), path, why);
    return NonEmpty(parent[key], path);
  }

  void Mysql(const YAML::Node& m, DbConfig* d, std::vector<std::string>* warnings) const {
    if (!m) Fail(YAML::Mark(), "mysql", "is required");
    Map(m, "mysql",
        {"host", "port", "user", "password_env", "password_file", "database", "tls",
         "connect_timeout_ms", "read_timeout_ms", "statement_cache"});
    if (m["host"]) d->host = NonEmpty(m["host"], "mysql.host");
    if (m["port"]) d->port = Int(m["port"], "mysql.port", 1, 65535);
    d->user = Required(m, "user", "mysql.user");
    d->database = Required(m, "database", "mysql.database");
    Password(m, d, warnings);
    if (const YAML::Node t = m["tls"]; t && !t.IsNull()) Tls(t, d);
    if (m["connect_timeout_ms"])
      d->connect_timeout_ms = Int(m["connect_timeout_ms"], "mysql.connect_timeout_ms", 100, 600000);
    if (m["read_timeout_ms"])
      d->read_timeout_ms = Int(m["read_timeout_ms"], "mysql.read_timeout_ms", 1000, 3600000);
    if (m["statement_cache"])
      d->statement_cache = Int(m["statement_cache"], "mysql.statement_cache", 1, 16382);
  }

  void Policies(const YAML::Node& root, ConsumerConfig* c) const {
    if (root["version_check"]) {
      const std::string v =
          OneOf(root["version_check"], "version_check", {"none", "newer", "strict"});
      c->version_check = v == "none"     ? VersionCheck::kNone
                         : v == "strict" ? VersionCheck::kStrict
                                         : VersionCheck::kNewer;
    }
    if (root["max_gap_age_s"])
      c->max_gap_age_s = Int(root["max_gap_age_s"], "max_gap_age_s", 1, 30 * 86400);
    if (root["inbox_retention_days"])
      c->inbox_retention_days = Int(root["inbox_retention_days"], "inbox_retention_days", 0, 3650);
    if (root["concurrency"]) c->concurrency = Int(root["concurrency"], "concurrency", 1, 64);
  }

  void Values(const YAML::Node& v, ConsumerConfig* c) const {
    Map(v, "values", {"decode"});
    if (v["decode"])
      c->decode = OneOf(v["decode"], "values.decode", {"raw", "json"}) == "json"
                      ? ValueDecode::kJson
                      : ValueDecode::kRaw;
  }

  // The keys and words of the relay's kafka.schema_registry (docs/CONFIG.md).
  void Registry(const YAML::Node& n, RegistryConfig* r, std::vector<std::string>* warnings) const {
    const std::string path = "schema_registry";
    Map(n, path,
        {"url", "username", "username_env", "password_env", "password_file", "tls", "timeout_ms",
         "latest_refresh_ms"});
    r->url = Required(n, "url", path + ".url");
    if (n["username"] && n["username_env"])
      Fail(n["username_env"].Mark(), path + ".username_env",
           "give either username or username_env, not both");
    if (n["username"]) r->username = NonEmpty(n["username"], path + ".username");
    if (const YAML::Node u = n["username_env"]) {
      const std::string var = NonEmpty(u, path + ".username_env");
      const auto value = options_.env(var);
      if (!value)
        Fail(u.Mark(), path + ".username_env", "environment variable " + var + " is not set");
      r->username = *value;
    }
    try {
      outbox::Password p = outbox::ReadPassword(n, path, options_, "SR_PASSWORD", warnings);
      r->password = std::move(p.value);
      r->password_source = std::move(p.source);
    } catch (const outbox::ConfigProblem& p) {
      Fail(p.mark, p.path, p.what);
    }
    if (const YAML::Node t = n["tls"]; t && !t.IsNull()) {
      Map(t, path + ".tls", {"ca"});
      r->ca = Required(t, "ca", path + ".tls.ca");
    }
    if (n["timeout_ms"]) r->timeout_ms = Int(n["timeout_ms"], path + ".timeout_ms", 100, 120000);
    if (n["latest_refresh_ms"])
      r->latest_refresh_ms =
          Int(n["latest_refresh_ms"], path + ".latest_refresh_ms", 1000, 86400000);
    if (auto p = rules::Registry(*r)) {
      const YAML::Node at = n[p->path.substr(path.size() + 1)];
      Fail(at ? at.Mark() : n.Mark(), p->path, p->what);
    }
  }

  void Http(const YAML::Node& h, ConsumerConfig* c) const {
    Map(h, "http", {"listen"});
    c->http_listen = Required(h, "listen", "http.listen", "is required when http is set");
    if (std::string w = rules::Listen(c->http_listen); !w.empty())
      Fail(h["listen"].Mark(), "http.listen", w);
  }

  void Log(const YAML::Node& l, LoadedConsumerConfig* out) const {
    Map(l, "log", {"level", "format"});
    if (l["level"])
      out->log_level = OneOf(l["level"], "log.level", {"debug", "info", "warn", "error"});
    if (l["format"]) out->log_format = OneOf(l["format"], "log.format", {"json", "text"});
    const YAML::Mark m = l.Mark();
    out->log_at = file_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }

  // The node a rules::Problem's path names ("kafka.topics[0]" finds
  // kafka.topics), or the nearest one above it that exists.
  static YAML::Mark MarkOf(const YAML::Node& root, const std::string& path) {
    YAML::Node n = root;
    YAML::Mark mark = root.Mark();
    for (size_t at = 0; at <= path.size();) {
      size_t end = path.find_first_of(".[", at);
      if (end == std::string::npos) end = path.size();
      if (!n.IsMap() || !n[path.substr(at, end - at)]) break;
      n = n[path.substr(at, end - at)];
      mark = n.Mark();
      if (end < path.size() && path[end] == '[') break;
      at = end + 1;
    }
    return mark;
  }

  LoadedConsumerConfig Root(const YAML::Node& root) const {
    LoadedConsumerConfig out;
    ConsumerConfig& c = out.config;
    c.path = file_;
    if (!root || root.IsNull()) Fail(YAML::Mark(), "", "the file is empty");
    Map(root, "",
        {"consumer", "kafka", "max_attempts", "version_check", "max_gap_age_s",
         "inbox_retention_days", "concurrency", "mysql", "http", "log", "values",
         "schema_registry"});
    c.consumer = Required(root, "consumer", "consumer", "is required (the t_inbox.consumer value)");
    if (c.consumer.size() > 64)  // t_inbox.consumer is varchar(64)
      Fail(root["consumer"].Mark(), "consumer", "must be at most 64 characters");
    Kafka(root["kafka"], &c);
    if (root["max_attempts"]) c.max_attempts = Int(root["max_attempts"], "max_attempts", 1, 1000);
    Policies(root, &c);
    Mysql(root["mysql"], &c.mysql, &out.warnings);
    if (const YAML::Node h = root["http"]; h && !h.IsNull()) Http(h, &c);
    if (const YAML::Node v = root["values"]; v && !v.IsNull()) Values(v, &c);
    if (const YAML::Node r = root["schema_registry"]; r && !r.IsNull())
      Registry(r, &c.schema_registry, &out.warnings);
    if (const YAML::Node l = root["log"]; l && !l.IsNull()) Log(l, &out);
    // Every rule Validate applies holds here too (each was checked above,
    // at its key; this catches one added to rules:: alone).
    if (auto p = rules::FirstProblem(c)) Fail(MarkOf(root, p->path), p->path, p->what);
    return out;
  }

 private:
  std::string file_;
  const outbox::LoadOptions& options_;
};

}  // namespace

LoadedConsumerConfig LoadConsumerConfigText(const std::string& text, const std::string& name,
                                            const outbox::LoadOptions& options) {
  Parser parser(name, options);
  try {
    return parser.Root(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    parser.Fail(e.mark, "yaml", e.msg);
  }
}

LoadedConsumerConfig LoadConsumerConfigFile(const std::string& path,
                                            const outbox::LoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open the config file: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return LoadConsumerConfigText(ss.str(), path, options);
}

namespace {

ConsumerConfig Unpack(LoadedConsumerConfig loaded, std::vector<std::string>* warnings) {
  if (!loaded.log_at.empty())
    throw ConfigError(loaded.log_at +
                      ": log: is the example binary's (outbox-inbox-consumer); a service's "
                      "library consumer logs through ConsumerOptions::log or spdlog's default "
                      "logger, which the service configures: remove the section");
  if (warnings) *warnings = std::move(loaded.warnings);
  return std::move(loaded.config);
}

}  // namespace

ConsumerConfig LoadConfigFile(const std::string& path, std::vector<std::string>* warnings) {
  return Unpack(LoadConsumerConfigFile(path), warnings);
}

ConsumerConfig LoadConfigText(const std::string& text, const std::string& name,
                              std::vector<std::string>* warnings) {
  return Unpack(LoadConsumerConfigText(text, name), warnings);
}

std::string Validate(const ConsumerConfig& config) {
  const auto p = rules::FirstProblem(config);
  return p ? p->path + ": " + p->what : "";
}

}  // namespace outbox::inbox
