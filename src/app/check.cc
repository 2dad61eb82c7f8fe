#include <iostream>

#include "app/commands.h"
#include "app/wakeups.h"
#include "kafka/kafka_config.h"
#include "kafka/kafka_publisher.h"
#include "outbox/outbox_admin.h"

namespace outbox {

namespace {

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
  return problems;
}

// Each distinct Kafka config once; returns the number of problems.
int CheckBrokers(const Config& c) {
  int problems = 0;
  std::vector<KafkaConfig> seen;
  for (const auto& s : c.services) {
    if (std::find(seen.begin(), seen.end(), s.kafka) != seen.end()) continue;
    seen.push_back(s.kafka);
    std::vector<std::string> warnings;
    auto props = ProducerProperties(s.kafka, "outbox-relay-check", s.lease_ms, &warnings);
    for (const auto& w : warnings) std::cout << "warning: " << w << "\n";
    std::string error;
    auto pub = KafkaPublisher::Create(props, &error);
    const std::string where = "kafka " + s.kafka.bootstrap_servers + ": ";
    if (!pub) {
      std::cout << where << error << "\n";
      ++problems;
    } else if (!pub->Probe(5000)) {
      std::cout << where << "no broker answered within 5 s\n";
      ++problems;
    } else {
      std::cout << where << "ok\n";
    }
  }
  return problems;
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
  problems += CheckBinlogWakeups(c);  // services with wakeup: binlog, once per server
  return problems == 0 ? kExitOk : kExitFailure;
}

}  // namespace outbox
