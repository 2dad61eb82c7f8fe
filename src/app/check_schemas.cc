// check --connect's part for value formats (docs/FORMATS.md): every subject
// known without a row is read from the registry, with its id and version.
#include <iostream>
#include <set>

#include "app/commands.h"
#include "app/schema_reports.h"
#include "config/topic_template.h"
#include "schema/registry_http.h"
#include "schema/value_encoder.h"

namespace outbox {

namespace {

// One subject to resolve: the event type it is for ("" for the service's
// default) and what it renders to with two different rows.
struct SubjectProbe {
  std::string event_type;
  std::string subject;
  bool fixed = false;  // the same for every row
};

SubjectProbe Probe(const ServiceConfig& s, const ValueEncoder& encoder,
                   const std::string& event_type) {
  TopicTemplate topic;
  std::string err;
  (void)TopicTemplate::Parse(s.topic, &topic, &err);
  auto topic_for = [&](const std::string& aggregate, const std::string& et) {
    auto it = s.topics.find(et);
    return it != s.topics.end() ? it->second : topic.Render(aggregate, et, s.name);
  };
  const std::string a = event_type.empty() ? "EventA" : event_type;
  const std::string b = event_type.empty() ? "EventB" : event_type;
  SubjectProbe p{event_type, encoder.Subject(topic_for("AggA", a), "AggA", a), false};
  p.fixed = p.subject == encoder.Subject(topic_for("AggB", b), "AggB", b);
  return p;
}

int Resolve(const std::string& where, SchemaRegistry& registry, const SubjectProbe& p,
            const ValueConfig& v) {
  RegisteredSchema r;
  Status st = registry.GetSubjectVersion(p.subject, v.version, &r);
  ResolvedSchemaPtr resolved;
  if (st.ok()) st = ResolveSchema(r, &resolved);
  const std::string what = p.event_type.empty() ? "" : " (event_type " + p.event_type + ")";
  if (!st.ok()) {
    std::cout << where << "subject " << p.subject << what << ": " << st.message() << "\n";
    return 1;
  }
  const bool avro = resolved->type == SchemaType::kAvro;
  std::cout << where << "subject " << p.subject << what << ": id " << r.id << ", version "
            << r.version << ", " << (avro ? "AVRO" : "JSON") << "\n";
  if (avro == (v.format == ValueFormat::kAvro)) return 0;
  std::cout << where << "subject " << p.subject << " holds a " << (avro ? "AVRO" : "JSON")
            << " schema where value_format is " << ToString(v.format) << "\n";
  return 1;
}

}  // namespace

int CheckSchemas(const ServiceConfig& s) {
  if (!UsesSchemaRegistry(s)) return 0;
  const SchemaRegistryConfig& rc = *s.kafka.schema_registry;
  const std::string where = "service " + s.name + ": schema registry " + rc.url + ": ";
  RegistryEndpoint e{rc.url, rc.username, rc.password, rc.ca,
                     std::chrono::milliseconds(rc.timeout_ms)};
  std::shared_ptr<HttpSchemaRegistry> registry;
  if (Status st = HttpSchemaRegistry::Make(e, &registry); !st.ok()) {
    std::cout << where << st.message() << "\n";
    return 1;
  }
  const ValueEncoder encoder(s.name, s.value, s.values, nullptr);
  std::set<std::string> event_types = {""};
  for (const auto& [et, v] : s.values) event_types.insert(et);
  for (const auto& [et, t] : s.topics) event_types.insert(et);
  int problems = 0;
  for (const std::string& et : event_types) {
    const auto it = s.values.find(et);
    const ValueConfig& v = it == s.values.end() ? s.value : it->second;
    if (v.format == ValueFormat::kBytes) continue;
    const SubjectProbe p = Probe(s, encoder, et);
    if (p.fixed)
      problems += Resolve(where, *registry, p, v);
    else
      std::cout << where << "the subject" << (et.empty() ? "" : " of event_type " + et)
                << " depends on the row; it is read when the first row arrives\n";
  }
  return problems;
}

}  // namespace outbox
