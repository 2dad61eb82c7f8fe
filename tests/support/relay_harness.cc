#include "support/relay_harness.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "kafka/kafka_config.h"
#include "outbox/mysql_store.h"
#include "support/metrics_text.h"

namespace outbox::testing {

RelayHarness::RelayHarness(ServiceConfig service, WakeupSourcePtr wakeup)
    : config(std::move(service)) {
  std::vector<std::string> warnings;
  auto props = ProducerProperties(config.kafka, "test", config.lease_ms, &warnings);
  std::string err;
  publisher = KafkaPublisher::Create(props, &err);
  REQUIRE(publisher);
  RelayOptions o = Options();
  o.wakeup = std::move(wakeup);
  relay = std::make_unique<Relay>(std::move(o));
}

RelayOptions RelayHarness::Options() {
  RelayOptions o;
  o.config = config;
  MysqlConfig mysql = config.mysql;
  o.store_factory = [mysql] { return std::make_unique<MysqlStore>(mysql); };
  o.publisher = publisher;
  o.metrics = &metrics.ForService(config.name);
  return o;
}

RelayUnits& RelayHarness::steps() {
  if (!units) units = std::make_unique<RelayUnits>(Options());
  return *units;
}

RelayHarness::~RelayHarness() { relay->Stop(std::chrono::seconds(10)); }

double RelayHarness::Metric(const std::string& name, const std::string& labels) const {
  std::string prefix = name + "{";
  // prometheus-cpp orders labels by name: reason/topic sort after service
  // only when they do; try both orders.
  std::string text = metrics.Serialize();
  std::string svc = "service=\"" + config.name + "\"";
  double v = MetricValue(text, prefix + (labels.empty() ? svc : svc + "," + labels) + "}");
  if (std::isnan(v) && !labels.empty()) v = MetricValue(text, prefix + labels + "," + svc + "}");
  return v;
}

std::string SqlQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') out += c == '\'' ? '\'' : '\\';
    out += c;
  }
  return out + "'";
}

ScopedDbUser::ScopedDbUser(TestDatabase& db, const std::string& name, const std::string& password,
                           const std::string& grants, const std::string& require)
    : db_(db), name_(name) {
  db.Exec("DROP USER IF EXISTS '" + name + "'@'127.0.0.1'");
  db.Exec("CREATE USER '" + name + "'@'127.0.0.1' IDENTIFIED BY " + SqlQuote(password) +
          (require.empty() ? "" : " REQUIRE " + require));
  db.Exec("GRANT " + grants + " ON `" + db.name() + "`.`t_outbox` TO '" + name + "'@'127.0.0.1'");
}

ScopedDbUser::~ScopedDbUser() {
  try {
    db_.Exec("DROP USER IF EXISTS '" + name_ + "'@'127.0.0.1'");
  } catch (...) {
  }
}

void InsertRow(TestDatabase& db, const RowSpec& r) {
  std::string cols =
      "id, aggregate_type, aggregate_id, event_type, event_key, payload, status, next_retry_at, "
      "created_at, updated_at";
  std::string vals = std::to_string(r.id) + ", " + SqlQuote(r.aggregate_type) + ", " +
                     std::to_string(r.aggregate_id) + ", " + SqlQuote(r.event_type) + ", " +
                     SqlQuote(r.event_key.empty() ? "k" + std::to_string(r.id) : r.event_key) +
                     ", " + SqlQuote(r.payload) + ", " + SqlQuote(r.status) +
                     ", NOW(), NOW(), NOW()";
  auto optional = [&](const char* column, const std::optional<std::string>& value) {
    if (!value) return;
    cols.append(", ").append(column);
    vals.append(", ").append(SqlQuote(*value));
  };
  optional("topic", r.topic);
  optional("headers", r.headers);
  optional("traceparent", r.traceparent);
  optional("tracestate", r.tracestate);
  if (r.aggregate_version) {
    cols += ", aggregate_version";
    vals.append(", ").append(std::to_string(*r.aggregate_version));
  }
  if (r.schema_id) {
    cols += ", schema_id";
    vals.append(", ").append(std::to_string(*r.schema_id));
  }
  db.Exec("INSERT INTO t_outbox (" + cols + ") VALUES (" + vals + ")");
}

}  // namespace outbox::testing
