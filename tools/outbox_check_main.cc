// outbox-check: reads every row of an outbox table and every message of the
// relay's topics (from the start of each partition to its high watermark)
// and reports whether the relay kept README "Guarantees" and "How it works": nothing lost,
// duplicates counted, per-aggregate order, messages matching their rows.
//
// Exit codes: 0 verdict OK, 1 violations found, 2 usage or connection error.
#include <cppconn/driver.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <librdkafka/rdkafka.h>
#include <mysql_driver.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <set>
#include <stdexcept>

#include "kafka_headers.h"
#include "outbox_check.h"
#include "tool_common.h"

namespace {

using outbox::check::Message;
using outbox::check::Row;
using outbox::tools::MysqlArgs;

struct Args {
  MysqlArgs mysql;
  std::string time_zone;
  std::string bootstrap;
  std::vector<std::string> topics;
  std::string topic_regex;
  std::vector<std::string> kafka_properties;
  std::vector<std::string> topic_overrides;
  int read_timeout_ms = 30000;
  std::string json_path;
  bool quiet = false;
};

// The verdict's switches as the command line spells them; ToOptions turns
// them into outbox::check::Options.
struct VerdictFlags {
  bool allow_unsent = false;
  bool expect_all_sent = false;
  bool no_sending = false;
  bool no_order = false;
  bool no_value = false;
  bool no_partition = false;
  std::string dead_policy = "block";
  int64_t max_duplicates = -1;
  int64_t expect_rows = -1;
};

struct Fatal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- the table

std::unique_ptr<sql::Connection> ConnectMysql(const Args& a) {
  sql::ConnectOptionsMap opts = outbox::tools::ConnectOptions(a.mysql);
  opts["OPT_READ_TIMEOUT"] = 300;
  std::unique_ptr<sql::Connection> conn;
  try {
    conn.reset(sql::mysql::get_mysql_driver_instance()->connect(opts));
  } catch (const sql::SQLException& e) {
    throw Fatal("cannot connect to MySQL at " + a.mysql.host + ":" + std::to_string(a.mysql.port) +
                " as " + a.mysql.user + ": " + e.what());
  }
  if (!a.time_zone.empty()) {
    std::unique_ptr<sql::PreparedStatement> tz(conn->prepareStatement("SET time_zone = ?"));
    tz->setString(1, a.time_zone);
    tz->execute();
  }
  return conn;
}

// The table's column names; Fatal when the table does not exist.
std::set<std::string> Columns(sql::Connection* conn, const MysqlArgs& m) {
  std::unique_ptr<sql::PreparedStatement> cols(conn->prepareStatement(
      "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND "
      "table_name = ?"));
  cols->setString(1, m.database);
  cols->setString(2, m.table);
  std::unique_ptr<sql::ResultSet> rs(cols->executeQuery());
  std::set<std::string> names;
  while (rs->next()) names.insert(rs->getString(1));
  if (names.empty()) throw Fatal("table " + m.database + "." + m.table + " not found");
  return names;
}

std::vector<Row> ReadRows(const Args& a) {
  std::unique_ptr<sql::Connection> conn = ConnectMysql(a);
  // Optional columns (README "The outbox table"), used when present.
  const std::set<std::string> columns = Columns(conn.get(), a.mysql);
  const bool has_topic = columns.count("topic") > 0;
  const bool has_headers = columns.count("headers") > 0;
  std::string sql =
      "SELECT id, aggregate_type, aggregate_id, event_type, event_key, payload, status, "
      "UNIX_TIMESTAMP(created_at), " +
      std::string(has_topic ? "topic" : "NULL") + ", " + (has_headers ? "headers" : "NULL") +
      " FROM " + outbox::tools::QualifiedTable(a.mysql) + " ORDER BY id";
  std::unique_ptr<sql::Statement> st(conn->createStatement());
  std::unique_ptr<sql::ResultSet> rs(st->executeQuery(sql));
  std::vector<Row> rows;
  while (rs->next()) {
    Row r;
    r.id = rs->getInt64(1);
    r.aggregate_type = rs->getString(2);
    r.aggregate_id = rs->getInt64(3);
    r.event_type = rs->getString(4);
    r.event_key = rs->getString(5);
    r.payload = rs->getString(6);
    r.status = rs->getString(7);
    r.created_at_unix = rs->isNull(8) ? 0 : static_cast<int64_t>(rs->getDouble(8));
    if (!rs->isNull(9)) r.topic = rs->getString(9);
    if (!rs->isNull(10)) r.headers = rs->getString(10);
    rows.push_back(std::move(r));
  }
  return rows;
}

// ---- the topics

struct KafkaHandle {
  rd_kafka_t* rk = nullptr;
  ~KafkaHandle() {
    if (rk) {
      rd_kafka_consumer_close(rk);
      rd_kafka_destroy(rk);
    }
  }
};

// A consumer that is assigned partitions, never joins its group nor commits.
void MakeConsumer(const Args& a, KafkaHandle* h) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const std::string& k, const std::string& v) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw Fatal("kafka property " + k + ": " + err);
    }
  };
  set("bootstrap.servers", a.bootstrap);
  set("group.id", "outbox-check");  // never joined or committed: partitions are assigned
  set("enable.auto.commit", "false");
  set("enable.auto.offset.store", "false");
  set("log_level", "3");
  for (const auto& kv : a.kafka_properties) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) {
      rd_kafka_conf_destroy(conf);
      throw Fatal("--kafka-property wants KEY=VALUE, got " + kv);
    }
    set(kv.substr(0, eq), kv.substr(eq + 1));
  }
  h->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (!h->rk) {
    rd_kafka_conf_destroy(conf);  // rd_kafka_new takes it only on success
    throw Fatal(std::string("cannot create a Kafka consumer: ") + err);
  }
}

