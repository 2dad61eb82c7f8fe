#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <functional>
#include <thread>

#include "app/app.h"
#include "app/clusters.h"
#include "app/http_handler.h"
#include "app/stall_watch.h"
#include "app/systemd_notify.h"
#include "app/wakeups.h"
#include "common/build_info.h"
#include "common/liveness.h"
#include "common/log.h"
#include "outbox/mysql_store_factory.h"

namespace outbox {

namespace {

// What the once-a-second tick reads and updates.
struct TickState {
  boost::asio::steady_timer& timer;
  std::vector<Cluster>& clusters;
  Metrics& metrics;
  const LivenessRegistry& liveness;
  StallWatch stalls;
};

// Once a second: kafka_up, and the loops past their stall limit.
void Tick(TickState& t) {
  bool up = true;
  for (const auto& c : t.clusters) up = up && c.publisher->Healthy();
  t.metrics.kafka_up().Set(up ? 1 : 0);
  const std::vector<Stall> stalls = t.liveness.Stalled();
  t.metrics.stalled_loops().Set(static_cast<double>(stalls.size()));
  t.stalls.Update(stalls);
  t.timer.expires_after(std::chrono::seconds(1));
  t.timer.async_wait([&t](const boost::system::error_code& ec) {
    if (!ec) Tick(t);
  });
}

void LogStart(const LoadedConfig& loaded) {
  const Config& config = loaded.config;
  for (const auto& w : loaded.warnings) LogWarn("config warning", {{"error", w}});
  LogInfo("outbox-relay starting", {{"version", BuildVersion()},
                                    {"services", config.services.size()},
                                    {"http", config.http_listen},
                                    {"config", config.path}});
}

std::vector<std::unique_ptr<Relay>> CreateRelays(const Config& config,
                                                 const std::vector<Cluster>& clusters,
                                                 Metrics& metrics, LivenessRegistry& liveness,
                                                 Wakeups& wakeups) {
  std::vector<std::unique_ptr<Relay>> relays;
  for (const auto& s : config.services) {
    RelayOptions o;
    o.config = s;
    MysqlConfig mysql = s.mysql;
    o.store_factory = [mysql] { return NewMysqlStore(mysql); };
    o.publisher = PublisherFor(clusters, s);
    o.metrics = &metrics.ForService(s.name);
    // Its claim, settle and housekeeping loops register heartbeats here
    // (src/common/liveness.h states the rule they follow).
    o.liveness = &liveness;
    wakeups.Wire(config, &o);  // wakeup: binlog services subscribe to their server's stream
    relays.push_back(std::make_unique<Relay>(std::move(o)));
  }
  return relays;
}

bool ServeHttp(const Config& config, HttpServer& http) {
  Status s = http.Listen(config.http_listen);
  if (!s.ok()) {
    LogError("cannot serve HTTP", {{"error", s.message()}});
    return false;
  }
  // The bound port, not the configured one: with port 0 the kernel picks it.
  // Tests and scripts read the address (host:port) from this line.
  LogInfo("http: serving /metrics, /healthz, /readyz",
          {{"address", http.local_address() + ":" + std::to_string(http.port())}});
  return true;
}

// Runs `io` until SIGTERM or SIGINT, then calls `on_stop` (which must make
// io.run() return). SIGHUP too is caught: its default action ends the process
// at once, like SIGKILL (claimed rows wait out their lease, published ones go
// out twice), and logrotate scripts and closed terminals send it. There is
// nothing to reload, so it is logged and ignored.
void RunUntilStopSignal(boost::asio::io_context& io, const std::function<void()>& on_stop) {
  boost::asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        if (sig == SIGHUP) {
          LogWarn(
              "received SIGHUP: ignored (the relay does not reload its configuration; restart "
              "it to apply changes, SIGTERM stops it gracefully)");
          signals.async_wait(on_signal);
          return;
        }
        LogInfo("stopping: no new claims, finishing in-flight events",
                {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
        on_stop();
      };
  signals.async_wait(on_signal);
  io.run();
}

// Stops every service at once; each waits for its in-flight batches.
void StopRelays(const Config& config, std::vector<std::unique_ptr<Relay>>& relays) {
  std::vector<std::thread> stoppers;
  for (auto& r : relays) {
    auto grace = std::chrono::milliseconds(
        std::min<int64_t>(60000, config.services[stoppers.size()].lease_ms / 2 + 5000));
    stoppers.emplace_back([&r, grace] { r->Stop(grace); });
  }
  for (auto& t : stoppers) t.join();
  relays.clear();
}

}  // namespace

int RunDaemon(const LoadedConfig& loaded) {
  const Config& config = loaded.config;
  LogStart(loaded);
  Metrics metrics;
  metrics.SetInstance(config.instance_id);
  std::vector<Cluster> clusters;
  if (!CreateClusters(config, &clusters)) return 1;
  LivenessRegistry liveness(DefaultClock());
  Wakeups wakeups;  // before the relays: their BinlogWakeups subscribe to its streams
  std::vector<std::unique_ptr<Relay>> relays =
      CreateRelays(config, clusters, metrics, liveness, wakeups);

  boost::asio::io_context io;
  HttpServer http(io, MakeHttpHandler({&metrics, &clusters, &relays, &liveness}));
  if (!ServeHttp(config, http)) return 1;
  for (auto& r : relays) r->Start();
  SystemdNotifier systemd(io, liveness);
  systemd.Ready();
  boost::asio::steady_timer timer(io);
  TickState tick{timer, clusters, metrics, liveness, {}};
  Tick(tick);
  RunUntilStopSignal(io, [&] {
    systemd.Stopping();
    timer.cancel();
    http.Close();
    io.stop();
  });

  StopRelays(config, relays);
  clusters.clear();
  LogInfo("stopped");
  return 0;
}

}  // namespace outbox
