#include "app/reloader.h"

#include "common/log.h"
#include "config/config_loader.h"

namespace outbox {

namespace {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

void LogPlan(const ReloadPlan& plan) {
  for (const auto& key : plan.restart_only)
    LogWarn(
        "config reload: this key changed but only a restart applies it; the running value is kept",
        {{"key", key}});
  for (const auto& c : plan.changed) {
    LogInfo("config reload: service restarts with its changed keys",
            {{"service", c.name}, {"keys", Join(c.keys)}});
  }
  for (const auto& s : plan.config.services) {
    if (!s.paused) continue;
    LogInfo("service paused by its config: no new claims until a reload sets paused: false",
            {{"service", s.name}});
  }
}

}  // namespace

Reloader::Reloader(std::string path, ServiceSet* services, Metrics* metrics)
    : path_(std::move(path)), services_(services), metrics_(metrics) {
  thread_ = std::thread([this] { Run(); });
}

Reloader::~Reloader() { Stop(); }

void Reloader::Request() {
  MutexLock lock(&mu_);
  pending_ = true;
  cv_.SignalAll();
}

void Reloader::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

void Reloader::Run() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      while (!pending_ && !stopping_) cv_.Wait();
      if (stopping_) return;
      pending_ = false;
    }
    const bool ok = ReloadOnce();
    metrics_->config_reloads(ok).Increment();
    if (ok) metrics_->config_last_reload_success().Set(DefaultClock()->UnixNow());
  }
}

bool Reloader::ReloadOnce() {
  LogInfo("received SIGHUP: reloading the config file", {{"config", path_}});
  LoadedConfig loaded;
  try {
    loaded = LoadConfigFile(path_);
  } catch (const ConfigError& e) {
    LogError("config reload failed: nothing changed, the running config is kept",
             {{"config", path_}, {"error", e.what()}});
    return false;
  }
  for (const auto& w : loaded.warnings) LogWarn("config warning", {{"error", w}});
  const ReloadPlan plan = PlanReload(services_->config(), loaded.config);
  if (!plan.error.empty()) {
    LogError("config reload failed: nothing changed, the running config is kept",
             {{"config", path_}, {"error", path_ + ": " + plan.error}});
    return false;
  }
  LogPlan(plan);
  if (!services_->Apply(plan)) {
    LogError(
        "config reload failed: nothing changed, the running config is kept",
        {{"config", path_}, {"error", "a Kafka producer for a new kafka block cannot be created"}});
    return false;
  }
  LogInfo("config reloaded", {{"config", path_},
                              {"added", Join(plan.added)},
                              {"removed", Join(plan.removed)},
                              {"changed", Join([&] {
                                 std::vector<std::string> names;
                                 for (const auto& c : plan.changed) names.push_back(c.name);
                                 return names;
                               }())},
                              {"unchanged", plan.unchanged.size()}});
  return true;
}

}  // namespace outbox