// Every topic of the cluster with its partition count.
std::map<std::string, int32_t> TopicPartitions(rd_kafka_t* rk, const std::string& bootstrap) {
  const struct rd_kafka_metadata* md = nullptr;
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, nullptr, &md, 10000);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    throw Fatal("cannot read metadata from " + bootstrap + ": " + rd_kafka_err2str(e));
  std::map<std::string, int32_t> partitions;
  for (int i = 0; i < md->topic_cnt; ++i) {
    const auto& t = md->topics[i];
    if (t.err == RD_KAFKA_RESP_ERR_NO_ERROR) partitions[t.topic] = t.partition_cnt;
  }
  rd_kafka_metadata_destroy(md);
  return partitions;
}

// The --topic ones that exist, and those --topic-regex (or, without any
// --topic, the default pattern) matches.
std::set<std::string> ChooseTopics(const Args& a,
                                   const std::map<std::string, int32_t>& partitions) {
  std::set<std::string> chosen;
  for (const auto& t : a.topics) {
    if (!partitions.count(t)) {
      if (!a.quiet) std::cerr << "outbox-check: topic " << t << " does not exist (no messages)\n";
      continue;
    }
    chosen.insert(t);
  }
  if (!a.topic_regex.empty() || a.topics.empty()) {
    std::regex re(a.topic_regex.empty() ? "^[^_].*" : a.topic_regex);
    for (const auto& [t, n] : partitions)
      if (std::regex_search(t, re)) chosen.insert(t);
  }
  return chosen;
}

using HighWatermarks = std::map<std::pair<std::string, int32_t>, int64_t>;

// Assigns every non-empty partition of `chosen` from its low watermark and
// returns their high watermarks; records partition counts and truncated
// partitions in `*options`.
HighWatermarks AssignPartitions(const Args& a, rd_kafka_t* rk, const std::set<std::string>& chosen,
                                const std::map<std::string, int32_t>& partitions,
                                outbox::check::Options* options) {
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(16);
  HighWatermarks high;
  for (const auto& t : chosen) {
    const int32_t count = partitions.at(t);
    options->expect.partition_counts[t] = count;
    for (int32_t p = 0; p < count; ++p) {
      int64_t lo = 0, hi = 0;
      rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, t.c_str(), p, &lo, &hi, 10000);
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_topic_partition_list_destroy(list);
        throw Fatal("cannot read the watermarks of " + t + "/" + std::to_string(p) + ": " +
                    rd_kafka_err2str(e));
      }
      if (lo > 0) options->truncated_partitions[t + "/" + std::to_string(p)] = lo;
      if (hi > lo) {
        rd_kafka_topic_partition_list_add(list, t.c_str(), p)->offset = lo;
        high[{t, p}] = hi;
      }
    }
  }
  if (!a.quiet)
    std::cerr << "outbox-check: reading " << chosen.size() << " topic(s), " << high.size()
              << " non-empty partition(s)\n";
  rd_kafka_resp_err_t e = high.empty() ? RD_KAFKA_RESP_ERR_NO_ERROR : rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) throw Fatal(std::string("assign: ") + rd_kafka_err2str(e));
  return high;
}

