// Reload on SIGHUP and `paused: true` (docs/CONFIG.md "Reload"): the real
// binary against MariaDB and the mock cluster, its config file rewritten
// between signals.

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "support/http_probe.h"
#include "support/kafka_reader.h"
#include "support/metrics_text.h"
#include "support/outbox_writer.h"
#include "support/process.h"
#include "support/test_broker.h"
#include "support/test_env.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

// The top of a relay config up to `services:`.
std::string Top(const std::string& bootstrap, int http_port, const std::string& level = "info") {
  return "instance_id: reload\nhttp: {listen: 127.0.0.1:" + std::to_string(http_port) +
         "}\nlog: {level: " + level + ", format: text}\nkafka: {bootstrap_servers: " + bootstrap +
         "}\nservices:\n";
}

// One services[] entry on `db`, topic "<name>.{aggregate_type}", with
// `extra` lines (each "    key: value\n") after it.
std::string Service(const std::string& name, const TestDatabase& db, const std::string& extra = "",
                    const std::string& mysql_extra = "") {
  const MysqlConfig m = db.mysql();
  std::ostringstream yaml;
  yaml << "  - name: " << name << "\n    mysql: {host: " << m.host << ", port: " << m.port
       << ", user: " << m.user << ", database: " << m.database << RelayPasswordYaml()
       << ", tls: {mode: disabled}" << mysql_extra << "}\n    topic: \"" << name
       << ".{aggregate_type}\"\n    gauge_interval_ms: 200\n"
       << extra;
  return yaml.str();
}

// The relay binary on a config file that the test rewrites, and its HTTP
// endpoints.
class ReloadingRelay {
 public:
  ReloadingRelay(const std::string& bootstrap, const std::string& services)
      : port_(FreeTcpPort()),
        bootstrap_(bootstrap),
        path_(dir_.Write("relay.yaml", Top(bootstrap, port_) + services)),
        proc_({OUTBOX_BINARY, "run", "--config", path_}, ChildEnv(RelayChildEnv())) {
    REQUIRE(WaitFor([&] { return HttpGet(port_, "/healthz").status == 200; }, 30s));
  }
  ~ReloadingRelay() {
    proc_.Signal(SIGTERM);
    proc_.Wait(60s);
  }

  // Writes the file (`top` replaces the default top-level part when given),
  // sends SIGHUP and waits until the reload is counted with `result`.
  void Reload(const std::string& services, const std::string& result = "success",
              const std::string& top = "") {
    const double before = Reloads(result);
    dir_.Write("relay.yaml", (top.empty() ? Top(bootstrap_, port_) : top) + services);
    proc_.Signal(SIGHUP);
    INFO(proc_.err());
    REQUIRE(WaitFor([&] { return Reloads(result) == before + 1; }, 60s));
  }
  double Reloads(const std::string& result) {
    return MetricValue(Metrics(), "outbox_config_reloads_total{result=\"" + result + "\"}");
  }
  std::string Metrics() { return HttpGet(port_, "/metrics").body; }
  double Metric(const std::string& sample) { return MetricValue(Metrics(), sample); }
  HttpReply Get(const std::string& path) { return HttpGet(port_, path); }
  int Stop() {
    proc_.Signal(SIGTERM);
    return proc_.Wait(60s);
  }
  std::string err() const { return proc_.err(); }
  int port() const { return port_; }

 private:
  TempDir dir_;
  const int port_;
  const std::string bootstrap_;
  const std::string path_;
  ChildProcess proc_;
};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Message latency (ms): from the insert to the relay's produce call, read
// from the payload and the record's CreateTime.
int64_t LatencyMs(const ConsumedMessage& m) {
  const size_t colon = m.value.find(':');
  return m.timestamp_ms - std::stoll(m.value.substr(colon + 1));
}
int64_t InsertedMs(const ConsumedMessage& m) {
  return std::stoll(m.value.substr(m.value.find(':') + 1));
}

