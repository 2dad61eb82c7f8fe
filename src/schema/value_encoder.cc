#include "schema/value_encoder.h"

#include <nlohmann/json.hpp>

#include "schema/wire_format.h"

namespace outbox {

namespace {

EncodeResult Fail(std::string reason, std::string error) {
  EncodeResult r;
  r.kind = EncodeResult::Kind::kFail;
  r.reason = std::move(reason);
  r.error = std::move(error);
  return r;
}

// A lookup's failure: the registry away is a wait; an unknown subject or
// id, or a schema the relay cannot use, is the row's failure.
EncodeResult LookupFailed(const Status& s) {
  if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kPermission) {
    EncodeResult r;
    r.kind = EncodeResult::Kind::kWait;
    r.error = s.message();
    return r;
  }
  return Fail(s.code() == StatusCode::kSchema ? "unknown_subject" : "unusable_schema", s.message());
}

}  // namespace

std::string HeaderValue(const Message& m, const std::string& name) {
  for (const auto& [key, value] : m.headers)
    if (key == name) return value;
  return "";
}

ValueEncoder::ValueEncoder(std::string service, const ValueConfig& value,
                           const std::map<std::string, ValueConfig>& values,
                           std::shared_ptr<SchemaCache> cache)
    : service_(std::move(service)), rule_(MakeRule(value)), cache_(std::move(cache)) {
  for (const auto& [event_type, config] : values) rules_.emplace(event_type, MakeRule(config));
}

ValueEncoder::Rule ValueEncoder::MakeRule(const ValueConfig& config) {
  Rule rule;
  rule.config = config;
  std::string err;
  // The loader checked the templates already.
  (void)TopicTemplate::Parse(config.record, &rule.record, &err, TopicTemplate::Syntax::kText);
  for (size_t from = 0;;) {
    const size_t at = config.subject.find("{topic}", from);
    TopicTemplate part;
    (void)TopicTemplate::Parse(
        config.subject.substr(from, at == std::string::npos ? at : at - from), &part, &err,
        TopicTemplate::Syntax::kText);
    rule.subject_parts.push_back(std::move(part));
    if (at == std::string::npos) break;
    from = at + 7;
  }
  return rule;
}

const ValueEncoder::Rule& ValueEncoder::RuleFor(const std::string& event_type) const {
  auto it = rules_.find(event_type);
  return it == rules_.end() ? rule_ : it->second;
}

std::string ValueEncoder::Subject(const std::string& topic, const std::string& aggregate_type,
                                  const std::string& event_type) const {
  const Rule& rule = RuleFor(event_type);
  if (rule.config.format == ValueFormat::kBytes) return "";
  return SubjectOf(rule, topic, aggregate_type, event_type);
}

std::string ValueEncoder::SubjectOf(const Rule& rule, const std::string& topic,
                                    const std::string& aggregate_type,
                                    const std::string& event_type) const {
  std::string record = rule.record.Render(aggregate_type, event_type, service_);
  switch (rule.config.strategy) {
    case SubjectStrategy::kTopicName:
      return topic + "-value";
    case SubjectStrategy::kRecordName:
      return record;
    case SubjectStrategy::kTopicRecordName:
      return topic + "-" + record;
    case SubjectStrategy::kTemplate:
      break;
  }
  std::string subject;
  for (size_t i = 0; i < rule.subject_parts.size(); ++i) {
    if (i > 0) subject += topic;
    subject += rule.subject_parts[i].Render(aggregate_type, event_type, service_);
  }
  return subject;
}

EncodeResult ValueEncoder::Encode(Message* m, bool may_ask) const {
  const std::string event_type = HeaderValue(*m, "event_type");
  const Rule& rule = RuleFor(event_type);
  if (rule.config.format == ValueFormat::kBytes) return {};
  if (m->schema_id) return WithId(rule, *m->schema_id, may_ask, m);
  const std::string subject =
      SubjectOf(rule, m->topic, HeaderValue(*m, "aggregate_type"), event_type);
  return WithSchema(rule, subject, may_ask, m);
}

EncodeResult ValueEncoder::WithSchema(const Rule& rule, const std::string& subject, bool may_ask,
                                      Message* m) const {
  EncodeResult ask;
  ask.kind = EncodeResult::Kind::kAsk;
  if (!may_ask && !cache_->Holds(subject, rule.config.version)) return ask;
  ResolvedSchemaPtr schema;
  if (Status s = cache_->BySubject(subject, rule.config.version, &schema); !s.ok())
    return LookupFailed(s);
  EncodeResult r = Apply(rule.config, *schema, m);
  if (r.kind != EncodeResult::Kind::kFail || rule.config.version != "latest") return r;
  if (!may_ask) return ask;
  // A payload that does not fit the latest version held may fit one
  // registered since: read it again (at most once a second) and retry once.
  ResolvedSchemaPtr fresh;
  if (!cache_->Refresh(subject, &fresh).ok() || fresh->id == schema->id) return r;
  return Apply(rule.config, *fresh, m);
}

EncodeResult ValueEncoder::WithId(const Rule& rule, int32_t id, bool may_ask, Message* m) const {
  if (!may_ask && !cache_->HoldsId(id)) {
    EncodeResult ask;
    ask.kind = EncodeResult::Kind::kAsk;
    return ask;
  }
  ResolvedSchemaPtr schema;
  if (Status s = cache_->ById(id, &schema); !s.ok()) return LookupFailed(s);
  return Apply(rule.config, *schema, m);
}

EncodeResult ValueEncoder::Apply(const ValueConfig& config, const ResolvedSchema& schema,
                                 Message* m) {
  const bool avro = config.format == ValueFormat::kAvro;
  if ((schema.type == SchemaType::kAvro) != avro)
    return Fail("wrong_schema_type",
                (schema.subject.empty() ? "schema id " + std::to_string(schema.id)
                                        : "subject " + schema.subject + " (schema id " +
                                              std::to_string(schema.id) + ")") +
                    " is a " + (avro ? "JSON" : "Avro") + " schema where value_format is " +
                    ToString(config.format));
  ConversionError e;
  std::string body;
  if (!avro) {
    if (!nlohmann::json::accept(m->value))
      return Fail(std::string(ToLabel(ConversionFailure::kInvalidJson)),
                  "the payload is not valid JSON");
    body = m->value;
  } else if (config.payload_encoding == PayloadEncoding::kAvro) {
    if (!schema.avro->CheckBinary(m->value, &e))
      return Fail(std::string(ToLabel(e.reason)), e.message);
    body = m->value;
  } else if (!schema.avro->Encode(m->value, &body, &e)) {
    return Fail(std::string(ToLabel(e.reason)),
                e.message + " (schema id " + std::to_string(schema.id) + ")");
  }
  m->value = WithWireHeader(schema.id, body);
  EncodeResult r;
  r.schema_id = schema.id;
  return r;
}

}  // namespace outbox