Message ToMessage(rd_kafka_message_t* m) {
  Message c;
  c.topic = rd_kafka_topic_name(m->rkt);
  c.partition = m->partition;
  c.offset = m->offset;
  if (m->key) c.key.emplace(static_cast<const char*>(m->key), m->key_len);
  if (m->payload) c.value.assign(static_cast<const char*>(m->payload), m->len);
  c.headers = outbox::tools::MessageHeaders(m);
  return c;
}

// Consumes the assigned partitions until each reached its high watermark;
// Fatal when nothing arrives for --read-timeout-ms.
std::vector<Message> ReadToHighWatermarks(rd_kafka_t* rk, HighWatermarks high, int timeout_ms) {
  std::vector<Message> out;
  auto last_progress = std::chrono::steady_clock::now();
  while (!high.empty()) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 200);
    auto now = std::chrono::steady_clock::now();
    if (!m) {
      if (now - last_progress > std::chrono::milliseconds(timeout_ms)) {
        std::string left;
        for (const auto& [tp, hi] : high) left += " " + tp.first + "/" + std::to_string(tp.second);
        throw Fatal("no progress reading for " + std::to_string(timeout_ms) +
                    " ms; unfinished partitions:" + left);
      }
      continue;
    }
    if (m->err) {
      std::string what = rd_kafka_message_errstr(m);
      bool fatal = m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF;
      rd_kafka_message_destroy(m);
      if (fatal) throw Fatal("consume error: " + what);
      continue;
    }
    last_progress = now;
    Message c = ToMessage(m);
    rd_kafka_message_destroy(m);
    auto it = high.find({c.topic, c.partition});
    if (it != high.end() && c.offset + 1 >= it->second) high.erase(it);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Message> ReadTopics(const Args& a, outbox::check::Options* options) {
  KafkaHandle h;
  MakeConsumer(a, &h);
  const std::map<std::string, int32_t> partitions = TopicPartitions(h.rk, a.bootstrap);
  const std::set<std::string> chosen = ChooseTopics(a, partitions);
  HighWatermarks high = AssignPartitions(a, h.rk, chosen, partitions, options);
  if (high.empty()) return {};
  std::vector<Message> out = ReadToHighWatermarks(h.rk, std::move(high), a.read_timeout_ms);
  rd_kafka_assign(h.rk, nullptr);
  return out;
}

// ---- the command line

void AddSourceOptions(CLI::App* app, Args* a) {
  outbox::tools::AddMysqlOptions(app, &a->mysql, "OUTBOX_CHECK_MYSQL_PASSWORD",
                                 "database holding the outbox table");
  app->add_option("--time-zone", a->time_zone,
                  "session time_zone used to read created_at (the relay's mysql.time_zone); "
                  "default: the server's");
  app->add_option("--bootstrap", a->bootstrap, "Kafka bootstrap servers")->required();
  app->add_option("--topic", a->topics, "topic to read (repeatable)");
  app->add_option("--topic-regex", a->topic_regex,
                  "read every topic whose name matches (ECMAScript regex, searched); default "
                  "when no --topic: every topic not starting with '_'");
  app->add_option("--kafka-property", a->kafka_properties,
                  "librdkafka consumer property KEY=VALUE (repeatable; security.protocol, sasl.*)");
  app->add_option("--read-timeout-ms", a->read_timeout_ms,
                  "give up (exit 2) when no message arrives for this long before the watermarks")
      ->capture_default_str();
}

void AddVerdictOptions(CLI::App* app, Args* a, VerdictFlags* f, outbox::check::Options* o) {
  app->add_option("--service", o->expect.service, "service name, for {service} in the template");
  app->add_option("--topic-template", o->expect.topic_template,
                  "the service's topic template (README, How it works)")
      ->capture_default_str();
  app->add_option("--topic-override", a->topic_overrides,
                  "EVENT_TYPE=TOPIC per-event-type override (repeatable)");
  app->add_flag("--expect-all-sent", f->expect_all_sent,
                "every row must be SENT (the default; stated for readability)");
  app->add_flag("--allow-unsent", f->allow_unsent,
                "rows in NEW, SENDING or DEAD are reported, not violations (lost still is)");
  app->add_flag("--no-sending", f->no_sending,
                "with --allow-unsent: a row left in SENDING is a violation");
  app->add_flag("--no-order", f->no_order, "skip the per-aggregate order checks (ordering: none)");
  app->add_option("--dead-policy", f->dead_policy,
                  "block: a DEAD event must hold back its aggregate's later events; skip: not")
      ->check(CLI::IsMember({"block", "skip"}))
      ->capture_default_str();
  app->add_option("--max-duplicates", f->max_duplicates,
                  "fail if there are more duplicate copies than this (default: no limit)");
  app->add_option("--expect-rows", f->expect_rows, "fail unless the table holds exactly N rows");
  app->add_flag("--no-value-check", f->no_value, "do not compare message values with payloads");
  app->add_flag("--no-partition-check", f->no_partition,
                "do not check that each key sits in its murmur2 partition");
  app->add_option("--sample", o->sample, "examples listed per finding")->capture_default_str();
}

