#include "app/reloader.h"

#include "common/log.h"
#include "common/text.h"
#include "config/config_loader.h"

namespace outbox {

namespace {

std::vector<std::string> ChangedNames(const ReloadPlan& plan) {
  std::vector<std::string> names;
  for (const auto& c : plan.changed) names.push_back(c.name);
  return names;
}

// How long a reload waits for the reconciler to follow the file before it
// is counted anyway: stopping services takes their grace (at most 60 s).
constexpr std::chrono::minutes kFollowLimit{2};

}  // namespace

Reloader::Reloader(const Config& file, Reconciler* reconciler, Fleet* fleet, Metrics* metrics)
    : path_(file.path), reconciler_(reconciler), fleet_(fleet), metrics_(metrics), file_(file) {
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
  // Against the whole file, not only the services this relay owns: the
  // restart-only keys and their errors are the file's.
  const ReloadPlan plan = PlanReload(file_, loaded.config);
  if (!plan.error.empty()) {
    LogError("config reload failed: nothing changed, the running config is kept",
             {{"config", path_}, {"error", path_ + ": " + plan.error}});
    return false;
  }
  for (const auto& key : plan.restart_only)
    LogWarn(
        "config reload: this key changed but only a restart applies it; the running value is kept",
        {{"key", key}});
  file_ = plan.config;
  fleet_->SetFile(file_);
  const uint64_t input = reconciler_->SetFile(file_);
  (void)reconciler_->WaitFollowed(input, DefaultClock()->Now() + kFollowLimit);
  LogInfo("config reloaded", {{"config", path_},
                              {"added", JoinNames(plan.added, "")},
                              {"removed", JoinNames(plan.removed, "")},
                              {"changed", JoinNames(ChangedNames(plan), "")},
                              {"unchanged", plan.unchanged.size()}});
  return true;
}

}  // namespace outbox
