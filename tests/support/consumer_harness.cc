#include "support/consumer_harness.h"

#include <cppconn/exception.h>
#include <sys/wait.h>

#include <csignal>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/process.h"  // ReadFile

namespace outbox::testing {

std::string TestEvent::Key() const {
  return event_key.empty()
             ? event_type + "-" + std::to_string(aggregate_id) + "-" + std::to_string(outbox_id)
             : event_key;
}

std::vector<TestEvent> MakeEvents(int aggregates, int per_aggregate, int64_t first_id) {
  static const char* kTypes[] = {"OrderCreated", "OrderPaid", "OrderShipped", "OrderDelivered"};
  std::vector<TestEvent> out;
  int64_t id = first_id;
  for (int v = 0; v < per_aggregate; ++v)
    for (int a = 1; a <= aggregates; ++a) {
      TestEvent e;
      e.outbox_id = id++;
      e.aggregate_id = a;
      e.event_type = kTypes[v % 4];
      out.push_back(e);
    }
  return out;
}

RawMessage ToMessage(const TestEvent& e) {
  RawMessage m;
  m.key = std::to_string(e.aggregate_id);
  m.headers["outbox_id"] = std::to_string(e.outbox_id);
  m.headers["event_key"] = e.Key();
  m.headers["event_type"] = e.event_type;
  m.headers["aggregate_type"] = e.aggregate_type;
  m.headers["created_at"] = "2026-01-01T00:00:00Z";
  if (e.version > 0) m.headers["aggregate_version"] = std::to_string(e.version);
  return m;
}

TestProducer::TestProducer(const std::string& bootstrap, int max_bytes) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof(err));
  rd_kafka_conf_set(conf, "linger.ms", "1", err, sizeof(err));
  // Same key, same partition as the relay (src/kafka/kafka_config.cc): murmur2.
  rd_kafka_conf_set(conf, "partitioner", "murmur2_random", err, sizeof(err));
  rd_kafka_conf_set(conf, "message.max.bytes", std::to_string(max_bytes).c_str(), err, sizeof(err));
  rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (!rk_) throw std::runtime_error(err);
}

TestProducer::~TestProducer() {
  rd_kafka_flush(rk_, 10000);
  rd_kafka_destroy(rk_);
}