int64_t P99(std::vector<int64_t> v) {
  REQUIRE(!v.empty());
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(v.size())));
  return v[std::max<size_t>(rank, 1) - 1];
}

// Within each aggregate, the first occurrences of ids in partition order
// must increase.
int OrderViolations(std::vector<ConsumedMessage> msgs) {
  std::stable_sort(msgs.begin(), msgs.end(), [](const auto& a, const auto& b) {
    return std::tie(a.partition, a.offset) < std::tie(b.partition, b.offset);
  });
  std::map<std::string, int64_t> last;
  std::set<int64_t> seen;
  int violations = 0;
  for (const auto& m : msgs) {
    const int64_t id = std::stoll(m.headers.at("outbox_id"));
    if (!seen.insert(id).second) continue;
    auto [it, fresh] = last.try_emplace(m.key, id);
    if (!fresh && it->second > id) ++violations;
    it->second = std::max(it->second, id);
  }
  return violations;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Pauses service b (rows stay NEW, outbox_service_paused 1, /readyz 200),
// then reloads a file with an unknown key, which changes nothing.
void PauseThenReloadABadFile(ReloadingRelay& relay, TestDatabase& b, const std::string& steady) {
  // Paused: new rows stay NEW, the gauge says so, /readyz stays 200.
  const std::string paused =
      steady + Service("b", b, "    poll_interval_ms: 50\n    batch_size: 50\n    paused: true\n");
  relay.Reload(paused);
  b.InsertEvents(10, 2, 1001, "Item");
  CHECK(relay.Metric("outbox_service_paused{service=\"b\"}") == 1);
  CHECK(relay.Metric("outbox_service_paused{service=\"a\"}") == 0);
  REQUIRE(WaitFor([&] { return relay.Metric("outbox_backlog_events{service=\"b\"}") == 20; }, 10s));
  HttpReply ready = relay.Get("/readyz");
  CHECK(ready.status == 200);
  CHECK(ready.body.find("service b: paused") != std::string::npos);
  CHECK(relay.Get("/healthz").status == 200);

  // A file with an unknown key changes nothing.
  const double loaded_at = relay.Metric("outbox_config_last_reload_success_timestamp_seconds");
  relay.Reload(paused + "    colour: red\n", "failure");
  CHECK(relay.Metric("outbox_config_last_reload_success_timestamp_seconds") == loaded_at);
  CHECK(relay.err().find("config reload failed") != std::string::npos);
  CHECK(relay.err().find("relay.yaml:18:5: services[1].colour: unknown key") != std::string::npos);
  CHECK(relay.Metric("outbox_service_paused{service=\"b\"}") == 1);
  CHECK(b.CountByStatus()["NEW"] == 20);
}

// When the events were inserted (ms since the epoch).
struct Windows {
  int64_t baseline, reloads_start, reloads_end;
};

// The steady service lost nothing of the `written` events, kept their
// order, and its p99 during the reloads is at most its p99 before plus one
// idle poll.
void CheckSteady(const std::vector<ConsumedMessage>& msgs, int64_t written, const Windows& w,
                 int64_t poll_ms) {
  // A lost nothing, kept its order, and kept its p99.
  std::set<int64_t> ids;
  std::vector<int64_t> before, during;
  for (const auto& m : msgs) {
    ids.insert(std::stoll(m.headers.at("outbox_id")));
    const int64_t t = InsertedMs(m);
    if (t >= w.baseline && t < w.reloads_start) before.push_back(LatencyMs(m));
    if (t >= w.reloads_start && t <= w.reloads_end) during.push_back(LatencyMs(m));
  }
  CHECK(static_cast<int64_t>(ids.size()) == written);
  CHECK(OrderViolations(msgs) == 0);
  CHECK(during.size() >= 20);
  const int64_t p99_before = P99(before), p99_during = P99(during);
  INFO("p99 before " << p99_before << " ms (" << before.size() << " events), during the reloads "
                     << p99_during << " ms (" << during.size() << " events)");
  CHECK(p99_during <= p99_before + poll_ms);
}

}  // namespace

