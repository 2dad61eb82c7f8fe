#pragma once

// The YAML walker behind LoadConfigText (config_loader.h); internal to
// src/config/. Split by job: config_parser.cc (generic typed reads and the
// error format), config_mysql.cc (the mysql block), config_service.cc (a
// service), config_loader.cc (the top level and the file).

#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/config_loader.h"
#include "config/topic_template.h"

namespace outbox::config_internal {

// A value echoed in a message, cut so one bad value cannot flood the output.
std::string Quoted(const std::string& s);
// Reads a file from the filesystem (LoadOptions::read_file's default).
FileRead ReadFileFromDisk(const std::string& path);

class Parser;
// The YAML syntax of `text`: a syntax error (yaml-cpp's message and
// position, with a hint for the usual causes) is recorded in *parser and
// thrown as a ConfigError.
YAML::Node ParseYaml(const std::string& text, const Parser* parser);

// Value checks, true when `s` is acceptable.
bool IsIdentifier(const std::string& s);     // [A-Za-z_][A-Za-z0-9_$]{0,63}
bool IsServiceName(const std::string& s);    // [A-Za-z0-9_.-]{1,64}
bool IsVariableName(const std::string& s);   // [A-Za-z_][A-Za-z0-9_]*
bool IsTimeZone(const std::string& tz);      // +HH:MM, SYSTEM or Area/City
bool IsListenAddress(const std::string& s);  // host:port, [v6]:port
// A subject template: {topic} and the topic template's placeholders, text
// without control characters. False with *error otherwise.
bool CheckSubjectTemplate(const std::string& text, std::string* error);

// Walks the YAML tree and collects every problem it finds, each naming the
// file, line, column and key path; ThrowIfProblems turns them into one
// ConfigError. Lives for one load; `options` must outlive it.
//
// How the walk goes on past a mistake: the typed reads (Str, Int, OneOf,
// StringMap, CheckKeys) record a bad value and return a stand-in (empty, the
// minimum, the first choice), so the next key is still read; a problem that
// leaves nothing to read below it (not a mapping, a required key missing)
// records and throws Abandoned, which Guard catches around each section.
// A problem on a key path that already has one is a consequence of it and is
// dropped (a stand-in "" must not add "must not be empty").
class Parser {
 public:
  Parser(std::string file, const LoadOptions& options)
      : file_(std::move(file)), options_(options) {}

  // --- the sections (each a mapping under `path`) -------------------------
  LoadedConfig Root(const YAML::Node& root) const;
  ServiceConfig Service(const YAML::Node& n, const std::string& path, const KafkaConfig& kafka,
                        std::vector<std::string>* warnings) const;
  // `parent` is the service's mapping, for the position of a missing block.
  MysqlConfig Mysql(const YAML::Node& parent, const YAML::Node& n, const std::string& path,
                    std::vector<std::string>* warnings) const;
  // `warnings` (may be null: dropped) gets a registry password file's mode.
  KafkaConfig Kafka(const YAML::Node& n, const std::string& path, const KafkaConfig& base,
                    std::vector<std::string>* warnings = nullptr) const;
  // The fleet block (src/config/config_fleet.cc); `kafka` is the top-level block.
  FleetConfig Fleet(const YAML::Node& n, const KafkaConfig& kafka) const;
  // services[i].shard against the fleet block: a shard needs one.
  void CheckShards(const YAML::Node& services, const Config& c) const;

  // --- problems ---------------------------------------------------------
  // Thrown by Fail after it recorded the problem; caught by Guard.
  struct Abandoned {};
  // Records a problem; the walk goes on.
  void Report(const YAML::Mark& mark, const std::string& path, const std::string& what) const;
  // Records a problem and abandons the section (throws Abandoned).
  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& path,
                         const std::string& what) const;
  // Runs one section; an Abandoned or a yaml-cpp error in it is recorded and
  // the walk goes on with the next. False if the section was abandoned.
  bool Guard(const std::function<void()>& section) const;
  // Throws ConfigError with every problem recorded, in file order (the
  // first kMaxProblems), if there is any.
  void ThrowIfProblems() const;
  static constexpr size_t kMaxProblems = 20;