void TestProducer::Send(const std::string& topic, const RawMessage& m) {
  rd_kafka_headers_t* h = rd_kafka_headers_new(8);
  for (const auto& [name, value] : m.headers)
    if (value) rd_kafka_header_add(h, name.c_str(), -1, value->data(), value->size());
  rd_kafka_resp_err_t err = rd_kafka_producev(
      rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_KEY(m.key.data(), m.key.size()),
      RD_KAFKA_V_VALUE(const_cast<char*>(m.value.data()), m.value.size()),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
  if (err) {
    rd_kafka_headers_destroy(h);
    throw std::runtime_error(std::string("produce: ") + rd_kafka_err2str(err));
  }
  if (rd_kafka_flush(rk_, 30000) != RD_KAFKA_RESP_ERR_NO_ERROR)
    throw std::runtime_error("produce: not acknowledged within 30 s");
}

void TestProducer::Send(const std::string& topic, const std::vector<TestEvent>& events) {
  for (const auto& e : events) Send(topic, ToMessage(e));
}

std::string ReadSourceFile(const std::string& relative) {
  std::ifstream in(std::string(OUTBOX_SOURCE_DIR) + "/" + relative);
  if (!in) throw std::runtime_error("cannot read " + relative);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ConsumerDatabase::ConsumerDatabase(const std::string& name, bool example_effect) : name_(name) {
  tables_ = {"t_inbox", "t_inbox_aggregate", "t_inbox_parked"};
  if (example_effect) tables_.push_back("t_aggregate_effect");
  SqlClient admin("mysql");
  admin.Exec("DROP DATABASE IF EXISTS `" + name_ + "`");
  admin.Exec("CREATE DATABASE `" + name_ + "` CHARACTER SET utf8mb4");
  sql_ = std::make_unique<SqlClient>(name_);
  // The DDL exactly as shipped (a trailing ';' is fine for one statement).
  sql_->Exec(ReadSourceFile("sql/t_inbox.sql"));
  sql_->Exec(ReadSourceFile("sql/t_inbox_retention_index.sql"));
  sql_->Exec(ReadSourceFile("sql/t_inbox_aggregate.sql"));
  sql_->Exec(ReadSourceFile("sql/t_inbox_parked.sql"));
  if (example_effect) sql_->Exec(ReadSourceFile("sql/t_aggregate_effect.sql"));
  const std::string account = std::string("'") + kUser + "'@'%'";
  sql_->Exec("CREATE USER IF NOT EXISTS " + account + " IDENTIFIED BY '" + kPassword + "'");
  // Exactly the grants docs/CONSUMERS.md lists.
  for (const std::string& t : tables_)
    sql_->Exec("GRANT SELECT, INSERT, UPDATE, DELETE ON `" + name_ + "`.`" + t + "` TO " + account);
}

void ConsumerDatabase::SetConsumerGrants(const std::string& privileges) {
  const std::string account = std::string("'") + kUser + "'@'%'";
  for (const std::string& t : tables_) {
    sql_->Exec("REVOKE ALL PRIVILEGES ON `" + name_ + "`.`" + t + "` FROM " + account);
    sql_->Exec("GRANT " + privileges + " ON `" + name_ + "`.`" + t + "` TO " + account);
  }
}

ConsumerDatabase::~ConsumerDatabase() {
  try {
    const std::string account = std::string("'") + kUser + "'@'%'";
    for (const std::string& t : tables_)
      sql_->Exec("REVOKE ALL PRIVILEGES ON `" + name_ + "`.`" + t + "` FROM " + account);
    sql_->Exec("DROP DATABASE IF EXISTS `" + name_ + "`");
  } catch (...) {
  }
}

int64_t ConsumerDatabase::QueryInt(const std::string& q) {
  try {
    return sql_->QueryInt(q);
  } catch (const sql::SQLException&) {
    sql_ = std::make_unique<SqlClient>(name_);
    return sql_->QueryInt(q);
  }
}

std::string ConsumerDatabase::CheckExactlyOnce(const std::vector<TestEvent>& events) {
  std::map<int64_t, std::set<std::string>> keys;  // aggregate (all "Order") -> event keys
  std::map<int64_t, int64_t> max_id;
  std::set<std::string> all;
  for (const auto& e : events) {
    keys[e.aggregate_id].insert(e.Key());
    max_id[e.aggregate_id] = std::max(max_id[e.aggregate_id], e.outbox_id);
    all.insert(e.Key());
  }
  std::ostringstream problems;
  const int64_t inbox = QueryInt("SELECT COUNT(*) FROM t_inbox");
  if (inbox != static_cast<int64_t>(all.size()))
    problems << "t_inbox has " << inbox << " rows, want " << all.size() << "; ";
  const int64_t rows = QueryInt("SELECT COUNT(*) FROM t_aggregate_effect");
  if (rows != static_cast<int64_t>(keys.size()))
    problems << "t_aggregate_effect has " << rows << " rows, want " << keys.size() << "; ";
  for (const auto& [agg, set] : keys) {
    const std::string where =
        " FROM t_aggregate_effect WHERE aggregate_type = 'Order' AND aggregate_id = " +
        std::to_string(agg);
    const int64_t applied = QueryInt("SELECT applied" + where);
    const int64_t last = QueryInt("SELECT last_outbox_id" + where);
    if (applied != static_cast<int64_t>(set.size()))
      problems << "aggregate " << agg << " applied " << applied << ", want " << set.size() << "; ";
    if (last != max_id[agg])
      problems << "aggregate " << agg << " last_outbox_id " << last << ", want " << max_id[agg]
               << "; ";
  }
  return problems.str();
}

ConsumerProcess::ConsumerProcess(std::string dir, std::string name, const std::string& bootstrap,
                                 const std::string& database, ConsumerSpec spec) {
  config_path_ = dir + "/" + name + ".yaml";
  log_path_ = dir + "/" + name + ".log";
  MysqlConfig m = TestMysql(database);
  std::ostringstream y;
  y << "consumer: " << spec.consumer << "\n"
    << "kafka:\n"
    << "  bootstrap_servers: \"" << bootstrap << "\"\n"
    << "  group_id: " << spec.group << "\n"
    << "  " << spec.topics_yaml << "\n"
    << "  auto_offset_reset: earliest\n"
    << "  dead_letter_topic: \"{topic}.dlq\"\n"
    << "  properties:\n";
  for (const auto& [key, value] : kGroupTiming) y << "    " << key << ": \"" << value << "\"\n";
  std::istringstream extra(spec.properties_yaml);
  for (std::string line; std::getline(extra, line);) y << "    " << line << "\n";
  y << "max_attempts: " << spec.max_attempts << "\n"
    << "mysql:\n"
    << "  host: \"" << m.host << "\"\n"
    << "  port: " << m.port << "\n"
    << "  user: " << ConsumerDatabase::kUser << "\n"
    << "  password_env: INBOX_TEST_DB_PASSWORD\n"
    << "  database: " << database << "\n"
    << "  tls: {mode: disabled}\n"
    << "  connect_timeout_ms: 1000\n"
    << "  read_timeout_ms: 5000\n"
    << (spec.log_section ? "log: {level: info, format: text}\n" : "") << spec.extra_yaml << "\n";
  std::ofstream(config_path_) << y.str();
}

bool ConsumerProcess::Start(const std::map<std::string, std::string>& env,
                            std::vector<std::string> command) {
  std::map<std::string, std::string> all = env;
  all["INBOX_TEST_DB_PASSWORD"] = ConsumerDatabase::kPassword;
  command.push_back("--config");
  command.push_back(config_path_);
  return proc_.Start(command, CurrentEnvironment(all), log_path_);
}

int ConsumerProcess::Stop(std::chrono::milliseconds timeout) {
  proc_.Signal(SIGTERM);
  return Wait(timeout);
}

int ConsumerProcess::Wait(std::chrono::milliseconds timeout) {
  auto st = proc_.Wait(timeout);
  return st ? ExitCode(*st) : -1;
}

std::string ConsumerProcess::Log() const { return ReadFile(log_path_); }

int ConsumerProcess::Count(const std::string& text) const {
  std::istringstream in(Log());
  int n = 0;
  for (std::string line; std::getline(in, line);)
    if (line.find(text) != std::string::npos) ++n;
  return n;
}

ConsumerRig::ConsumerRig(const std::string& db_name,
                         const std::vector<std::pair<std::string, int>>& topics,
                         int producer_max_bytes)
    : db(db_name), producer(cluster.bootstrap(), producer_max_bytes) {
  for (const auto& [name, partitions] : topics) cluster.CreateTopic(name, partitions);
}

}  // namespace outbox::testing