TEST_CASE(
    "a service keeps flowing in order and within its p99 while another is added then changed "
    "then paused then resumed then removed by SIGHUP and a bad file changes nothing",
    "[reload][process]") {
  TestBroker cluster(1);
  cluster.CreateTopic("a.Order", 2);
  cluster.CreateTopic("b.Order", 2);
  cluster.CreateTopic("b.Item", 2);
  TestDatabase a("reload_steady");
  TestDatabase b("reload_other");
  b.InsertEvents(100, 2);
  // A polls every 100 ms when idle: a reload may cost it at most that.
  constexpr int64_t kPollMs = 100;
  const std::string steady = Service("a", a, "    poll_interval_ms: 100\n");
  ReloadingRelay relay(cluster.bootstrap(), steady);
  const char* const kLoadedAt = "outbox_config_last_reload_success_timestamp_seconds";
  const double started_at = relay.Metric(kLoadedAt);
  CHECK(started_at > 0);
  CHECK(relay.Reloads("failure") == 0);

  // The period before, for A's p99, from 2 s on: the producer's first
  // connection and metadata make the first events slower.
  const int64_t baseline_start = NowMs() + 2000;
  // 100 events a second into A, each its insert time (ms since the epoch) in
  // its payload, until stopped.
  OutboxWriter writer(a.name(), 10ms, INT64_MAX, [](int64_t i) {
    const std::string id = std::to_string(i + 1);
    return id + ", 'Order', " + std::to_string((i + 1) % 20) + ", 'OrderPaid', 'k" + id +
           "', '{\"t\":" + std::to_string(NowMs()) + "}'";
  });
  std::this_thread::sleep_for(7s);
  const int64_t reloads_start = NowMs();

  // Added: B drains.
  relay.Reload(steady + Service("b", b, "    poll_interval_ms: 50\n"));
  REQUIRE(WaitFor([&] { return Unsent(b) == 0; }, 30s));
  CHECK(relay.Metric("outbox_service_paused{service=\"b\"}") == 0);
  CHECK(relay.Metric(kLoadedAt) > started_at);

  // Changed (and a key that needs a restart): B restarts alone.
  relay.Reload(steady + Service("b", b, "    poll_interval_ms: 50\n    batch_size: 50\n"),
               "success", Top(cluster.bootstrap(), relay.port(), "debug"));
  CHECK(relay.err().find("only a restart applies it") != std::string::npos);
  CHECK(relay.err().find("key=log.level") != std::string::npos);

  PauseThenReloadABadFile(relay, b, steady);

  // Resumed: the rows held back go out.
  relay.Reload(steady + Service("b", b, "    poll_interval_ms: 50\n"));
  REQUIRE(WaitFor([&] { return Unsent(b) == 0; }, 30s));

  // Removed: its series go.
  relay.Reload(steady);
  const int64_t reloads_end = NowMs();
  const std::string metrics = relay.Metrics();
  CHECK(std::isnan(MetricValue(metrics, "outbox_service_paused{service=\"b\"}")));
  CHECK(std::isnan(MetricValue(metrics, "outbox_backlog_events{service=\"b\"}")));
  CHECK(MetricSum(metrics, "outbox_events_published_total", "service=\"b\"") == 0);
  CHECK(MetricValue(metrics, "outbox_config_reloads_total{result=\"success\"}") == 5);
  CHECK(relay.Get("/readyz").body.find("service b") == std::string::npos);

  writer.Stop();
  REQUIRE(WaitFor([&] { return Unsent(a) == 0; }, 30s));
  CHECK(relay.Stop() == 0);
  // A's Relay was never touched: it started once.
  CHECK(Count(relay.err(), "relaying service=a ") == 1);
  CHECK(Count(relay.err(), "relaying service=b ") == 4);

  CheckSteady(ConsumeAll(cluster.bootstrap(), {"a.Order"}), writer.written(),
              {baseline_start, reloads_start, reloads_end}, kPollMs);
  // B: every row once, nothing left behind.
  CHECK(b.CountByStatus()["SENT"] == 220);
}