  // --- typed reads --------------------------------------------------------
  void RequireMap(const YAML::Node& n, const std::string& path) const;
  // Fails on a duplicate or unknown key, suggesting the nearest known one.
  void CheckKeys(const YAML::Node& map, const std::string& path,
                 const std::vector<std::string>& allowed) const;
  std::string Key(const YAML::Node& k, const std::string& path) const;
  // `what` names the expected type, for a value of the wrong shape.
  std::string Str(const YAML::Node& n, const std::string& path,
                  const char* what = "a string") const;
  static const char* Shape(const YAML::Node& n);
  int64_t Int(const YAML::Node& n, const std::string& path, int64_t min, int64_t max) const;
  // Index of the value in `values`.
  size_t OneOf(const YAML::Node& n, const std::string& path,
               const std::vector<std::string>& values) const;
  std::map<std::string, std::string> StringMap(const YAML::Node& n, const std::string& path) const;
  // Reads a file named in the config (a secret or a certificate); one that
  // cannot be read is recorded and reads as empty. `shown` is how messages
  // name it (default: the path itself).
  FileInfo ReadNamedFile(const YAML::Node& n, const std::string& path, const std::string& file,
                         const std::string& shown = "") const;
  const LoadOptions& options() const { return options_; }

 private:
  void MysqlTarget(const YAML::Node& n, const std::string& path, MysqlConfig* m) const;
  void MysqlPassword(const YAML::Node& n, const std::string& path, MysqlConfig* m,
                     std::vector<std::string>* warnings) const;
  void MysqlSession(const YAML::Node& n, const std::string& path, MysqlConfig* m,
                    std::vector<std::string>* warnings) const;
  TlsConfig Tls(const YAML::Node& n, const std::string& path,
                std::vector<std::string>* warnings) const;
  void ServiceTopics(const YAML::Node& n, const std::string& path, ServiceConfig* s) const;
  void ServiceLoop(const YAML::Node& n, const std::string& path, ServiceConfig* s) const;
  void ServiceRetry(const YAML::Node& r, const std::string& path, RetryConfig* retry) const;
  void ServiceRetention(const YAML::Node& r, const std::string& path,
                        RetentionConfig* retention) const;
  // envelope and cloudevents (config_envelope.cc).
  void ServiceEnvelope(const YAML::Node& n, const std::string& path, ServiceConfig* s,
                       std::vector<std::string>* warnings) const;
  // A CloudEvents attribute's template, checked against `syntax`.
  std::string EventTemplate(const YAML::Node& n, const std::string& path,
                            TopicTemplate::Syntax syntax) const;
  void TopLevel(const YAML::Node& root, Config* c, std::vector<std::string>* warnings) const;
  // kafka.schema_registry and a service's value formats (config_values.cc).
  SchemaRegistryConfig SchemaRegistry(const YAML::Node& n, const std::string& path,
                                      std::vector<std::string>* warnings) const;
  void RegistryLogin(const YAML::Node& n, const std::string& path, SchemaRegistryConfig* r,
                     std::vector<std::string>* warnings) const;
  void ServiceValues(const YAML::Node& n, const std::string& path, ServiceConfig* s) const;
  // value_format, payload_encoding and schema of mapping `n`, over `v`.
  ValueConfig Value(const YAML::Node& n, const std::string& path, ValueConfig v) const;
  void ValueSchema(const YAML::Node& sc, const std::string& sp, ValueConfig* v) const;
  void CheckSameServer(const YAML::Node& services, size_t i, const Config& c,
                       std::vector<std::string>* warnings) const;

  struct Problem {
    int line = -1;  // 0-based, -1 when the problem has no position
    int column = -1;
    std::string path;
    std::string text;  // the whole line: file:line:col: path: what
  };

  std::string file_;
  const LoadOptions& options_;
  mutable std::vector<Problem> problems_;
  // Key paths an unknown key was taken for ("did you mean"): such a key is
  // not reported missing as well.
  mutable std::set<std::string> suggested_;
};

}  // namespace outbox::config_internal
