#include "app/service_set.h"

#include <algorithm>
#include <thread>

#include "app/wakeups.h"
#include "common/log.h"
#include "outbox/mysql_store_factory.h"
#include "relay/settle_timing.h"

namespace outbox {

namespace {

// A producer serves a service when it was made for the service's kafka
// config and for a lease no longer than the service's: its delivery timeout
// (half the shortest lease, src/kafka/kafka_config.cc) must end before the
// service's lease does.
bool Fits(const Cluster& c, const ServiceConfig& s) {
  return c.config == s.kafka && c.min_lease_ms <= s.lease_ms;
}

// Stops every relay of `entries` at once; each waits for its in-flight
// batches.
template <typename Entries>
void StopInParallel(const Entries& entries) {
  std::vector<std::thread> stoppers;
  stoppers.reserve(entries.size());
  for (const auto& e : entries)
    stoppers.emplace_back([&e] { e->relay->Stop(StopGrace(e->config)); });
  for (auto& t : stoppers) t.join();
}

}  // namespace

ServiceSet::ServiceSet(Deps deps) : deps_(deps) {}

ServiceSet::~ServiceSet() { StopAll(); }

ServiceSet::EntryPtr ServiceSet::NewEntry(const Config& config, const ServiceConfig& s) {
  auto e = std::make_shared<Entry>();
  e->config = s;
  {
    MutexLock lock(&mu_);
    auto it = std::find_if(clusters_.begin(), clusters_.end(),
                           [&](const Cluster& c) { return Fits(c, s); });
    if (it != clusters_.end()) e->publisher = it->publisher;
  }
  RelayOptions o;
  o.config = s;
  MysqlConfig mysql = s.mysql;
  o.store_factory = [mysql] { return NewMysqlStore(mysql); };
  o.publisher = e->publisher;
  ServiceMetrics& metrics = deps_.metrics->ForService(s.name);
  o.metrics = &metrics;
  // Its claim, settle and housekeeping loops register heartbeats here
  // (src/common/liveness.h states the rule they follow).
  o.liveness = deps_.liveness;
  deps_.wakeups->Wire(config, &o);  // wakeup: binlog services subscribe to their server's stream
  e->relay = std::make_unique<Relay>(std::move(o));
  return e;
}

bool ServiceSet::Init(const Config& config) {
  std::vector<Cluster> clusters;
  if (!CreateClusters(config, &clusters)) return false;
  {
    MutexLock lock(&mu_);
    clusters_ = std::move(clusters);
  }
  config_ = config;
  std::vector<EntryPtr> entries;
  for (const auto& s : config.services) entries.push_back(NewEntry(config, s));
  MutexLock lock(&mu_);
  entries_ = std::move(entries);
  return true;
}

void ServiceSet::StartAll() {
  MutexLock lock(&mu_);
  for (auto& e : entries_) e->relay->Start();
}

bool ServiceSet::NewClusters(const Config& config, std::vector<Cluster>* fresh) const {
  Config missing = config;
  missing.services.clear();
  {
    MutexLock lock(&mu_);
    for (const auto& s : config.services) {
      if (std::none_of(clusters_.begin(), clusters_.end(),
                       [&](const Cluster& c) { return Fits(c, s); }))
        missing.services.push_back(s);
    }
  }
  return missing.services.empty() || CreateClusters(missing, fresh);
}

std::vector<ServiceSet::EntryPtr> ServiceSet::StopAndTake(const std::vector<std::string>& names) {
  std::vector<EntryPtr> going;
  {
    MutexLock lock(&mu_);
    for (auto& e : entries_) {
      if (std::find(names.begin(), names.end(), e->config.name) == names.end()) continue;
      e->stopping = true;  // /readyz: "stopping"
      going.push_back(e);
    }
  }
  StopInParallel(going);
  MutexLock lock(&mu_);
  std::erase_if(entries_, [](const EntryPtr& e) { return e->stopping; });
  return going;
}

void ServiceSet::PruneClusters() {
  std::vector<Cluster> unused;
  {
    MutexLock lock(&mu_);
    std::vector<Cluster> used;
    for (auto& c : clusters_) {
      const bool serves = std::any_of(entries_.begin(), entries_.end(), [&c](const EntryPtr& e) {
        return e->publisher == c.publisher;
      });
      (serves ? used : unused).push_back(std::move(c));
    }
    clusters_ = std::move(used);
  }
  // ~KafkaPublisher flushes: outside mu_, so /readyz does not wait for it.
}

void ServiceSet::StartNew(const Config& config, const std::vector<std::string>& names) {
  std::vector<EntryPtr> started;
  for (const auto& s : config.services) {
    if (std::find(names.begin(), names.end(), s.name) != names.end())
      started.push_back(NewEntry(config, s));
  }
  for (auto& e : started) e->relay->Start();
  MutexLock lock(&mu_);
  entries_.insert(entries_.end(), started.begin(), started.end());
}

bool ServiceSet::Apply(const ReloadPlan& plan) {
  std::vector<Cluster> fresh;
  if (!NewClusters(plan.config, &fresh)) return false;
  {
    MutexLock lock(&mu_);
    std::move(fresh.begin(), fresh.end(), std::back_inserter(clusters_));
  }
  // Added services first: they need not wait for the others' grace.
  StartNew(plan.config, plan.added);
  std::vector<std::string> going = plan.removed;
  for (const auto& c : plan.changed) going.push_back(c.name);
  std::vector<EntryPtr> stopped = StopAndTake(going);
  for (auto& e : stopped) e->relay.reset();  // before their metrics go
  for (const auto& name : plan.removed) deps_.metrics->RemoveService(name);
  for (const auto& e : stopped) {
    // A service that no longer has wakeup: binlog loses that series.
    if (e->config.wakeup == Wakeup::kBinlog)
      deps_.metrics->ForService(e->config.name).Clear(ServiceStats::Gauge::kWakeupBinlogUp);
  }
  stopped.clear();
  deps_.wakeups->Update(plan.config);
  config_ = plan.config;
  std::vector<std::string> changed;
  for (const auto& c : plan.changed) changed.push_back(c.name);
  StartNew(plan.config, changed);
  {
    // The file's order, for /readyz.
    MutexLock lock(&mu_);
    std::vector<EntryPtr> ordered;
    for (const auto& s : plan.config.services) {
      auto it = std::find_if(entries_.begin(), entries_.end(),
                             [&](const EntryPtr& e) { return e->config.name == s.name; });
      if (it != entries_.end()) ordered.push_back(*it);
    }
    entries_ = std::move(ordered);
  }
  PruneClusters();
  return true;
}

void ServiceSet::StopAll() {
  std::vector<EntryPtr> all;
  {
    MutexLock lock(&mu_);
    for (auto& e : entries_) e->stopping = true;
    all = entries_;
  }
  StopInParallel(all);
  std::vector<Cluster> clusters;
  {
    MutexLock lock(&mu_);
    entries_.clear();
    clusters.swap(clusters_);
  }
  // The relays go first (outside mu_), then the producers, which flush.
  all.clear();
  clusters.clear();
}

bool ServiceSet::KafkaUp() const {
  MutexLock lock(&mu_);
  return std::all_of(clusters_.begin(), clusters_.end(),
                     [](const Cluster& c) { return c.publisher->Healthy(); });
}

HttpResponse ServiceSet::Readyz() const {
  bool ready = true;
  std::string body;
  MutexLock lock(&mu_);
  for (const auto& c : clusters_) {
    const bool up = c.publisher->Healthy();
    ready = ready && up;
    body += "kafka " + c.config.bootstrap_servers + ": ";
    if (up) {
      body += "ok\n";
    } else {
      // librdkafka's reason (SASL, TLS, a refused connection), as check says it.
      const KafkaProblem p = c.publisher->Problem();
      body += p.ok() ? "unreachable\n" : "unreachable: " + p.Describe() + "\n";
    }
  }
  for (const auto& e : entries_) {
    const Relay& r = *e->relay;
    body += "service " + r.name() + ": ";
    const bool up = r.DatabaseReady();
    if (e->stopping) {
      body += "stopping (finishing its in-flight events)\n";
      continue;
    }
    if (e->config.paused) {
      // Paused for maintenance, perhaps of its database: never unready.
      body += up ? "paused" : "paused, database not ready: " + r.LastError();
    } else {
      ready = ready && up;
      body += up ? "ok" : "not ready: " + r.LastError();
    }
    // Never a reason to be unready: the relay polls while the stream is down.
    const std::string wakeup = r.WakeupStatus();
    if (!wakeup.empty()) body += " (" + wakeup + ")";
    body += "\n";
  }
  return {ready ? 200 : 503, "text/plain; charset=utf-8", body};
}

}  // namespace outbox
