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
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <set>
#include <stdexcept>

#include "outbox_check.h"

namespace {

using outbox::check::Message;
using outbox::check::Row;

struct Args {
  std::string host = "127.0.0.1";
  int port = 3306;
  std::string user = "root";
  std::string password;
  std::string database;
  std::string table = "t_outbox";
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

struct Fatal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string QuoteIdent(const std::string& s) {
  std::string out = "`";
  for (char c : s) out += c == '`' ? std::string("``") : std::string(1, c);
  return out + "`";
}

std::vector<Row> ReadRows(const Args& a) {
  sql::ConnectOptionsMap opts;
  opts["hostName"] = sql::SQLString(a.host);
  opts["port"] = a.port;
  opts["userName"] = sql::SQLString(a.user);
  opts["password"] = sql::SQLString(a.password);
  opts["OPT_CONNECT_TIMEOUT"] = 10;
  opts["OPT_READ_TIMEOUT"] = 300;
  std::unique_ptr<sql::Connection> conn;
  try {
    conn.reset(sql::mysql::get_mysql_driver_instance()->connect(opts));
  } catch (const sql::SQLException& e) {
    throw Fatal("cannot connect to MySQL at " + a.host + ":" + std::to_string(a.port) + " as " +
                a.user + ": " + e.what());
  }
  std::unique_ptr<sql::Statement> st(conn->createStatement());
  if (!a.time_zone.empty()) {
    std::unique_ptr<sql::PreparedStatement> tz(conn->prepareStatement("SET time_zone = ?"));
    tz->setString(1, a.time_zone);
    tz->execute();
  }
  // Optional columns (README "The outbox table"), used when present.
  bool has_topic = false, has_headers = false;
  {
    std::unique_ptr<sql::PreparedStatement> cols(conn->prepareStatement(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND "
        "table_name = ?"));
    cols->setString(1, a.database);
    cols->setString(2, a.table);
    std::unique_ptr<sql::ResultSet> rs(cols->executeQuery());
    int n = 0;
    while (rs->next()) {
      ++n;
      std::string c = rs->getString(1);
      has_topic = has_topic || c == "topic";
      has_headers = has_headers || c == "headers";
    }
    if (n == 0) throw Fatal("table " + a.database + "." + a.table + " not found");
  }
  std::string sql =
      "SELECT id, aggregate_type, aggregate_id, event_type, event_key, payload, status, "
      "UNIX_TIMESTAMP(created_at), " +
      std::string(has_topic ? "topic" : "NULL") + ", " + (has_headers ? "headers" : "NULL") +
      " FROM " + QuoteIdent(a.database) + "." + QuoteIdent(a.table) + " ORDER BY id";
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

struct KafkaHandle {
  rd_kafka_t* rk = nullptr;
  ~KafkaHandle() {
    if (rk) {
      rd_kafka_consumer_close(rk);
      rd_kafka_destroy(rk);
    }
  }
};

std::vector<Message> ReadTopics(const Args& a, outbox::check::Options* options) {
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
  KafkaHandle h;
  h.rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (!h.rk) throw Fatal(std::string("cannot create a Kafka consumer: ") + err);

  const struct rd_kafka_metadata* md = nullptr;
  rd_kafka_resp_err_t e = rd_kafka_metadata(h.rk, 1, nullptr, &md, 10000);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    throw Fatal("cannot read metadata from " + a.bootstrap + ": " + rd_kafka_err2str(e));
  std::map<std::string, int32_t> partitions;
  for (int i = 0; i < md->topic_cnt; ++i) {
    const auto& t = md->topics[i];
    if (t.err == RD_KAFKA_RESP_ERR_NO_ERROR) partitions[t.topic] = t.partition_cnt;
  }
  rd_kafka_metadata_destroy(md);

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

  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(16);
  std::map<std::pair<std::string, int32_t>, int64_t> high;
  for (const auto& t : chosen) {
    options->expect.partition_counts[t] = partitions[t];
    for (int32_t p = 0; p < partitions[t]; ++p) {
      int64_t lo = 0, hi = 0;
      e = rd_kafka_query_watermark_offsets(h.rk, t.c_str(), p, &lo, &hi, 10000);
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
  std::vector<Message> out;
  if (high.empty()) {
    rd_kafka_topic_partition_list_destroy(list);
    return out;
  }
  e = rd_kafka_assign(h.rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) throw Fatal(std::string("assign: ") + rd_kafka_err2str(e));

  auto last_progress = std::chrono::steady_clock::now();
  while (!high.empty()) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(h.rk, 200);
    auto now = std::chrono::steady_clock::now();
    if (!m) {
      if (now - last_progress > std::chrono::milliseconds(a.read_timeout_ms)) {
        std::string left;
        for (const auto& [tp, hi] : high) left += " " + tp.first + "/" + std::to_string(tp.second);
        throw Fatal("no progress reading for " + std::to_string(a.read_timeout_ms) +
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
    Message c;
    c.topic = rd_kafka_topic_name(m->rkt);
    c.partition = m->partition;
    c.offset = m->offset;
    if (m->key) c.key.emplace(static_cast<const char*>(m->key), m->key_len);
    if (m->payload) c.value.assign(static_cast<const char*>(m->payload), m->len);
    rd_kafka_headers_t* hdrs = nullptr;
    if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const char* name;
      const void* val;
      size_t size;
      for (size_t i = 0;
           rd_kafka_header_get_all(hdrs, i, &name, &val, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i)
        c.headers.emplace_back(name, val ? std::string(static_cast<const char*>(val), size) : "");
    }
    auto it = high.find({c.topic, c.partition});
    if (it != high.end() && c.offset + 1 >= it->second) high.erase(it);
    rd_kafka_message_destroy(m);
    out.push_back(std::move(c));
  }
  rd_kafka_assign(h.rk, nullptr);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  outbox::check::Options o;
  bool allow_unsent = false, expect_all_sent = false, no_sending = false, no_order = false;
  bool no_value = false, no_partition = false;
  std::string dead_policy = "block";
  int64_t max_duplicates = -1, expect_rows = -1;
  size_t sample = 20;

  CLI::App app{
      "outbox-check: verify an outbox table against its Kafka topics.\n"
      "Reads every row and every message (offset 0 to the high watermark of every partition)\n"
      "and reports rows by status, lost events (SENT but absent from Kafka), rows never\n"
      "published, duplicate copies, per-aggregate order violations and split aggregates,\n"
      "messages whose key/headers/topic/value/partition do not match their row, and messages\n"
      "with no row. Exit 0: verdict OK; 1: violations; 2: usage or connection error.",
      "outbox-check"};
  app.add_option("--host", a.host, "MySQL host")->capture_default_str();
  app.add_option("--port", a.port, "MySQL port")->capture_default_str();
  app.add_option("--user", a.user, "MySQL user")->capture_default_str();
  app.add_option("--password", a.password,
                 "MySQL password (prefer the env OUTBOX_CHECK_MYSQL_PASSWORD)");
  app.add_option("--database", a.database, "database holding the outbox table")->required();
  app.add_option("--table", a.table, "outbox table")->capture_default_str();
  app.add_option("--time-zone", a.time_zone,
                 "session time_zone used to read created_at (the relay's mysql.time_zone); "
                 "default: the server's");
  app.add_option("--bootstrap", a.bootstrap, "Kafka bootstrap servers")->required();
  app.add_option("--topic", a.topics, "topic to read (repeatable)");
  app.add_option("--topic-regex", a.topic_regex,
                 "read every topic whose name matches (ECMAScript regex, searched); default "
                 "when no --topic: every topic not starting with '_'");
  app.add_option("--kafka-property", a.kafka_properties,
                 "librdkafka consumer property KEY=VALUE (repeatable; security.protocol, sasl.*)");
  app.add_option("--read-timeout-ms", a.read_timeout_ms,
                 "give up (exit 2) when no message arrives for this long before the watermarks")
      ->capture_default_str();
  app.add_option("--service", o.expect.service, "service name, for {service} in the template");
  app.add_option("--topic-template", o.expect.topic_template,
                 "the service's topic template (README, How it works)")
      ->capture_default_str();
  app.add_option("--topic-override", a.topic_overrides,
                 "EVENT_TYPE=TOPIC per-event-type override (repeatable)");
  app.add_flag("--expect-all-sent", expect_all_sent,
               "every row must be SENT (the default; stated for readability)");
  app.add_flag("--allow-unsent", allow_unsent,
               "rows in NEW, SENDING or DEAD are reported, not violations (lost still is)");
  app.add_flag("--no-sending", no_sending,
               "with --allow-unsent: a row left in SENDING is a violation");
  app.add_flag("--no-order", no_order, "skip the per-aggregate order checks (ordering: none)");
  app.add_option("--dead-policy", dead_policy,
                 "block: a DEAD event must hold back its aggregate's later events; skip: not")
      ->check(CLI::IsMember({"block", "skip"}))
      ->capture_default_str();
  app.add_option("--max-duplicates", max_duplicates,
                 "fail if there are more duplicate copies than this (default: no limit)");
  app.add_option("--expect-rows", expect_rows, "fail unless the table holds exactly N rows");
  app.add_flag("--no-value-check", no_value, "do not compare message values with payloads");
  app.add_flag("--no-partition-check", no_partition,
               "do not check that each key sits in its murmur2 partition");
  app.add_option("--sample", sample, "examples listed per finding")->capture_default_str();
  app.add_option("--json", a.json_path, "write the full report as JSON to this file");
  app.add_flag("--quiet", a.quiet, "print only the verdict line");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (allow_unsent && expect_all_sent) {
    std::cerr << "outbox-check: --allow-unsent and --expect-all-sent contradict each other\n";
    return 2;
  }
  if (a.password.empty()) {
    if (const char* p = std::getenv("OUTBOX_CHECK_MYSQL_PASSWORD")) a.password = p;
  }
  for (const auto& kv : a.topic_overrides) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "outbox-check: --topic-override wants EVENT_TYPE=TOPIC, got " << kv << "\n";
      return 2;
    }
    o.expect.topic_overrides[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  o.expect_all_sent = !allow_unsent;
  o.forbid_sending = no_sending;
  o.check_order = !no_order;
  o.dead_policy_skip = dead_policy == "skip";
  o.expect.check_value = !no_value;
  if (max_duplicates >= 0) o.max_duplicates = max_duplicates;
  if (expect_rows >= 0) o.expect_rows = expect_rows;
  o.sample = sample;
  if (!a.topic_regex.empty()) {
    try {
      std::regex re(a.topic_regex);
    } catch (const std::regex_error& e) {
      std::cerr << "outbox-check: --topic-regex: " << e.what() << "\n";
      return 2;
    }
  }

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
  if (no_partition) o.expect.partition_counts.clear();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  outbox::check::Report report = outbox::check::Analyze(rows, messages, o);
  if (!a.json_path.empty()) {
    nlohmann::json j = outbox::check::ToJson(report);
    j["database"] = a.database;
    j["table"] = a.table;
    j["read_seconds"] = secs;
    std::ofstream f(a.json_path);
    f << j.dump(2) << "\n";
    if (!f) {
      std::cerr << "outbox-check: cannot write " << a.json_path << "\n";
      return 2;
    }
  }
  if (a.quiet)
    std::cout << "verdict: " << (report.ok() ? "OK" : "VIOLATIONS") << "\n";
  else
    std::cout << outbox::check::Summary(report);
  return report.ok() ? 0 : 1;
}
