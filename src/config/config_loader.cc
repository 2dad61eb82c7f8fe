#include "config/config_loader.h"

#include <sys/stat.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "config/config_parser.h"

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

namespace config_internal {

LoadedConfig Parser::Root(const YAML::Node& root) const {
  LoadedConfig out;
  Config& c = out.config;
  c.path = file_;
  if (!root || root.IsNull()) Fail(YAML::Mark(), "", "the file is empty");
  RequireMap(root, "");
  CheckKeys(root, "", {"instance_id", "http", "log", "kafka", "fleet", "services"});
  TopLevel(root, &c, &out.warnings);
  const YAML::Node services = root["services"];
  if (!services) Fail(root.Mark(), "services", "is required (a list of at least one service)");
  if (!services.IsSequence() || services.size() == 0)
    Fail(services.Mark(), "services", "must be a list of at least one service");
  std::set<std::string> names;
  for (size_t i = 0; i < services.size(); ++i) {
    std::string path = "services[" + std::to_string(i) + "]";
    ServiceConfig s;
    // A service abandoned half-way is kept as it is, so that c.services[i]
    // stays services[i], and is left out of the checks between services.
    const bool whole = Guard([&] { s = Service(services[i], path, c.kafka, &out.warnings); });
    if (whole && !names.insert(s.name).second)
      Report(services[i]["name"].Mark(), path + ".name",
             "duplicate service name \"" + s.name + "\"");
    c.services.push_back(std::move(s));
    if (whole) (void)Guard([&] { CheckSameServer(services, i, c, &out.warnings); });
  }
  CheckShards(services, c);
  return out;
}

// instance_id, http, log, kafka.
void Parser::TopLevel(const YAML::Node& root, Config* c, std::vector<std::string>* warnings) const {
  if (root["instance_id"]) {
    c->instance_id = Str(root["instance_id"], "instance_id");
    if (c->instance_id.empty())
      Report(root["instance_id"].Mark(), "instance_id", "must not be empty");
  }
  (void)Guard([&] {
    const YAML::Node h = root["http"];
    if (!h || h.IsNull()) return;
    RequireMap(h, "http");
    CheckKeys(h, "http", {"listen"});
    if (!h["listen"]) return;
    c->http_listen = Str(h["listen"], "http.listen");
    if (!IsListenAddress(c->http_listen))
      Report(h["listen"].Mark(), "http.listen",
             "must be host:port, e.g. 127.0.0.1:9464 (got " + Quoted(c->http_listen) + ")");
  });
  (void)Guard([&] {
    const YAML::Node l = root["log"];
    if (!l || l.IsNull()) return;
    RequireMap(l, "log");
    CheckKeys(l, "log", {"level", "format"});
    static const std::vector<std::string> kLevels = {"debug", "info", "warn", "error"};
    static const std::vector<std::string> kFormats = {"json", "text"};
    if (l["level"]) c->log_level = kLevels[OneOf(l["level"], "log.level", kLevels)];
    if (l["format"]) c->log_format = kFormats[OneOf(l["format"], "log.format", kFormats)];
  });
  (void)Guard([&] { c->kafka = Kafka(root["kafka"], "kafka", KafkaConfig{}, warnings); });
  if (const YAML::Node f = root["fleet"]; f && !f.IsNull())
    (void)Guard([&] { c->fleet = Fleet(f, c->kafka); });
}

// Checks the last of c.services against the earlier ones on the same server.
void Parser::CheckSameServer(const YAML::Node& services, size_t i, const Config& c,
                             std::vector<std::string>* warnings) const {
  const std::string path = "services[" + std::to_string(i) + "]";
  const MysqlConfig& m = c.services[i].mysql;
  const std::string server = ServerKey(m);
  for (size_t j = 0; j < i; ++j) {
    const MysqlConfig& a = c.services[j].mysql;
    if (ServerKey(a) != server) continue;
    // One binlog stream per server, with one replica server_id
    // (docs/CONFIG.md "wakeup"): two ids for it cannot both hold. Services
    // that poll never open the stream, so their id does not matter.
    const bool both_binlog =
        c.services[i].wakeup == WakeupMode::kBinlog && c.services[j].wakeup == WakeupMode::kBinlog;
    if (both_binlog && a.binlog_server_id != m.binlog_server_id) {
      const YAML::Node mysql = services[i]["mysql"];
      const YAML::Node id = mysql["binlog_server_id"];
      auto shown = [](const std::optional<uint32_t>& v) {
        return v ? std::to_string(*v) : std::string("unset");
      };
      Report(id ? id.Mark() : mysql.Mark(), path + ".mysql.binlog_server_id",
             "is " + shown(m.binlog_server_id) + " while services[" + std::to_string(j) +
                 "].mysql.binlog_server_id is " + shown(a.binlog_server_id) +
                 " on the same server " + server +
                 ": services with wakeup: binlog on one server share one stream and " +
                 "its server_id; give them the same value");
    }
    // Legal (they act as two replicas of one service, each row going to one
    // of them), but far more often a copied block whose database was not
    // changed: the other table would be left undrained.
    if (a.database == m.database && a.table == m.table)
      warnings->push_back(path + ".mysql: the same table as services[" + std::to_string(j) + "] (" +
                          m.database + "." + m.table + " on " + server +
                          "): both drain it like two replicas; was another database meant?");
  }
}

namespace {

// A config of thousands of services is well below this; past it, the file is
// most likely not a config (and yaml-cpp needs seconds per 10 MB).
constexpr size_t kMaxConfigFileBytes = 4 << 20;

// Sees where each document of a stream starts and whether it holds anything.
class DocumentScan : public YAML::EventHandler {
 public:
  struct Doc {
    YAML::Mark start;
    bool has_content = false;
  };
  std::vector<Doc> docs;
  // Where each quoted scalar starts (yaml-cpp gives a quoted one the tag "!").
  std::vector<YAML::Mark> quoted;

