// The kafka blocks' schema_registry and a service's value format
// (docs/CONFIG.md "value_format", docs/FORMATS.md).

#include "config/config_parser.h"
#include "config/config_password.h"
#include "config/registry_url.h"
#include "config/topic_template.h"

namespace outbox {
namespace config_internal {

namespace {

bool IsVersion(const std::string& v) {
  if (v == "latest") return true;
  if (v.empty() || v.size() > 9 || v[0] == '0') return false;
  return v.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

bool CheckSubjectTemplate(const std::string& text, std::string* error) {
  // {topic} is the subject's own placeholder; what lies between is a
  // template of the row's fields.
  size_t from = 0;
  while (true) {
    const size_t at = text.find("{topic}", from);
    TopicTemplate t;
    const bool empty = at == from || from == text.size();  // {topic} at an end, or twice
    if (!empty && !TopicTemplate::Parse(text.substr(from, at == std::string::npos ? at : at - from),
                                        &t, error, TopicTemplate::Syntax::kText)) {
      const size_t known = error->find("(known: ");
      if (known != std::string::npos) error->insert(known + 8, "{topic}, ");
      return false;
    }
    if (at == std::string::npos) return true;
    from = at + 7;
  }
}

SchemaRegistryConfig Parser::SchemaRegistry(const YAML::Node& n, const std::string& path,
                                            std::vector<std::string>* warnings) const {
  SchemaRegistryConfig r;
  RequireMap(n, path);
  CheckKeys(n, path,
            {"url", "username", "username_env", "password_env", "password_file", "tls",
             "timeout_ms", "latest_refresh_ms"});
  if (!n["url"]) Fail(n.Mark(), path + ".url", "is required");
  r.url = Str(n["url"], path + ".url");
  RegistryUrl url;
  if (const Status s = ParseRegistryUrl(r.url, &url); !s.ok())
    Report(n["url"].Mark(), path + ".url", s.message());
  RegistryLogin(n, path, &r, warnings);
  if (const YAML::Node tls = n["tls"]; tls && !tls.IsNull()) {
    RequireMap(tls, path + ".tls");
    CheckKeys(tls, path + ".tls", {"ca"});
    if (tls["ca"]) {
      r.ca = Str(tls["ca"], path + ".tls.ca");
      (void)ReadNamedFile(tls["ca"], path + ".tls.ca", r.ca);
    }
  }
  if (n["timeout_ms"])
    r.timeout_ms = static_cast<int>(Int(n["timeout_ms"], path + ".timeout_ms", 100, 120000));
  if (n["latest_refresh_ms"])
    r.latest_refresh_ms =
        static_cast<int>(Int(n["latest_refresh_ms"], path + ".latest_refresh_ms", 1000, 86400000));
  return r;
}

// username or username_env, and password_env or password_file.
void Parser::RegistryLogin(const YAML::Node& n, const std::string& path, SchemaRegistryConfig* r,
                           std::vector<std::string>* warnings) const {
  if (n["username"] && n["username_env"])
    Report(n["username_env"].Mark(), path + ".username_env",
           "give either username or username_env, not both");
  if (n["username"]) r->username = Str(n["username"], path + ".username");
  if (n["username_env"]) {
    const std::string var = Str(n["username_env"], path + ".username_env");
    const auto value = options().env(var);
    if (!value)
      Report(n["username_env"].Mark(), path + ".username_env",
             "environment variable " + var + " is not set");
    else
      r->username = *value;
  }
  std::vector<std::string> dropped;  // a block read without a place for warnings
  try {
    Password p = ReadPassword(n, path, options(), "SR_PASSWORD", warnings ? warnings : &dropped);
    r->password = std::move(p.value);
    r->password_source = std::move(p.source);
  } catch (const ConfigProblem& p) {
    Report(p.mark, p.path, p.what);
  }
  if (!r->password.empty() && r->username.empty())
    Report(n.Mark(), path + ".username", "is required with a password (HTTP basic auth)");
}

void Parser::ServiceValues(const YAML::Node& n, const std::string& path, ServiceConfig* s) const {
  s->value = Value(n, path, ValueConfig{});
  bool any = s->value.format != ValueFormat::kBytes;
  if (const YAML::Node vs = n["values"]; vs && !vs.IsNull()) {
    RequireMap(vs, path + ".values");
    for (const auto& kv : vs) {
      const std::string event_type = Key(kv.first, path + ".values");
      const std::string vp = path + ".values." + event_type;
      RequireMap(kv.second, vp);
      CheckKeys(kv.second, vp, {"value_format", "payload_encoding", "schema"});
      s->values[event_type] = Value(kv.second, vp, s->value);
      any = any || s->values[event_type].format != ValueFormat::kBytes;
    }
  }
  if (any && !s->kafka.schema_registry)
    Report(n["value_format"] ? n["value_format"].Mark() : n.Mark(), path + ".value_format",
           "needs a schema registry: set kafka.schema_registry (here or in the top-level kafka "
           "block)");
}

ValueConfig Parser::Value(const YAML::Node& n, const std::string& path, ValueConfig v) const {
  if (n["value_format"])
    v.format = static_cast<ValueFormat>(
        OneOf(n["value_format"], path + ".value_format", {"bytes", "json_schema", "avro"}));
  if (n["payload_encoding"])
    v.payload_encoding = static_cast<PayloadEncoding>(
        OneOf(n["payload_encoding"], path + ".payload_encoding", {"json", "avro"}));
  if (v.payload_encoding == PayloadEncoding::kAvro && v.format != ValueFormat::kAvro)
    Report(n["payload_encoding"] ? n["payload_encoding"].Mark() : n.Mark(),
           path + ".payload_encoding", "avro needs value_format: avro");
  if (const YAML::Node sc = n["schema"]; sc && !sc.IsNull()) ValueSchema(sc, path + ".schema", &v);
  const bool named =
      v.strategy == SubjectStrategy::kRecordName || v.strategy == SubjectStrategy::kTopicRecordName;
  if (named && v.record.empty())
    Report(n["schema"] ? n["schema"].Mark() : n.Mark(), path + ".schema.record",
           "is required with subject_strategy record_name or topic_record_name");
  return v;
}

void Parser::ValueSchema(const YAML::Node& sc, const std::string& sp, ValueConfig* v) const {
  RequireMap(sc, sp);
  CheckKeys(sc, sp, {"subject_strategy", "record", "subject", "version"});
  if (sc["subject_strategy"])
    v->strategy = static_cast<SubjectStrategy>(
        OneOf(sc["subject_strategy"], sp + ".subject_strategy",
              {"topic_name", "record_name", "topic_record_name", "template"}));
  std::string err;
  if (sc["record"]) {
    v->record = Str(sc["record"], sp + ".record");
    TopicTemplate t;
    if (!TopicTemplate::Parse(v->record, &t, &err, TopicTemplate::Syntax::kText))
      Report(sc["record"].Mark(), sp + ".record", err);
  }
  if (sc["subject"]) {
    v->subject = Str(sc["subject"], sp + ".subject");
    if (!sc["subject_strategy"]) v->strategy = SubjectStrategy::kTemplate;
    if (v->strategy != SubjectStrategy::kTemplate)
      Report(sc["subject"].Mark(), sp + ".subject", "is used only with subject_strategy: template");
    if (v->subject.empty()) Report(sc["subject"].Mark(), sp + ".subject", "must not be empty");
    if (!CheckSubjectTemplate(v->subject, &err)) Report(sc["subject"].Mark(), sp + ".subject", err);
  }
  if (sc["version"]) {
    v->version = Str(sc["version"], sp + ".version");
    if (!IsVersion(v->version))
      Report(sc["version"].Mark(), sp + ".version",
             "must be latest or a version number (got " + Quoted(v->version) + ")");
  }
}

}  // namespace config_internal
}  // namespace outbox
