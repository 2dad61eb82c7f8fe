// Measurements of a relay with `wakeup: binlog` (docs/BINLOG.md "Tests and
// measurements"), not tests: hidden ([.]), they print and assert nothing
// about speed. The idle statements per
// second a relay costs its server (SHOW GLOBAL STATUS Questions over 30 s)
// and insert-commit -> broker-ack latency at 10 events/s, for `wakeup: poll`
// and `wakeup: binlog`. Run: build/tests/integration_tests '[binlog-measure]'
// with the test MariaDB's OUTBOX_TEST_MYSQL_* set (scripts/test does that).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "binlog/binlog_streams.h"
#include "binlog/binlog_wakeup_source.h"
#include "kafka/kafka_config.h"
#include "kafka/kafka_publisher.h"
#include "metrics/metrics.h"
#include "outbox/mysql_store.h"
#include "relay/relay.h"
#include "support/http_probe.h"
#include "support/test_broker.h"
#include "support/test_env.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

using Steady = std::chrono::steady_clock;

// Forwards to the real producer and records when each outbox_id was acked.
class TimingPublisher : public Publisher {
 public:
  explicit TimingPublisher(PublisherPtr inner) : inner_(std::move(inner)) {}
  void Send(const Message& m, SentFn sent) override {
    int64_t id = 0;
    for (const auto& [k, v] : m.headers)
      if (k == "outbox_id") id = std::stoll(v);
    inner_->Send(m, [this, id, sent = std::move(sent)](PublishOutcome o) {
      if (o.result == PublishResult::kAcked) {
        std::lock_guard<std::mutex> lock(mu_);
        acked_.try_emplace(id, Steady::now());
      }
      sent(std::move(o));
    });
  }
  bool Healthy() const override { return inner_->Healthy(); }
  std::map<int64_t, Steady::time_point> acked() {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_;
  }

 private:
  PublisherPtr inner_;
  std::mutex mu_;
  std::map<int64_t, Steady::time_point> acked_;
};

struct Run {
  std::unique_ptr<TestDatabase> db;
  Metrics metrics;
  std::shared_ptr<TimingPublisher> publisher;
  std::unique_ptr<binlog::BinlogStreams> hub;
  std::unique_ptr<Relay> relay;
  ~Run() {
    if (relay) relay->Stop(10s);
    relay.reset();
    hub.reset();
  }
};

void StartRelay(Run& r, const std::string& name, const std::string& bootstrap, bool binlog) {
  r.db = std::make_unique<TestDatabase>(name);
  ServiceConfig s = TestService(*r.db, bootstrap);
  s.poll_interval_ms = 100;    // the default
  s.gauge_interval_ms = 5000;  // the default
  s.lease_ms = 30000;
  s.wakeup = binlog ? WakeupMode::kBinlog : WakeupMode::kPoll;
  // OUTBOX_MEASURE_LINGER_MS: the producer's linger.ms (the relay's default 1).
  if (const char* linger = std::getenv("OUTBOX_MEASURE_LINGER_MS"))
    s.kafka.properties["linger.ms"] = linger;
  std::vector<std::string> warnings;
  std::string err;
  auto kafka =
      KafkaPublisher::Create(ProducerProperties(s.kafka, "measure", s.lease_ms, &warnings), &err);
  REQUIRE(kafka);
  r.publisher = std::make_shared<TimingPublisher>(kafka);
  RelayOptions o;
  o.config = s;
  MysqlConfig mysql = s.mysql;
  o.store_factory = [mysql] { return std::make_unique<MysqlStore>(mysql); };
  o.publisher = r.publisher;
  o.metrics = &r.metrics.ForService(s.name);
  if (binlog) {
    r.hub = std::make_unique<binlog::BinlogStreams>();
    binlog::BinlogOptions b;
    b.mysql = TestMysql("");
    b.instance_id = "measure";
    o.wakeup = std::make_unique<binlog::BinlogWakeupSource>(DefaultClock(), *r.hub, b,
                                                            s.mysql.database, s.mysql.table);
  }
  r.relay = std::make_unique<Relay>(std::move(o));
  r.relay->Start();
}

int64_t Questions(TestDatabase& db) {
  return std::stoll(
      db.QueryString("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                     "WHERE VARIABLE_NAME = 'QUESTIONS'"));
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

}  // namespace

TEST_CASE("measure idle statements per second with wakeup poll and binlog", "[.][binlog-measure]") {
  TestBroker cluster(1, "outbox.event.Order", 4);
  for (bool binlog : {false, true}) {
    Run r;
    StartRelay(r, binlog ? "measure_idle_binlog" : "measure_idle_poll", cluster.bootstrap(),
               binlog);
    std::this_thread::sleep_for(5s);  // connected, stream up, first gauges read
    const int64_t q0 = Questions(*r.db);
    std::this_thread::sleep_for(30s);
    const int64_t q1 = Questions(*r.db);
    std::printf("idle, wakeup %s: %.2f statements/s (Questions delta %lld over 30 s, 1 own)\n",
                binlog ? "binlog" : "poll", static_cast<double>(q1 - q0 - 1) / 30.0,
                static_cast<long long>(q1 - q0));
  }
}

TEST_CASE("measure insert to ack latency at 10 events per second with wakeup poll and binlog",
          "[.][binlog-measure]") {
  // OUTBOX_MEASURE_DEBUG=1: the relay's debug lines, e.g. insert wake-ups
  // that claimed nothing after the commit-race retry.
  if (std::getenv("OUTBOX_MEASURE_DEBUG")) spdlog::set_level(spdlog::level::debug);
  TestBroker cluster(1, "outbox.event.Order", 4);
  for (bool binlog : {false, true}) {
    Run r;
    StartRelay(r, binlog ? "measure_lat_binlog" : "measure_lat_poll", cluster.bootstrap(), binlog);
    std::this_thread::sleep_for(5s);
    std::map<int64_t, Steady::time_point> inserted;
    constexpr int kEvents = 200;  // 20 s at 10 events/s
    auto next = Steady::now();
    for (int64_t id = 1; id <= kEvents; ++id) {
      std::this_thread::sleep_until(next);
      next += 100ms;
      r.db->Exec(
          "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, "
          "payload, status, next_retry_at, created_at, updated_at) VALUES (" +
          std::to_string(id) + ", 'Order', " + std::to_string(id % 10) + ", 'OrderPaid', 'k" +
          std::to_string(id) + "', '{}', 'NEW', NOW(), NOW(), NOW())");
      inserted[id] = Steady::now();  // the autocommit INSERT returned
    }
    REQUIRE(WaitFor([&] { return r.publisher->acked().size() == kEvents; }, 60s));
    std::vector<double> ms;
    for (const auto& [id, t] : r.publisher->acked())
      ms.push_back(std::chrono::duration<double, std::milli>(t - inserted.at(id)).count());
    std::printf("10 events/s, wakeup %s: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%zu events)\n",
                binlog ? "binlog" : "poll", Percentile(ms, 0.5), Percentile(ms, 0.99),
                Percentile(ms, 1.0), ms.size());
  }
}
