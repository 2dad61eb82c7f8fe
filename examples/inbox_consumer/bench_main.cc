// outbox-inbox-consumer-bench: events/s the example consumer applies with
// the inbox (t_inbox row + effect in one transaction) versus without it (the
// effect alone: the benchmark-only TestSeams::use_inbox = false), on
// the same messages. Prints a Markdown table for docs/BENCHMARKS.md; asserts
// nothing.
//
//   outbox-inbox-consumer-bench [EVENTS] [RUNS]   (default 3000 events, 2 runs per mode)
//
// Needs a MariaDB/MySQL reachable through OUTBOX_TEST_MYSQL_HOST/PORT/USER/
// PASSWORD (scripts/lib/mariadb.sh sets them); starts librdkafka's mock
// cluster in-process. Every run starts from empty tables and a new group.
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <mysql_driver.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/mysql_options.h"
#include "counter_handler.h"
#include "inbox/inbox_consumer.h"
#include "mock_cluster.h"

namespace {

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string ReadSql(const std::string& name) {
  std::ifstream in(std::string(OUTBOX_SOURCE_DIR) + "/sql/" + name);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Exec(sql::Connection* c, const std::string& q) {
  std::unique_ptr<sql::Statement> st(c->createStatement());
  st->execute(q);
}

// `events` messages as the relay writes them: 1,000 aggregates, ids in order.
void Produce(const std::string& bootstrap, const std::string& topic, int events) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "linger.ms", "5", err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  for (int i = 1; i <= events; ++i) {
    const std::string agg = std::to_string(i % 1000 + 1), id = std::to_string(i);
    const std::string key = "OrderPaid-" + agg + "-" + id;
    rd_kafka_headers_t* h = rd_kafka_headers_new(4);
    rd_kafka_header_add(h, "outbox_id", -1, id.data(), static_cast<ssize_t>(id.size()));
    rd_kafka_header_add(h, "event_key", -1, key.data(), static_cast<ssize_t>(key.size()));
    rd_kafka_header_add(h, "event_type", -1, "OrderPaid", 9);
    rd_kafka_header_add(h, "aggregate_type", -1, "Order", 5);
    const std::string value = "{\"orderId\":" + agg + ",\"status\":\"PAID\"}";
    while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()),
                             RD_KAFKA_V_KEY(agg.data(), agg.size()),
                             RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h),
                             RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
      rd_kafka_poll(rk, 10);
  }
  rd_kafka_flush(rk, 60000);
  rd_kafka_destroy(rk);
}

