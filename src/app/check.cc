#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

#include "app/commands.h"
#include "app/wakeup_sources.h"
#include "config/topic_template.h"
#include "fleet/shard.h"
#include "kafka/kafka_config.h"
#include "kafka/kafka_group_member.h"
#include "kafka/kafka_publisher.h"
#include "outbox/outbox_admin.h"

namespace outbox {

namespace {

// Trace context columns that cannot do their job: the relay still relays
// every event, without its trace context.
void WarnAboutTraceColumns(const std::string& where, const std::string& table,
                           const TableSchema& schema) {
  if (schema.has_traceparent && schema.traceparent_max_len < 55)
    std::cout << "warning: " << where << "column traceparent of " << table << " holds at most "
              << schema.traceparent_max_len
              << " characters, a W3C traceparent has 55: make it varchar(55) or wider\n";
  if (schema.has_tracestate && !schema.has_traceparent)
    std::cout << "warning: " << where << "column tracestate of " << table
              << " is sent only with a valid traceparent, and the table has no traceparent "
                 "column\n";
}

// The table's problems found by CheckTableAccess, each printed on its own
// line; returns how many (a failed connection is one).
int CheckDatabase(const ServiceConfig& s) {
  const std::string where = "service " + s.name + ": ";
  TableAccess access;
  Status st = CheckTableAccess(s.mysql, s.retention.sent_days.has_value(), &access);
  if (!st.ok()) {
    std::cout << where << st.message() << "\n";
    return 1;
  }
  const TableSchema& schema = access.schema;
  const std::string table = s.mysql.database + "." + s.mysql.table;
  if (!schema.table_exists) {
    std::cout << where << "table " << table << " does not exist (or the user cannot see it)\n";
    return 1;
  }
  int problems = 0;
  for (const auto& m : schema.missing_columns) {
    std::cout << where << "table " << table << " is missing column " << m << "\n";
    ++problems;
  }
  if (!schema.has_status_index) {
    std::cout << where << "table " << table
              << " has no index on (status, next_retry_at): every poll would scan the table\n";
    ++problems;
  }
  for (const auto& p : access.grant_problems) {
    std::cout << where << p << "\n";
    ++problems;
  }
  if (problems == 0) {
    std::cout << where << "database ok (" << table << "), optional columns: " << schema.Describe()
              << ", privileges: " << access.granted << "\n";
  }
  WarnAboutTraceColumns(where, table, schema);
  return problems;
}

// The topics of the services using `kafka` that are known without a row:
// the template when it has no row placeholder, and every `topics` value.
std::vector<std::string> FixedTopics(const Config& c, const KafkaConfig& kafka) {
  std::vector<std::string> topics;
  auto add = [&](const std::string& t) {
    if (std::find(topics.begin(), topics.end(), t) == topics.end()) topics.push_back(t);
  };
  for (const auto& s : c.services) {
    if (!(s.kafka == kafka)) continue;
    TopicTemplate t;
    std::string err;
    if (TopicTemplate::Parse(s.topic, &t, &err) && !t.uses_row_fields())
      add(t.Render("", "", s.name));
    for (const auto& [event_type, topic] : s.topics) add(topic);
  }
  return topics;
}

// One cluster: the brokers answer (or librdkafka's reason why not: SASL,
// TLS, a refused connection), then each fixed topic can be written to.
int CheckBroker(const Config& c, const KafkaConfig& kafka, int64_t lease_ms) {
  std::vector<std::string> warnings;
  auto props = ProducerProperties(kafka, "outbox-relay-check", lease_ms, &warnings);
  for (const auto& w : warnings) std::cout << "warning: " << w << "\n";
  std::string error;
  auto pub = KafkaPublisher::Create(props, &error);
  const std::string where = "kafka " + kafka.bootstrap_servers + ": ";
  if (!pub) {
    std::cout << where << error << "\n";
    return 1;
  }
  if (!pub->Probe(5000)) {
    // The error callback naming the cause is served by the producer's poll
    // thread, usually within a few of its 50 ms polls.
    KafkaProblem p = pub->Problem();
    for (int i = 0; i < 10 && p.cause == KafkaCause::kBrokerDown; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      p = pub->Problem();
    }
    std::cout << where << (p.ok() ? "no broker answered within 5 s" : p.Describe()) << "\n";
    return 1;
  }
  int problems = 0;
  for (const auto& topic : FixedTopics(c, kafka)) {
    const KafkaProblem p = pub->ProbeTopic(topic, 5000);
    if (p.ok()) continue;
    std::cout << where << p.Describe() << "\n";
    ++problems;
  }
  if (problems == 0) std::cout << where << "ok\n";
  return problems;
}

// Each distinct Kafka config once; returns the number of problems.
int CheckBrokers(const Config& c) {
  int problems = 0;
  std::vector<KafkaConfig> seen;
  for (const auto& s : c.services) {
    if (std::find(seen.begin(), seen.end(), s.kafka) != seen.end()) continue;
    seen.push_back(s.kafka);
    problems += CheckBroker(c, s.kafka, s.lease_ms);
  }
  return problems;
}

// The fleet's topic: it exists, its partitions are the shards, and every
// service's shard is one of them.
int CheckFleet(const Config& c) {
  if (!c.fleet) return 0;
  const std::string where = "fleet " + c.fleet->group_id + " on topic " + c.fleet->topic + ": ";
  int partitions = 0;
  if (Status s = KafkaGroupMember::TopicPartitions(*c.fleet, &partitions); !s.ok()) {
    std::cout << where << s.message() << "\n";
    return 1;
  }
  std::cout << where << partitions << " partitions (shards 0.." << partitions - 1 << ")\n";
  const std::vector<std::string> problems = ShardProblems(c, partitions);
  for (const auto& s : c.services)
    std::cout << where << "service " << s.name << " is in shard " << ShardOf(s, partitions)
              << (s.shard ? " (services[].shard)" : " (murmur2 of its name)") << "\n";
  for (const auto& p : problems) std::cout << where << p << "\n";
  return static_cast<int>(problems.size());
}

}  // namespace

int RunCheck(const LoadedConfig& loaded, bool connect) {
  const Config& c = loaded.config;
  for (const auto& w : loaded.warnings) std::cout << "warning: " << w << "\n";
  std::cout << c.path << ": configuration is valid (" << c.services.size() << " service(s))\n";
  if (!connect) return kExitOk;
  int problems = 0;
  for (const auto& s : c.services) problems += CheckDatabase(s);
  problems += CheckBrokers(c);
  for (const auto& s : c.services) problems += CheckSchemas(s);
  problems += CheckBinlogWakeups(c);  // services with wakeup: binlog, once per server
  problems += CheckFleet(c);
  return problems == 0 ? kExitOk : kExitFailure;
}

}  // namespace outbox
