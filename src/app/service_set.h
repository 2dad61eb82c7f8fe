#pragma once

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "app/clusters.h"
#include "common/liveness.h"
#include "common/mutex.h"
#include "config/config.h"
#include "config/config_diff.h"
#include "fleet/service_runner.h"
#include "http/http_server.h"
#include "metrics/metrics.h"
#include "metrics/schema_metrics.h"
#include "relay/relay.h"
#include "schema/schema_publisher.h"

namespace outbox {

class WakeupSources;

// The services the daemon runs, one Relay each in the file's order, and the
// Kafka producers they share (one per distinct kafka config): what the
// Reconciler (src/fleet/reconciler.h) starts and stops, read by /readyz and
// the daemon's once-a-second tick.
//
// Thread-safety: Apply from the reconciler's thread; StopAll once that has
// ended; StopClaims, Running, KafkaUp and Readyz from any thread: they read
// the set under mu_, which Apply holds only to swap entries in and out and
// to start a claim loop, never while a Relay stops. Lifetime: `deps` must
// outlive the set.
class ServiceSet final : public ServiceRunner {
 public:
  struct Deps {
    Metrics* metrics = nullptr;
    LivenessRegistry* liveness = nullptr;
    WakeupSources* wakeups = nullptr;
  };

  // Runs nothing yet; `config`'s top-level keys are the running ones.
  ServiceSet(Deps deps, const Config& config);
  ~ServiceSet() override;  // StopAll
  ServiceSet(const ServiceSet&) = delete;
  ServiceSet& operator=(const ServiceSet&) = delete;

  Config Running() const override EXCLUDES(mu_);
  std::vector<std::string> Claiming() const override EXCLUDES(mu_);
  // Producers for the services to start first (a service whose producer
  // cannot be made is left as it was and returned); the added services
  // start; the removed and changed services stop together, each finishing
  // its in-flight events (Relay::Stop with the shutdown's grace), the
  // removed ones' metric series go, the binlog streams follow
  // (WakeupSources::Update), and the changed services start again. A service
  // starts claiming only if `may_claim` says so at that moment. Unchanged
  // services' Relays are not touched.
  std::vector<StartFailure> Apply(const ReloadPlan& plan, const Gate& may_claim) override
      EXCLUDES(mu_);
  ClaimStops StopClaims(const Gate& may_claim, Clock::TimePoint deadline) override EXCLUDES(mu_);
  // Stops every service at once, each finishing its in-flight events, then
  // the producers (which flush).
  void StopAll() EXCLUDES(mu_);

  // True when every producer reaches its brokers (outbox_kafka_up).
  bool KafkaUp() const EXCLUDES(mu_);
  // /readyz: 200 when every broker and the database of every service that
  // runs unpaused are reachable; a line per broker and per service. A paused
  // service, or one being stopped, is listed as such and never makes it 503.
  HttpResponse Readyz() const EXCLUDES(mu_);

 private:
  struct Entry {
    ServiceConfig config;
    std::shared_ptr<KafkaPublisher> publisher;
    // In front of the producer when a value format needs the Schema
    // Registry (docs/FORMATS.md); null otherwise.
    std::shared_ptr<SchemaPublisher> schema;
    // Shared with a claim stop in flight (StopClaims), which may outlive
    // the entry's removal.
    std::shared_ptr<Relay> relay;
    bool claims_stopped = false;  // guarded by mu_: StopClaims stopped them
    bool stopping = false;        // guarded by mu_: Apply or StopAll stops it
  };
  using EntryPtr = std::shared_ptr<Entry>;

  EntryPtr NewEntry(const Config& config, const ServiceConfig& service) EXCLUDES(mu_);
  // Producers for the services of `config` named `names` that no producer
  // fits; the services whose producer cannot be made.
  std::vector<StartFailure> NewClusters(const Config& config, const std::vector<std::string>& names)
      EXCLUDES(mu_);
  // Creates the services of `config` named `names` and adds them to the
  // set, each started if `may_claim` lets it.
  void StartNew(const Config& config, const std::vector<std::string>& names, const Gate& may_claim)
      EXCLUDES(mu_);
  // Takes the entries named `names` out of the set, stopped (in parallel).
  std::vector<EntryPtr> StopAndTake(const std::vector<std::string>& names) EXCLUDES(mu_);
  // After a stop: the removed services' series, the binlog streams.
  void Forget(const ReloadPlan& plan, const std::vector<EntryPtr>& stopped);
  // The entries in `file`'s order, for /readyz.
  void OrderAs(const Config& file) EXCLUDES(mu_);
  // Drops the producers no entry uses; they are destroyed (flushed) here,
  // outside mu_.
  void PruneClusters() EXCLUDES(mu_);
  // The service's line of /readyz; clears *ready when it makes the relay unready.
  static std::string ReadyLine(const Entry& e, bool* ready);
  // Waits for the claim stops StopClaims left running past their deadline.
  void JoinClaimStops() EXCLUDES(mu_);

  const Deps deps_;
  const std::unique_ptr<SchemaMetrics> schema_metrics_;

  mutable Mutex mu_;
  Config config_ GUARDED_BY(mu_);  // top-level keys, and the services in entries_
  std::vector<EntryPtr> entries_ GUARDED_BY(mu_);
  std::vector<Cluster> clusters_ GUARDED_BY(mu_);
  std::vector<std::future<void>> claim_stops_ GUARDED_BY(mu_);
};

}  // namespace outbox
