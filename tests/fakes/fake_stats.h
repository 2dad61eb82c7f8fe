#pragma once

// A ServiceStats that remembers what moved through it, for tests.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/service_stats.h"

namespace outbox::testing {

class FakeStats : public ServiceStats {
 public:
  void Add(Counter c, double n = 1) override {
    std::lock_guard<std::mutex> lock(mu_);
    counters_[c] += n;
  }
  void AddPublished(const std::string& topic, double n = 1) override {
    std::lock_guard<std::mutex> lock(mu_);
    published_[topic] += n;
  }
  void AddPublishFailure(const std::string& reason, double n = 1) override {
    std::lock_guard<std::mutex> lock(mu_);
    failures_[reason] += n;
  }
  void Set(Gauge g, double v) override {
    std::lock_guard<std::mutex> lock(mu_);
    gauges_[g] = v;
  }
  void Clear(Gauge g) override {
    std::lock_guard<std::mutex> lock(mu_);
    gauges_.erase(g);
  }
  void Observe(Histogram h, double v) override {
    std::lock_guard<std::mutex> lock(mu_);
    observed_[h].push_back(v);
  }

  double Value(Counter c) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = counters_.find(c);
    return it == counters_.end() ? 0 : it->second;
  }
  // NaN-free: absent gauges are nullopt (Has); Value reads 0 for them.
  bool Has(Gauge g) const {
    std::lock_guard<std::mutex> lock(mu_);
    return gauges_.count(g) > 0;
  }
  double Value(Gauge g) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = gauges_.find(g);
    return it == gauges_.end() ? 0 : it->second;
  }
  double Published(const std::string& topic) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = published_.find(topic);
    return it == published_.end() ? 0 : it->second;
  }
  double Failures(const std::string& reason) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = failures_.find(reason);
    return it == failures_.end() ? 0 : it->second;
  }
  std::vector<double> Observed(Histogram h) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = observed_.find(h);
    return it == observed_.end() ? std::vector<double>{} : it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<Counter, double> counters_;
  std::map<Gauge, double> gauges_;
  std::map<Histogram, std::vector<double>> observed_;
  std::map<std::string, double> published_, failures_;
};

}  // namespace outbox::testing
