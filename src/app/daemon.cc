#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <functional>
#include <thread>

#include "app/app.h"
#include "app/http_handler.h"
#include "app/reloader.h"
#include "app/service_set.h"
#include "app/stall_watch.h"
#include "app/systemd_notify.h"
#include "app/wakeup_sources.h"
#include "common/build_info.h"
#include "common/liveness.h"
#include "common/log.h"
#include "fleet/fleet.h"
#include "fleet/reconciler.h"
#include "kafka/kafka_group_member.h"

namespace outbox {

namespace {

// What the once-a-second tick reads and updates.
struct TickState {
  boost::asio::steady_timer& timer;
  const ServiceSet& services;
  Fleet& fleet;
  Metrics& metrics;
  const LivenessRegistry& liveness;
  StallWatch stalls;
};

// Once a second: kafka_up, fleet_member, and the loops past their stall
// limit.
void Tick(TickState& t) {
  t.metrics.kafka_up().Set(t.services.KafkaUp() ? 1 : 0);
  t.fleet.ExportMember();
  const std::vector<Stall> stalls = t.liveness.Stalled();
  t.metrics.stalled_loops().Set(static_cast<double>(stalls.size()));
  t.stalls.Update(stalls);
  t.timer.expires_after(std::chrono::seconds(1));
  t.timer.async_wait([&t](const boost::system::error_code& ec) {
    if (!ec) Tick(t);
  });
}

Reconciler::Options ReconcilerOptions(const Config& config, ServiceSet* services, Metrics* metrics,
                                      const Fleet& fleet) {
  Reconciler::Options o;
  o.runner = services;
  o.registry = metrics->registry().get();
  o.fleet_metrics = fleet.metrics();
  // The group waits for this relay's revocation; a claim round that takes
  // longer than half a session is on a sick database (docs/DEPLOY.md).
  if (config.fleet)
    o.claim_stop_limit = std::chrono::milliseconds(config.fleet->session_timeout_ms / 2);
  return o;
}

std::unique_ptr<GroupMembership> NewMembership(const Config& config) {
  if (!config.fleet) return nullptr;
  return std::make_unique<KafkaGroupMember>(*config.fleet, config.instance_id);
}

void LogStart(const LoadedConfig& loaded) {
  const Config& config = loaded.config;
  for (const auto& w : loaded.warnings) LogWarn("config warning", {{"error", w}});
  for (const auto& s : config.services) {
    if (s.paused)
      LogInfo("service paused by its config: no new claims until a reload sets paused: false",
              {{"service", s.name}});
  }
  LogInfo("outbox-relay starting", {{"version", BuildVersion()},
                                    {"services", config.services.size()},
                                    {"http", config.http_listen},
                                    {"config", config.path}});
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
// io.run() return). SIGHUP calls `on_reload` (docs/CONFIG.md "Reload"); its
// default action would end the process at once, like SIGKILL.
void RunUntilStopSignal(boost::asio::io_context& io, boost::asio::signal_set& signals,
                        const std::function<void()>& on_reload,
                        const std::function<void()>& on_stop) {
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        if (sig == SIGHUP) {
          on_reload();
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

// What the daemon serves with, made by RunDaemon.
struct Serving {
  boost::asio::io_context& io;
  boost::asio::signal_set& signals;
  HttpServer& http;
  ServiceSet& services;
  Fleet& fleet;
  Reconciler& reconciler;
  Metrics& metrics;
  const LivenessRegistry& liveness;
};

// Joins the fleet, serves until SIGTERM or SIGINT, leaves the fleet. False
// when the fleet cannot be joined.
bool ServeUntilStopped(const Config& config, const Serving& r) {
  // Named references rather than a structured binding: clang 14 cannot
  // capture a structured binding in a lambda.
  boost::asio::io_context& io = r.io;
  HttpServer& http = r.http;
  Fleet& fleet = r.fleet;
  Reconciler& reconciler = r.reconciler;
  // Starting and stopping services is the reconciler's thread's: a stop may
  // take a service's grace, and HTTP and the watchdog go on meanwhile.
  reconciler.Start();
  Reloader reloader(config, &reconciler, &fleet, &r.metrics);
  if (Status s = fleet.Start([&reconciler](const Ownership& o) { reconciler.SetOwnership(o); });
      !s.ok()) {
    LogError("cannot join the fleet", {{"error", s.message()}});
    return false;
  }
  SystemdNotifier systemd(io, r.liveness);
  systemd.Ready();
  boost::asio::steady_timer timer(io);
  TickState tick{timer, r.services, fleet, r.metrics, r.liveness, {}};
  Tick(tick);
  RunUntilStopSignal(
      io, r.signals, [&] { reloader.Request(); },
      [&] {
        systemd.Stopping();
        timer.cancel();
        http.Close();
        io.stop();
      });
  // Its shards move to the other members at once (their claims stopped
  // first); they skip the rows this relay still has in flight (their leases
  // are live) while it settles them.
  fleet.Stop();
  reloader.Stop();
  reconciler.Stop();
  return true;
}

}  // namespace

int RunDaemon(const LoadedConfig& loaded) {
  const Config& config = loaded.config;
  LogStart(loaded);
  Metrics metrics;
  metrics.SetInstance(config.instance_id);
  metrics.config_last_reload_success().Set(DefaultClock()->UnixNow());
  LivenessRegistry liveness(DefaultClock());
  WakeupSources wakeups;  // before the relays: their BinlogWakeupSources subscribe to its streams
  ServiceSet services({&metrics, &liveness, &wakeups}, config);
  // In a fleet, nothing runs before the group's first assignment.
  Fleet fleet(config, NewMembership(config), &metrics);
  Reconciler reconciler(ReconcilerOptions(config, &services, &metrics, fleet), config,
                        fleet.Current());
  // The first comparison here: without a fleet, a producer that cannot be
  // made fails the start, as a bad file does.
  if (!reconciler.Reconcile().empty() && !config.fleet) return 1;

  boost::asio::io_context io;
  // Caught from here on: a SIGHUP right after READY=1 (systemctl reload)
  // waits for io.run() instead of ending the process.
  boost::asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  HttpServer http(io, MakeHttpHandler({&metrics, &services, &liveness, &fleet}));
  if (!ServeHttp(config, http)) return 1;
  if (!ServeUntilStopped(config,
                         {io, signals, http, services, fleet, reconciler, metrics, liveness}))
    return 1;

  services.StopAll();
  LogInfo("stopped");
  return 0;
}

}  // namespace outbox
