#include "app/app.h"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <functional>

#include "app/wakeups.h"
#include "http/http_server.h"
#include "kafka/kafka_config.h"
#include "kafka/kafka_publisher.h"
#include "metrics/metrics.h"
#include "outbox/mysql_store.h"
#include "relay/relay.h"

namespace outbox {

namespace {

struct Cluster {
  KafkaConfig config;
  int64_t min_lease_ms;
  std::shared_ptr<KafkaPublisher> publisher;
};

// Once a second: kafka_up.
void Tick(boost::asio::steady_timer& timer, std::vector<Cluster>& clusters, Metrics& metrics) {
  bool up = true;
  for (const auto& c : clusters) up = up && c.publisher->Healthy();
  metrics.kafka_up().Set(up ? 1 : 0);
  timer.expires_after(std::chrono::seconds(1));
  timer.async_wait([&](const boost::system::error_code& ec) {
    if (!ec) Tick(timer, clusters, metrics);
  });
}

}  // namespace

int RunDaemon(const LoadedConfig& loaded) {
  const Config& config = loaded.config;
  for (const auto& w : loaded.warnings) spdlog::warn("config: {}", w);
  spdlog::info("outbox-relay {} starting: instance {}, {} service(s), http {}, config {}",
               OUTBOX_VERSION, config.instance_id, config.services.size(), config.http_listen,
               config.path);

  Metrics metrics;
  metrics.SetInstance(config.instance_id);
  std::vector<Cluster> clusters;
  for (const auto& s : config.services) {
    auto it = std::find_if(clusters.begin(), clusters.end(),
                           [&](const Cluster& c) { return c.config == s.kafka; });
    if (it == clusters.end())
      clusters.push_back({s.kafka, s.lease_ms, nullptr});
    else
      it->min_lease_ms = std::min(it->min_lease_ms, s.lease_ms);
  }
  for (auto& c : clusters) {
    std::vector<std::string> warnings;
    auto props = ProducerProperties(c.config, "outbox-relay-" + config.instance_id, c.min_lease_ms,
                                    &warnings);
    for (const auto& w : warnings) spdlog::warn("config: {}", w);
    std::string error;
    c.publisher = KafkaPublisher::Create(props, &error);
    if (!c.publisher) {
      spdlog::error("{}", error);
      return 1;
    }
  }

  Wakeups wakeups;  // before the relays: their BinlogWakeups subscribe to its streams
  std::vector<std::unique_ptr<Relay>> relays;
  for (const auto& s : config.services) {
    RelayOptions o;
    o.config = s;
    MysqlConfig mysql = s.mysql;
    o.store_factory = [mysql] { return std::make_unique<MysqlStore>(mysql); };
    auto it = std::find_if(clusters.begin(), clusters.end(),
                           [&](const Cluster& c) { return c.config == s.kafka; });
    o.publisher = it->publisher;
    o.metrics = &metrics.ForService(s.name);
    wakeups.Wire(config, &o);
    relays.push_back(std::make_unique<Relay>(std::move(o)));
  }

  boost::asio::io_context io;
  HttpServer http(io, [&](const std::string& target) -> HttpResponse {
    if (target == "/metrics")
      return {200, "text/plain; version=0.0.4; charset=utf-8", metrics.Serialize()};
    if (target == "/healthz") return {200, "text/plain; charset=utf-8", "ok\n"};
    if (target == "/readyz") {
      bool ready = true;
      std::string body;
      for (const auto& c : clusters) {
        bool up = c.publisher->Healthy();
        ready = ready && up;
        body += "kafka " + c.config.bootstrap_servers + ": " + (up ? "ok" : "unreachable") + "\n";
      }
      for (const auto& r : relays) {
        bool up = r->DatabaseReady();
        ready = ready && up;
        body += "service " + r->name() + ": " + (up ? "ok" : "not ready: " + r->LastError()) + "\n";
      }
      return {ready ? 200 : 503, "text/plain; charset=utf-8", body};
    }
    return {404, "text/plain; charset=utf-8", "not found; try /metrics, /healthz, /readyz\n"};
  });
  Status s = http.Listen(config.http_listen);
  if (!s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  // The bound port, not the configured one: with port 0 the kernel picks it.
  spdlog::info("http: serving /metrics, /healthz, /readyz on {}:{}",
               config.http_listen.substr(0, config.http_listen.rfind(':')), http.port());

  for (auto& r : relays) r->Start();

  boost::asio::steady_timer timer(io);
  // SIGHUP too: its default action ends the process at once, like SIGKILL
  // (claimed rows wait out their lease, published ones go out twice), and
  // logrotate scripts and closed terminals send it. There is nothing to
  // reload, so it is logged and ignored.
  boost::asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  Tick(timer, clusters, metrics);
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        if (sig == SIGHUP) {
          spdlog::warn(
              "received SIGHUP: ignored (the relay does not reload its configuration; restart "
              "it to apply changes, SIGTERM stops it gracefully)");
          signals.async_wait(on_signal);
          return;
        }
        spdlog::info("received {}, stopping: no new claims, finishing in-flight events",
                     sig == SIGTERM ? "SIGTERM" : "SIGINT");
        timer.cancel();
        http.Close();
        io.stop();
      };
  signals.async_wait(on_signal);
  io.run();

  // Stop every service at once; each waits for its in-flight batches.
  std::vector<std::thread> stoppers;
  for (auto& r : relays) {
    auto grace = std::chrono::milliseconds(
        std::min<int64_t>(60000, config.services[stoppers.size()].lease_ms / 2 + 5000));
    stoppers.emplace_back([&r, grace] { r->Stop(grace); });
  }
  for (auto& t : stoppers) t.join();
  relays.clear();
  clusters.clear();
  spdlog::info("stopped");
  return 0;
}

}  // namespace outbox