// Checks what CLI11 cannot and completes `*o` from the flags; false (the
// reason printed) on a usage error.
bool ToOptions(Args* a, const VerdictFlags& f, outbox::check::Options* o) {
  if (f.allow_unsent && f.expect_all_sent) {
    std::cerr << "outbox-check: --allow-unsent and --expect-all-sent contradict each other\n";
    return false;
  }
  outbox::tools::PasswordFromEnv(&a->mysql, "OUTBOX_CHECK_MYSQL_PASSWORD");
  for (const auto& kv : a->topic_overrides) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "outbox-check: --topic-override wants EVENT_TYPE=TOPIC, got " << kv << "\n";
      return false;
    }
    o->expect.topic_overrides[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  o->expect_all_sent = !f.allow_unsent;
  o->forbid_sending = f.no_sending;
  o->check_order = !f.no_order;
  o->dead_policy_skip = f.dead_policy == "skip";
  o->expect.check_value = !f.no_value;
  if (f.max_duplicates >= 0) o->max_duplicates = f.max_duplicates;
  if (f.expect_rows >= 0) o->expect_rows = f.expect_rows;
  if (!a->topic_regex.empty()) {
    try {
      std::regex re(a->topic_regex);
    } catch (const std::regex_error& e) {
      std::cerr << "outbox-check: --topic-regex: " << e.what() << "\n";
      return false;
    }
  }
  return true;
}

// The report as JSON in --json's file; false (the reason printed) when it
// cannot be written.
bool WriteJson(const Args& a, const outbox::check::Report& report, double read_seconds) {
  nlohmann::json j = outbox::check::ToJson(report);
  j["database"] = a.mysql.database;
  j["table"] = a.mysql.table;
  j["read_seconds"] = read_seconds;
  std::ofstream f(a.json_path);
  f << j.dump(2) << "\n";
  if (!f) {
    std::cerr << "outbox-check: cannot write " << a.json_path << "\n";
    return false;
  }
  return true;
}

// Reads, judges and reports; the exit code.
int Run(const Args& a, const VerdictFlags& f, outbox::check::Options o) {
  std::vector<Row> rows;
  std::vector<Message> messages;
  auto t0 = std::chrono::steady_clock::now();
  try {
    // Kafka after the table: a row SENT when the table was read was acked
    // before, so its message is below the high watermark read afterwards.
    rows = ReadRows(a);
    messages = ReadTopics(a, &o);
  } catch (const Fatal& e) {
    std::cerr << "outbox-check: " << e.what() << "\n";
    return 2;
  } catch (const sql::SQLException& e) {
    std::cerr << "outbox-check: MySQL: " << e.what() << "\n";
    return 2;
  }
  if (f.no_partition) o.expect.partition_counts.clear();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  outbox::check::Report report = outbox::check::Analyze(rows, messages, o);
  if (!a.json_path.empty() && !WriteJson(a, report, secs)) return 2;
  if (a.quiet)
    std::cout << "verdict: " << (report.ok() ? "OK" : "VIOLATIONS") << "\n";
  else
    std::cout << outbox::check::Summary(report);
  return report.ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  VerdictFlags f;
  outbox::check::Options o;
  CLI::App app{
      "outbox-check: verify an outbox table against its Kafka topics.\n"
      "Reads every row and every message (offset 0 to the high watermark of every partition)\n"
      "and reports rows by status, lost events (SENT but absent from Kafka), rows never\n"
      "published, duplicate copies, per-aggregate order violations and split aggregates,\n"
      "messages whose key/headers/topic/value/partition do not match their row, and messages\n"
      "with no row. Exit 0: verdict OK; 1: violations; 2: usage or connection error.",
      "outbox-check"};
  AddSourceOptions(&app, &a);
  AddVerdictOptions(&app, &a, &f, &o);
  app.add_option("--json", a.json_path, "write the full report as JSON to this file");
  app.add_flag("--quiet", a.quiet, "print only the verdict line");
  if (auto rc = outbox::tools::ParseCommandLine(&app, argc, argv)) return *rc;
  if (!ToOptions(&a, f, &o)) return 2;
  return Run(a, f, std::move(o));
}