std::string QueryString(sql::Connection* c, const std::string& q) {
  std::unique_ptr<sql::Statement> st(c->createStatement());
  std::unique_ptr<sql::ResultSet> rs(st->executeQuery(q));
  return rs->next() ? std::string(rs->getString(1)) : "";
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One consumer over all `events` messages with a new group, from empty
// tables; events/s from the first message to the last one handled (group
// join and shutdown excluded). -1 if it did not apply them all.
double RunOnce(outbox::inbox::ConsumerConfig config, sql::Connection* admin, bool use_inbox,
               int events, int run) {
  Exec(admin, "TRUNCATE t_inbox");
  Exec(admin, "TRUNCATE t_aggregate_effect");
  Exec(admin, "TRUNCATE t_inbox_aggregate");
  config.kafka.group_id = "bench-" + std::to_string(run);  // a new group reads from zero
  outbox::inbox::TestSeams seams;
  seams.use_inbox = use_inbox;
  seams.stop_after_messages = static_cast<uint64_t>(events);
  example::CounterHandler handler;
  outbox::inbox::InboxConsumer consumer(config, handler, {}, seams);
  std::atomic<bool> stop{false};
  if (consumer.Run(stop) != 0 || consumer.stats().applied != static_cast<uint64_t>(events)) {
    std::fprintf(stderr, "run %d: applied %llu of %d events\n", run + 1,
                 static_cast<unsigned long long>(consumer.stats().applied), events);
    return -1;
  }
  const double s =
      std::chrono::duration<double>(consumer.last_handled_at() - consumer.first_message_at())
          .count();
  return events / s;
}

// The consumer's settings against the test server (OUTBOX_TEST_MYSQL_*).
outbox::inbox::ConsumerConfig BenchConfig() {
  outbox::inbox::ConsumerConfig config;
  config.consumer = "bench";
  config.mysql.host = Env("OUTBOX_TEST_MYSQL_HOST", "127.0.0.1");
  config.mysql.port = std::stoi(Env("OUTBOX_TEST_MYSQL_PORT", "3306"));
  config.mysql.user = Env("OUTBOX_TEST_MYSQL_USER", "root");
  config.mysql.password = Env("OUTBOX_TEST_MYSQL_PASSWORD", "");
  config.mysql.database = "inbox_bench";
  config.mysql.tls_mode = "disabled";
  return config;
}

// inbox_bench made anew with the inbox's tables and the counter's; the
// admin connection on it.
std::unique_ptr<sql::Connection> CreateDatabase(const outbox::inbox::DbConfig& db) {
  sql::ConnectOptionsMap o;
  outbox::SetLoginOptions(db, &o);
  o["OPT_SSL_MODE"] = sql::SSL_MODE_DISABLED;
  std::unique_ptr<sql::Connection> admin(sql::mysql::get_mysql_driver_instance()->connect(o));
  Exec(admin.get(), "DROP DATABASE IF EXISTS inbox_bench");
  Exec(admin.get(), "CREATE DATABASE inbox_bench CHARACTER SET utf8mb4");
  admin->setSchema("inbox_bench");
  for (const char* table :
       {"t_inbox.sql", "t_aggregate_effect.sql", "t_inbox_aggregate.sql", "t_inbox_parked.sql"})
    Exec(admin.get(), ReadSql(table));
  return admin;
}

// The two modes at one innodb_flush_log_at_trx_commit, alternating runs;
// prints their table rows. False when a run did not apply every event.
bool RunAtFlush(const outbox::inbox::ConsumerConfig& config, sql::Connection* admin,
                const char* flush, int events, int runs, int* run) {
  Exec(admin, std::string("SET GLOBAL innodb_flush_log_at_trx_commit = ") + flush);
  std::vector<double> rates[2];  // [0] with the inbox, [1] without
  for (int i = 0; i < runs * 2; ++i, ++*run) {
    const bool use_inbox = i % 2 == 0;  // alternate, so load drifts hit both alike
    const double r = RunOnce(config, admin, use_inbox, events, *run);
    if (r < 0) return false;
    rates[use_inbox ? 0 : 1].push_back(r);
    std::fprintf(stderr, "run %d (flush %s, %s): %.0f events/s\n", *run + 1, flush,
                 use_inbox ? "inbox" : "no inbox", r);
  }
  for (int m = 0; m < 2; ++m) {
    std::string all;
    for (double r : rates[m]) all += (all.empty() ? "" : ", ") + std::to_string(std::lround(r));
    std::printf("| %s | %s | %.0f | %s |\n",
                flush[0] == '1' ? "durable (flush_log_at_trx_commit=1)"
                                : "relaxed (flush_log_at_trx_commit=2)",
                m == 0 ? "inbox row + effect in one transaction"
                       : "effect alone (no inbox; benchmark only)",
                Median(rates[m]), all.c_str());
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int events = argc > 1 ? std::atoi(argv[1]) : 3000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 2;
  outbox::ConfigureLogging("warn", "text", "bench");
  outbox::inbox::ConsumerConfig config = BenchConfig();
  std::unique_ptr<sql::Connection> admin = CreateDatabase(config.mysql);

  outbox::testing::MockCluster cluster;
  const std::string topic = "bench.events";
  cluster.CreateTopic(topic, 4);
  Produce(cluster.bootstrap(), topic, events);
  config.kafka.bootstrap_servers = cluster.bootstrap();
  config.kafka.topics = {topic};

  // Durable commits (innodb_flush_log_at_trx_commit=1, every COMMIT waits
  // for an fsync) are what production runs; =2 shows the statements' own
  // cost, which the fsync otherwise hides. The server's setting is restored.
  const std::string saved =
      QueryString(admin.get(), "SELECT @@GLOBAL.innodb_flush_log_at_trx_commit");
  std::printf("| commits | mode | events/s (median) | runs |\n|---|---|---|---|\n");
  int run = 0;
  for (const char* flush : {"1", "2"})
    if (!RunAtFlush(config, admin.get(), flush, events, runs, &run)) return 1;
  Exec(admin.get(), "SET GLOBAL innodb_flush_log_at_trx_commit = " + saved);
  std::printf("\n%d events per run, 1,000 aggregates, 4 partitions, one consumer.\n", events);
  Exec(admin.get(), "DROP DATABASE inbox_bench");
  return 0;
}
