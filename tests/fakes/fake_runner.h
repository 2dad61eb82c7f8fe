#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "fleet/service_runner.h"

namespace outbox::testing {

// Runs services as names in a list, as the test says: a service in
// `cannot_start` fails with that cause; StopClaims records its order.
// Thread-safe.
class FakeRunner : public ServiceRunner {
 public:
  explicit FakeRunner(const Config& top) {
    running_ = top;
    running_.services.clear();
  }

  Config Running() const override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return running_;
  }
  std::vector<std::string> Claiming() const override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const auto& s : running_.services)
      if (!Has(claims_stopped_, s.name)) out.push_back(s.name);
    return out;
  }
  std::vector<StartFailure> Apply(const ReloadPlan& plan, const Gate& may_claim) override
      EXCLUDES(mu_) {
    if (on_apply) on_apply();
    MutexLock lock(&mu_);
    ++applies_;
    std::vector<StartFailure> failures;
    std::vector<ServiceConfig> next;
    for (const auto& s : plan.config.services) {
      const bool starting = Has(plan.added, s.name) || Changed(plan, s.name);
      const bool kept = std::any_of(running_.services.begin(), running_.services.end(),
                                    [&](const ServiceConfig& r) { return r.name == s.name; });
      if (!starting) {
        if (kept) next.push_back(s);
        continue;
      }
      if (auto it = cannot_start_.find(s.name); it != cannot_start_.end()) {
        failures.push_back({s.name, it->second});
        if (kept && !Has(plan.added, s.name)) next.push_back(Old(s.name));
        continue;
      }
      std::erase(claims_stopped_, s.name);
      if (may_claim(s)) next.push_back(s);
      ++starts_[s.name];
    }
    running_.services = next;
    return failures;
  }
  ClaimStops StopClaims(const Gate& may_claim, Clock::TimePoint) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    ClaimStops out;
    for (const auto& s : running_.services) {
      if (Has(claims_stopped_, s.name) || may_claim(s)) continue;
      claims_stopped_.push_back(s.name);
      stop_order_.push_back(s.name);
      out.services.push_back(s.name);
    }
    return out;
  }

  // Called at the start of each Apply (outside the runner's lock): a test's
  // way to let something happen while a plan is applied.
  std::function<void()> on_apply;

  void CannotStart(const std::string& service, const std::string& cause) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    cannot_start_[service] = cause;
  }
  void CanStart(const std::string& service) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    cannot_start_.erase(service);
  }
  // A service that stopped behind the reconciler's back (as a crash would).
  void Drop(const std::string& service) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    std::erase_if(running_.services, [&](const ServiceConfig& s) { return s.name == service; });
  }
  int starts(const std::string& service) const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    auto it = starts_.find(service);
    return it == starts_.end() ? 0 : it->second;
  }
  int applies() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return applies_;
  }
  std::vector<std::string> stop_order() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return stop_order_;
  }

 private:
  static bool Has(const std::vector<std::string>& v, const std::string& n) {
    return std::find(v.begin(), v.end(), n) != v.end();
  }
  static bool Changed(const ReloadPlan& plan, const std::string& n) {
    return std::any_of(plan.changed.begin(), plan.changed.end(),
                       [&](const ServiceChange& c) { return c.name == n; });
  }
  ServiceConfig Old(const std::string& n) const REQUIRES(mu_) {
    return *std::find_if(running_.services.begin(), running_.services.end(),
                         [&](const ServiceConfig& s) { return s.name == n; });
  }

  mutable Mutex mu_;
  Config running_ GUARDED_BY(mu_);
  std::vector<std::string> claims_stopped_ GUARDED_BY(mu_);
  std::vector<std::string> stop_order_ GUARDED_BY(mu_);
  std::map<std::string, std::string> cannot_start_ GUARDED_BY(mu_);
  std::map<std::string, int> starts_ GUARDED_BY(mu_);
  int applies_ GUARDED_BY(mu_) = 0;
};

}  // namespace outbox::testing