TEST_CASE("a service removed by SIGHUP settles its in-flight events and its series go",
          "[reload][process]") {
  TestBroker cluster(1);
  cluster.CreateTopic("gone.Order", 2);
  TestDatabase idle("reload_idle");
  TestDatabase busy("reload_removed");
  busy.InsertEvents(10000, 1);
  const std::string stays = Service("stays", idle);
  ReloadingRelay relay(cluster.bootstrap(), stays + Service("gone", busy, "    batch_size: 100\n"));
  REQUIRE(WaitFor([&] { return busy.CountByStatus()["SENT"] > 500; }, 60s));
  relay.Reload(stays);
  // Nothing left claimed: what was in flight settled before the relay let go.
  auto counts = busy.CountByStatus();
  CHECK(counts["SENDING"] == 0);
  CHECK(counts["NEW"] > 0);
  CHECK(relay.err().find("still in flight") == std::string::npos);
  // Every SENT row is in Kafka, and nothing else of it.
  const auto msgs = ConsumeAll(cluster.bootstrap(), {"gone.Order"});
  std::set<int64_t> ids;
  for (const auto& m : msgs) ids.insert(std::stoll(m.headers.at("outbox_id")));
  CHECK(static_cast<int64_t>(ids.size()) == counts["SENT"]);
  const std::string metrics = relay.Metrics();
  CHECK(std::isnan(MetricValue(metrics, "outbox_database_up{service=\"gone\"}")));
  CHECK(MetricValue(metrics, "outbox_database_up{service=\"stays\"}") == 1);
  // It stays stopped: its rows stay NEW.
  const int64_t sent = counts["SENT"];
  std::this_thread::sleep_for(1s);
  CHECK(busy.CountByStatus()["SENT"] == sent);
  CHECK(relay.Stop() == 0);
}

TEST_CASE(
    "a binlog stream whose first service a reload removes is reopened with the next one's "
    "credentials and closed when no binlog service is left",
    "[reload][process][binlog-relay]") {
  TestBroker cluster(1);
  cluster.CreateTopic("y.Order", 1);
  TestDatabase x("reload_binlog_first");
  TestDatabase y("reload_binlog_next");
  const std::string binlog = "    wakeup: binlog\n    poll_interval_ms: 5000\n";
  const std::string next = Service("y", y, binlog);
  ReloadingRelay relay(cluster.bootstrap(), Service("x", x, binlog) + next);
  const std::string y_up = "outbox_wakeup_binlog_up{service=\"y\"}";
  REQUIRE(WaitFor([&] { return relay.Metric(y_up) == 1; }, 30s));

  relay.Reload(next);
  CHECK(relay.err().find("binlog stream reopened with another service's credentials") !=
        std::string::npos);
  CHECK(relay.err().find("service=y") != std::string::npos);
  REQUIRE(WaitFor([&] { return relay.Metric(y_up) == 1; }, 30s));
  y.InsertEvents(5, 1);
  REQUIRE(WaitFor([&] { return Unsent(y) == 0; }, 30s));

  // Y polls now: the stream goes, and so does Y's binlog series.
  relay.Reload(Service("y", y, "    poll_interval_ms: 50\n"));
  CHECK(relay.err().find("binlog stream closed") != std::string::npos);
  CHECK(std::isnan(relay.Metric(y_up)));
  cluster.CreateTopic("y.Item", 1);
  y.InsertEvents(5, 1, 100, "Item");
  REQUIRE(WaitFor([&] { return Unsent(y) == 0; }, 30s));
  CHECK(relay.Stop() == 0);
}
