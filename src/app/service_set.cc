#include "app/service_set.h"

#include <algorithm>
#include <thread>

#include "app/schema_reports.h"
#include "app/wakeup_sources.h"
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

bool Named(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
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

// `plan` without the services that cannot start.
ReloadPlan Without(ReloadPlan plan, const std::vector<StartFailure>& failures) {
  const auto failed = [&](const std::string& name) {
    return std::any_of(failures.begin(), failures.end(),
                       [&](const StartFailure& f) { return f.service == name; });
  };
  std::erase_if(plan.added, failed);
  std::erase_if(plan.changed, [&](const ServiceChange& c) { return failed(c.name); });
  return plan;
}

}  // namespace

ServiceSet::ServiceSet(Deps deps, const Config& config)
    : deps_(deps), schema_metrics_(std::make_unique<SchemaMetrics>(*deps.metrics->registry())) {
  MutexLock lock(&mu_);
  config_ = config;
  config_.services.clear();
}

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
  if (UsesSchemaRegistry(s)) {
    e->schema = MakeSchemaPublisher(s, e->publisher, schema_metrics_.get());
    o.publisher = e->schema;
  }
  ServiceMetrics& metrics = deps_.metrics->ForService(s.name);
  o.metrics = &metrics;
  // Its claim, settle and housekeeping loops register heartbeats here
  // (src/common/liveness.h states the rule they follow).
  o.liveness = deps_.liveness;
  deps_.wakeups->Wire(config, &o);  // wakeup: binlog services subscribe to their server's stream
  e->relay = std::make_shared<Relay>(std::move(o));
  return e;
}

Config ServiceSet::Running() const {
  MutexLock lock(&mu_);
  return config_;
}

std::vector<std::string> ServiceSet::Claiming() const {
  MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& e : entries_)
    if (!e->claims_stopped && !e->stopping) names.push_back(e->config.name);
  return names;
}

std::vector<StartFailure> ServiceSet::NewClusters(const Config& config,
                                                  const std::vector<std::string>& names) {
  Config missing = config;
  missing.services.clear();
  {
    MutexLock lock(&mu_);
    for (const auto& s : config.services) {
      if (Named(names, s.name) && std::none_of(clusters_.begin(), clusters_.end(),
                                               [&](const Cluster& c) { return Fits(c, s); }))
        missing.services.push_back(s);
    }
  }
  if (missing.services.empty()) return {};
  std::vector<Cluster> fresh;
  const std::vector<ClusterFailure> failed = CreateClusters(missing, &fresh);
  std::vector<StartFailure> out;
  for (const auto& s : missing.services)
    for (const auto& f : failed)
      if (f.config == s.kafka)
        out.push_back({s.name, "cannot create the Kafka producer for " + s.kafka.bootstrap_servers +
                                   ": " + f.error});
  MutexLock lock(&mu_);
  std::move(fresh.begin(), fresh.end(), std::back_inserter(clusters_));
  return out;
}

