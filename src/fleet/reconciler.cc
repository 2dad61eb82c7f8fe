#include "fleet/reconciler.h"

#include <algorithm>

#include "common/log.h"
#include "common/text.h"

namespace outbox {

namespace {

std::vector<std::string> Names(const std::vector<ServiceConfig>& services) {
  std::vector<std::string> names;
  names.reserve(services.size());
  for (const auto& s : services) names.push_back(s.name);
  return names;
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A service still wanted whose claims were stopped (its shard left and came
// back, or the watchdog suspended it) runs again by a restart.
void RestartStopped(ReloadPlan* plan, const std::vector<std::string>& claiming) {
  for (const auto& name : plan->unchanged)
    if (!Contains(claiming, name)) plan->changed.push_back({name, {"claims stopped"}});
  std::erase_if(plan->unchanged, [&](const std::string& n) { return !Contains(claiming, n); });
}

bool HasWork(const ReloadPlan& plan) {
  return !plan.added.empty() || !plan.removed.empty() || !plan.changed.empty();
}

void LogPlan(const ReloadPlan& plan) {
  for (const auto& c : plan.changed) {
    LogInfo("service restarts with its changed keys",
            {{"service", c.name}, {"keys", JoinNames(c.keys, "")}});
  }
  for (const auto& s : plan.config.services) {
    if (!s.paused || !Contains(plan.added, s.name)) continue;
    LogInfo("service paused by its config: no new claims until a reload sets paused: false",
            {{"service", s.name}});
  }
}

}  // namespace

Reconciler::Reconciler(Options options, const Config& file, const Ownership& ownership)
    : options_(std::move(options)), file_(file), ownership_(ownership) {
  run_metrics_ = std::make_unique<ServiceRunMetrics>(*options_.registry);
}

Reconciler::~Reconciler() { Stop(); }

void Reconciler::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Reconciler::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

uint64_t Reconciler::SetFile(const Config& file) {
  MutexLock lock(&mu_);
  file_ = file;
  dirty_ = true;
  cv_.SignalAll();
  return ++inputs_;
}

bool Reconciler::WaitFollowed(uint64_t input, Clock::TimePoint deadline) {
  MutexLock lock(&mu_);
  return options_.clock->WaitUntil(&mu_, &cv_, deadline, [&] {
    mu_.AssertHeld();
    return followed_ >= input || stopping_;
  });
}

Ownership Reconciler::ownership() const {
  MutexLock lock(&mu_);
  return ownership_;
}

void Reconciler::SetOwnership(const Ownership& ownership) {
  {
    MutexLock lock(&mu_);
    ownership_ = ownership;
    dirty_ = true;
    ++inputs_;
    cv_.SignalAll();
  }
  // After the change: a service the runner starts from now on asks the
  // gate (the new ownership); one started before, or being stopped by the
  // reconciler's thread right now, is stopped here.
  const auto t0 = options_.clock->Now();
  const ServiceRunner::ClaimStops stops = options_.runner->StopClaims(
      [&ownership](const ServiceConfig& s) { return ownership.Owns(s); },
      t0 + options_.claim_stop_limit);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.clock->Now() - t0).count();
  if (stops.services.empty()) {
    // Nothing ran that this relay no longer owns.
  } else if (stops.in_time) {
    LogInfo("fleet: claims stopped for the services given away",
            {{"services", JoinNames(stops.services)}, {"ms", ms}});
  } else {
    LogWarn(
        "fleet: a claim round of a service given away did not end in time; its rows stay "
        "under live leases that the next owner skips",
        {{"services", JoinNames(stops.services)}, {"ms", ms}});
  }
  Export();
}

void Reconciler::Postpone(ReloadPlan* plan, Clock::TimePoint now) const {
  std::erase_if(plan->added, [&](const std::string& n) { return !retries_.Due(n, now); });
  std::erase_if(plan->changed, [&](const ServiceChange& c) { return !retries_.Due(c.name, now); });
}

void Reconciler::Book(const std::vector<StartFailure>& failures, Clock::TimePoint now) {
  for (const auto& f : failures) {
    if (!retries_.Failed(f.service, f.cause, now)) continue;
    LogWarn("a service this relay should run cannot start; retrying with backoff until it can",
            {{"service", f.service}, {"error", f.cause}});
    run_metrics_->AddStartFailure(f.service);
  }
}

std::vector<StartFailure> Reconciler::Reconcile() {
  Config desired;
  uint64_t input = 0;
  {
    MutexLock lock(&mu_);
    desired = ownership_.Filter(file_);
    dirty_ = false;
    input = inputs_;
  }
  ReloadPlan plan = PlanReload(options_.runner->Running(), desired);
  std::vector<StartFailure> failures;
  if (!plan.error.empty()) {
    LogError("cannot follow the file: it does not fit the running config", {{"error", plan.error}});
  } else {
    RestartStopped(&plan, options_.runner->Claiming());
    failures = Act(&plan);
    Remember(desired);
  }
  Export();
  MutexLock lock(&mu_);
  followed_ = std::max(followed_, input);
  cv_.SignalAll();
  return failures;
}

std::vector<StartFailure> Reconciler::Act(ReloadPlan* plan) {
  const auto now = options_.clock->Now();
  Postpone(plan, now);
  if (!HasWork(*plan)) return {};
  LogPlan(*plan);
  std::vector<StartFailure> failures =
      options_.runner->Apply(*plan, [this](const ServiceConfig& s) {
        MutexLock lock(&mu_);
        return ownership_.Owns(s);
      });
  Book(failures, now);
  LogInfo("services follow the file and the fleet", {{"started", JoinNames(plan->added)},
                                                     {"stopped", JoinNames(plan->removed)},
                                                     {"restarted", plan->changed.size()},
                                                     {"unchanged", plan->unchanged.size()},
                                                     {"failed", failures.size()}});
  return failures;
}

void Reconciler::Remember(const Config& desired) {
  retries_.KeepOnly(Names(desired.services));
  // A service forgets its failures once it runs as desired (not while it
  // runs its old settings after a change that could not start).
  const ReloadPlan left = PlanReload(options_.runner->Running(), desired);
  const std::vector<std::string> claiming = options_.runner->Claiming();
  for (const auto& name : left.unchanged)
    if (Contains(claiming, name)) retries_.Forget(name);
}

void Reconciler::Export() {
  // One export at a time (the membership's thread and this one): a later
  // snapshot of what runs is never overwritten by an earlier one.
  MutexLock exporting(&export_mu_);
  const std::vector<std::string> running = options_.runner->Claiming();
  MutexLock lock(&mu_);
  std::vector<std::string> names = Names(file_.services);
  for (const auto& gone : exported_) {
    if (Contains(names, gone)) continue;
    run_metrics_->Remove(gone);
    if (options_.fleet_metrics) options_.fleet_metrics->RemoveOwned(gone);
  }
  for (const auto& s : file_.services) {
    run_metrics_->SetRunning(s.name, Contains(running, s.name));
    if (options_.fleet_metrics) options_.fleet_metrics->SetOwned(s.name, ownership_.Owns(s));
  }
  exported_ = std::move(names);
}

void Reconciler::Run() {
  for (;;) {
    // Read outside mu_: retries_ is this thread's alone.
    auto deadline = options_.clock->Now() + options_.tick;
    if (auto due = retries_.NextDue()) deadline = std::min(deadline, *due);
    {
      MutexLock lock(&mu_);
      options_.clock->WaitUntil(&mu_, &cv_, deadline, [this] {
        mu_.AssertHeld();
        return dirty_ || stopping_;
      });
      if (stopping_) return;
    }
    (void)Reconcile();
  }
}

}  // namespace outbox
