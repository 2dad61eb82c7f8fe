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

std::vector<std::string> ChangedNames(const ReloadPlan& plan) {
  std::vector<std::string> names;
  for (const auto& c : plan.changed) names.push_back(c.name);
  return names;
}

void LogPlan(const ReloadPlan& plan, const std::vector<std::string>& restart_only) {
  for (const auto& key : restart_only)
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

Reloader::Reloader(const Config& file, ServiceSet* services, Fleet* fleet, Metrics* metrics)
    : path_(file.path), services_(services), fleet_(fleet), metrics_(metrics), file_(file) {
  thread_ = std::thread([this] { Run(); });
}

Reloader::~Reloader() { Stop(); }

void Reloader::Request() {
  MutexLock lock(&mu_);
  pending_ = true;
  cv_.SignalAll();
}

void Reloader::RequestAssignment() {
  MutexLock lock(&mu_);
  assignment_ = true;
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
    bool reload = false;
    {
      MutexLock lock(&mu_);
      while (!pending_ && !assignment_ && !stopping_) cv_.Wait();
      if (stopping_) return;
      reload = pending_;
      pending_ = assignment_ = false;
    }
    if (!reload) {
      // The services of a moved shard start or stop; a failure (a producer
      // that cannot be made) is logged by ServiceSet and tried again at the
      // next change or reload.
      (void)Follow({});
      continue;
    }
    const bool ok = ReloadOnce();
    metrics_->config_reloads(ok).Increment();
    if (ok) metrics_->config_last_reload_success().Set(DefaultClock()->UnixNow());
  }
}

bool Reloader::Follow(const std::vector<std::string>& restart_only) {
  const ReloadPlan plan = PlanReload(services_->config(), fleet_->Current().Filter(file_));
  LogPlan(plan, restart_only);
  const bool ok = services_->Apply(plan);
  fleet_->ExportOwned();
  if (ok)
    LogInfo("services follow the file and the fleet", {{"started", Join(plan.added)},
                                                       {"stopped", Join(plan.removed)},
                                                       {"restarted", Join(ChangedNames(plan))},
                                                       {"unchanged", plan.unchanged.size()}});
  return ok;
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
  // Against the whole file, not only the services this relay owns: the
  // restart-only keys and their errors are the file's.
  const ReloadPlan plan = PlanReload(file_, loaded.config);
  if (!plan.error.empty()) {
    LogError("config reload failed: nothing changed, the running config is kept",
             {{"config", path_}, {"error", path_ + ": " + plan.error}});
    return false;
  }
  const Config previous = file_;
  file_ = plan.config;
  fleet_->SetFile(file_);
  if (!Follow(plan.restart_only)) {
    file_ = previous;
    fleet_->SetFile(file_);
    LogError(
        "config reload failed: nothing changed, the running config is kept",
        {{"config", path_}, {"error", "a Kafka producer for a new kafka block cannot be created"}});
    return false;
  }
  LogInfo("config reloaded", {{"config", path_},
                              {"added", Join(plan.added)},
                              {"removed", Join(plan.removed)},
                              {"changed", Join(ChangedNames(plan))},
                              {"unchanged", plan.unchanged.size()}});
  return true;
}

}  // namespace outbox