std::vector<ServiceSet::EntryPtr> ServiceSet::StopAndTake(const std::vector<std::string>& names) {
  std::vector<EntryPtr> going;
  {
    MutexLock lock(&mu_);
    for (auto& e : entries_) {
      if (!Named(names, e->config.name)) continue;
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

void ServiceSet::StartNew(const Config& config, const std::vector<std::string>& names,
                          const Gate& may_claim) {
  std::vector<EntryPtr> made;
  for (const auto& s : config.services)
    if (Named(names, s.name)) made.push_back(NewEntry(config, s));
  std::vector<EntryPtr> refused;
  {
    // Under mu_, as StopClaims: a revocation either sees the entry, or the
    // gate sees the revocation.
    MutexLock lock(&mu_);
    for (auto& e : made) {
      if (!may_claim(e->config)) {
        refused.push_back(e);
        continue;
      }
      e->relay->Start();
      entries_.push_back(e);
      config_.services.push_back(e->config);
    }
  }
  // Never started: its series go (its relay first), as a removed service's.
  for (auto& e : refused) {
    e->relay.reset();
    deps_.metrics->RemoveService(e->config.name);
  }
}

void ServiceSet::Forget(const ReloadPlan& plan, const std::vector<EntryPtr>& stopped) {
  for (const auto& e : stopped) e->relay.reset();  // before their metrics go
  for (const auto& e : stopped) {
    if (!Named(plan.removed, e->config.name)) {
      // A service that no longer has wakeup: binlog loses that series.
      if (e->config.wakeup == WakeupMode::kBinlog)
        deps_.metrics->ForService(e->config.name).Clear(ServiceStats::Gauge::kWakeupBinlogUp);
      continue;
    }
    deps_.metrics->RemoveService(e->config.name);
  }
  deps_.wakeups->Update(plan.config);
}

std::vector<StartFailure> ServiceSet::Apply(const ReloadPlan& wanted, const Gate& may_claim) {
  std::vector<std::string> starting = wanted.added;
  for (const auto& c : wanted.changed) starting.push_back(c.name);
  std::vector<StartFailure> failures = NewClusters(wanted.config, starting);
  const ReloadPlan plan = Without(wanted, failures);
  {
    MutexLock lock(&mu_);
    Config top = plan.config;
    top.services = config_.services;
    config_ = std::move(top);
  }
  // Added services first: they need not wait for the others' grace.
  StartNew(plan.config, plan.added, may_claim);
  std::vector<std::string> going = plan.removed;
  for (const auto& c : plan.changed) going.push_back(c.name);
  {
    MutexLock lock(&mu_);
    std::erase_if(config_.services, [&](const ServiceConfig& s) { return Named(going, s.name); });
  }
  Forget(plan, StopAndTake(going));
  std::vector<std::string> changed;
  for (const auto& c : plan.changed) changed.push_back(c.name);
  StartNew(plan.config, changed, may_claim);
  OrderAs(plan.config);
  PruneClusters();
  return failures;
}

void ServiceSet::OrderAs(const Config& file) {
  MutexLock lock(&mu_);
  std::vector<EntryPtr> ordered;
  std::vector<ServiceConfig> services;
  for (const auto& s : file.services) {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const EntryPtr& e) { return e->config.name == s.name; });
    if (it == entries_.end()) continue;
    ordered.push_back(*it);
    services.push_back((*it)->config);
  }
  entries_ = std::move(ordered);
  config_.services = std::move(services);
}

ServiceRunner::ClaimStops ServiceSet::StopClaims(const Gate& may_claim, Clock::TimePoint deadline) {
  ClaimStops out;
  std::vector<std::future<void>> stops;
  {
    MutexLock lock(&mu_);
    for (auto& e : entries_) {
      if (e->claims_stopped || may_claim(e->config)) continue;
      e->claims_stopped = true;
      out.services.push_back(e->config.name);
      // The relay, not the entry: Apply may drop the entry's relay while
      // this runs.
      stops.push_back(std::async(std::launch::async, [r = e->relay] { r->StopClaims(); }));
    }
  }
  for (auto& f : stops) {
    if (f.wait_until(deadline) == std::future_status::ready) continue;
    out.in_time = false;
    MutexLock lock(&mu_);
    claim_stops_.push_back(std::move(f));  // StopAll waits for it
  }
  return out;
}

void ServiceSet::JoinClaimStops() {
  std::vector<std::future<void>> stops;
  {
    MutexLock lock(&mu_);
    stops.swap(claim_stops_);
  }
  for (auto& f : stops) f.wait();
}

void ServiceSet::StopAll() {
  JoinClaimStops();
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
    config_.services.clear();
    clusters.swap(clusters_);
  }
  // The relays go first (outside mu_), then the producers, which flush.
  all.clear();
  clusters.clear();
}

std::string ServiceSet::ReadyLine(const Entry& e, bool* ready) {
  const Relay& r = *e.relay;
  std::string line = "service " + r.name() + ": ";
  const bool up = r.DatabaseReady();
  if (e.stopping || e.claims_stopped) return line + "stopping (finishing its in-flight events)\n";
  // Its rows wait while the registry does not answer, as for a broker.
  const std::string registry = e.schema ? e.schema->RegistryProblem() : std::string();
  if (e.config.paused) {
    // Paused for maintenance, perhaps of its database: never unready.
    line += up ? "paused" : "paused, database not ready: " + r.LastError();
  } else {
    *ready = *ready && up && registry.empty();
    line += !up                ? "not ready: " + r.LastError()
            : registry.empty() ? std::string("ok")
                               : "not ready: rows wait for the schema registry: " + registry;
  }
  // Never a reason to be unready: the relay polls while the stream is down.
  const std::string wakeup = r.WakeupStatus();
  if (!wakeup.empty()) line += " (" + wakeup + ")";
  return line + "\n";
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
  for (const auto& e : entries_) body += ReadyLine(*e, &ready);
  return {ready ? 200 : 503, "text/plain; charset=utf-8", body};
}

}  // namespace outbox
