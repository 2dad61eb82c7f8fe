// The formats stage (bench.h): what a Schema Registry value format costs
// the drain rate. One backlog of OrderPaid events (Db::BuildOrderPaidTemplate,
// bench/schemas/) drained by one relay with value_format bytes, json_schema
// and avro in turn, --runs times, the formats' order rotating between runs so
// that none always goes first. The relay reads the schemas from the tests'
// own registry (tests/support/test_registry.py), which the stage starts with
// both schemas registered and asks, after each drain, how many requests it
// answered.
#include <nlohmann/json.hpp>

#include "bench.h"

namespace outbox {
namespace bench {

namespace {

// The subjects: avro by the record's name (com.acme.shop.OrderPaid),
// json_schema by the topic's (Confluent's serializers' default).
constexpr const char* kAvroSubject = "com.acme.shop.OrderPaid";
constexpr const char* kJsonSubject = "outbox.event.Order-value";

}  // namespace

std::string FormatYaml(const std::string& format) {
  std::string y = "    value_format: " + format + "\n";
  if (format == "avro")
    y += "    schema: {subject_strategy: record_name, record: \"com.acme.shop.{event_type}\"}\n";
  return y;
}

std::string Bench::StartRegistry() {
  const std::string schemas = o_.out_dir + "/registry-schemas.json";
  const std::string port_file = o_.out_dir + "/registry-port";
  const std::string dir = o_.source_dir + "/bench/schemas/";
  const std::string avro = ReadFile(dir + "order_paid.avsc");
  const std::string json = ReadFile(dir + "order_paid.schema.json");
  if (avro.empty() || json.empty()) throw std::runtime_error("cannot read the schemas in " + dir);
  nlohmann::json subjects;
  subjects[kAvroSubject] = {{{"id", 1}, {"schema", avro}}};
  subjects[kJsonSubject] = {{{"id", 2}, {"schema", json}, {"schemaType", "JSON"}}};
  WriteFile(schemas, nlohmann::json{{"subjects", subjects}}.dump());
  std::remove(port_file.c_str());
  registry_ = Child({"/usr/bin/python3", o_.source_dir + "/tests/support/test_registry.py",
                     "--schemas", schemas, "--port-file", port_file},
                    o_.out_dir + "/registry.log");
  const double deadline = MonoSeconds() + 20;
  while (Trim(ReadFile(port_file)).empty()) {
    if (!registry_.running() || MonoSeconds() > deadline)
      throw std::runtime_error("the Schema Registry did not start; see " + o_.out_dir +
                               "/registry.log");
    SleepSeconds(0.05);
  }
  registry_port_ = std::stoi(Trim(ReadFile(port_file)));
  Say(Fmt("Schema Registry (pid %d) at 127.0.0.1:%d", static_cast<int>(registry_.pid()),
          registry_port_));
  return "http://127.0.0.1:" + std::to_string(registry_port_);
}

int64_t Bench::RegistryRequests() {
  const auto body = HttpGet(registry_port_, "/_test/requests");
  if (!body) return -1;
  const nlohmann::json j = nlohmann::json::parse(*body, nullptr, false);
  return j.is_object() && j.contains("count") ? j["count"].get<int64_t>() : -1;
}

void Bench::StageFormats() {
  const std::string url = StartRegistry();
  const std::string tpl = "tpl_formats";
  db_->BuildOrderPaidTemplate(tpl, s_.formats_aggregates, s_.events_per_aggregate);
  const int64_t n = s_.formats_aggregates * s_.events_per_aggregate;
  Say(Fmt("formats: %lld OrderPaid events, payloads of %lld bytes on average",
          static_cast<long long>(n),
          static_cast<long long>(db_->QueryInt("SELECT AVG(LENGTH(payload)) FROM " + tpl))));
  const std::vector<std::string> formats = {"bytes", "json_schema", "avro"};
  for (int rep = 1; rep <= o_.runs; ++rep) {
    for (size_t k = 0; k < formats.size(); ++k) {
      const std::string& format = formats[(k + static_cast<size_t>(rep) - 1) % formats.size()];
      DrainSpec d = MakeDrain("formats", format, n, s_.default_batch, rep);
      d.ordering = "";  // the default, per_aggregate
      d.tpl = tpl;
      d.value_format = format;
      d.registry_url = url;
      const int64_t before = RegistryRequests();
      RunDrain(d);
      const int64_t after = RegistryRequests();
      if (before >= 0 && after >= 0) r_.drains.back().registry_requests = after - before;
    }
  }
  db_->Exec("DROP TABLE " + tpl);
  registry_.Stop(10);
}

}  // namespace bench
}  // namespace outbox