  void OnDocumentStart(const YAML::Mark& mark) override { docs.push_back({mark, false}); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { Content(); }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t,
                const std::string&) override {
    if (tag == "!") quoted.push_back(mark);
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

// True when the quoted scalar starting at `pos` has no closing quote before
// the end of the text. yaml-cpp 0.7 reads such a scalar to the end of the
// file without an error (`instance_id: "x` swallowed the rest of the file
// and was reported as a missing services key).
bool Unclosed(const std::string& text, int pos) {
  if (pos < 0 || static_cast<size_t>(pos) >= text.size()) return false;
  const char q = text[static_cast<size_t>(pos)];
  if (q != '"' && q != '\'') return false;
  for (size_t i = static_cast<size_t>(pos) + 1; i < text.size(); ++i) {
    if (q == '"' && text[i] == '\\') {
      ++i;  // an escape: the next character never closes
    } else if (text[i] == q) {
      if (q == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' is a quote inside single quotes
        continue;
      }
      return false;
    }
  }
  return true;
}

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

}  // namespace config_internal

namespace config_internal {

namespace {

// Looks at the documents before the first is loaded. Not YAML::LoadAll:
// yaml-cpp 0.7 answers a ',' outside [...] or {...} with an endless series
// of empty documents that never advance, and LoadAll collects them until
// memory runs out (found by fuzzing: a file starting with ',' hung check).
void ScanDocuments(const std::string& text, const Parser* parser) {
  std::istringstream in(text);
  YAML::Parser stream(in);
  config_internal::DocumentScan scan;
  for (int i = 0; i < 3 && stream.HandleNextDocument(scan); ++i) {
    const auto& docs = scan.docs;
    if (docs.size() >= 2 && docs.back().start.pos == docs[docs.size() - 2].start.pos) {
      const YAML::Mark& at = docs.back().start;
      char c = at.pos >= 0 && static_cast<size_t>(at.pos) < text.size() ? text[at.pos] : ' ';
      parser->Fail(at, "yaml",
                   c == ',' ? "unexpected ',' (a comma separates items only inside [...] or {...})"
                            : "cannot parse the text here");
    }
    // A second document would be ignored silently; a bare trailing "---" is harmless.
    if (docs.size() >= 2 && docs.back().has_content)
      parser->Fail(docs.back().start, "yaml",
                   "more than one YAML document (a second \"---\"); the config is one document");
  }
  for (const YAML::Mark& at : scan.quoted)
    if (config_internal::Unclosed(text, at.pos))
      parser->Fail(at, "yaml",
                   std::string(YAML::ErrorMsg::EOF_IN_SCALAR) + " (the " + text[at.pos] +
                       " opened here is never closed)");
}

}  // namespace

YAML::Node ParseYaml(const std::string& text, const Parser* parser) {
  YAML::Node root;
  // A syntax error is the one problem of the file: nothing after it can be
  // trusted to be what the author meant.
  (void)parser->Guard([&] {
    try {
      ScanDocuments(text, parser);
      root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      parser->Fail(e.mark, "yaml", e.msg + config_internal::SyntaxHint(text, e.mark));
    }
  });
  parser->ThrowIfProblems();
  return root;
}

}  // namespace config_internal

LoadedConfig LoadConfigText(const std::string& text, const std::string& name,
                            const LoadOptions& options) {
  config_internal::Parser parser(name, options);
  const YAML::Node root = config_internal::ParseYaml(text, &parser);
  LoadedConfig loaded;
  (void)parser.Guard([&] { loaded = parser.Root(root); });
  parser.ThrowIfProblems();
  return loaded;
}

std::string ReadConfigFile(const std::string& path) {
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
    if (text.size() > config_internal::kMaxConfigFileBytes)
      throw ConfigError(path + ": the config file is larger than 4 MiB; is it the right file?");
  }
  return text;
}

LoadedConfig LoadConfigFile(const std::string& path, const LoadOptions& options) {
  return LoadConfigText(ReadConfigFile(path), path, options);
}

std::string LoadHttpListen(const std::string& path, const EnvLookup& env) {
  LoadOptions options;
  options.env = env;
  config_internal::Parser parser(path, options);
  const YAML::Node root = config_internal::ParseYaml(ReadConfigFile(path), &parser);
  std::string listen = Config{}.http_listen;
  (void)parser.Guard([&] {
    if (!root.IsMap()) return;  // not a config at all: `check` says why; the default is tried
    const YAML::Node h = root["http"];
    if (!h || !h.IsMap() || !h["listen"]) return;
    listen = parser.Str(h["listen"], "http.listen");
    if (!config_internal::IsListenAddress(listen))
      parser.Report(
          h["listen"].Mark(), "http.listen",
          "must be host:port, e.g. 127.0.0.1:9464 (got " + config_internal::Quoted(listen) + ")");
  });
  parser.ThrowIfProblems();
  return listen;
}

}  // namespace outbox
