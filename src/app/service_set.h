#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/clusters.h"
#include "common/liveness.h"
#include "common/mutex.h"
#include "config/config.h"
#include "config/config_diff.h"
#include "http/http_server.h"
#include "metrics/metrics.h"
#include "relay/relay.h"

namespace outbox {

class Wakeups;

// The services the daemon runs, one Relay each in the file's order, and the
// Kafka producers they share (one per distinct kafka config): built from the
// config at start, changed by a reload (Apply, docs/CONFIG.md "Reload"), read
// by /readyz and the daemon's once-a-second tick.
//
// Thread-safety: Init, StartAll, Apply and StopAll from one thread at a time
// (the daemon's main thread, then its reload thread; StopAll once that has
// ended). KafkaUp and Readyz from any thread: they read the set under mu_,
// which Apply holds only to swap entries in and out, never while a Relay
// stops or starts. Lifetime: `deps` must outlive the set.
class ServiceSet {
 public:
  struct Deps {
    Metrics* metrics = nullptr;
    LivenessRegistry* liveness = nullptr;
    Wakeups* wakeups = nullptr;
  };

  explicit ServiceSet(Deps deps);
  ~ServiceSet();  // StopAll
  ServiceSet(const ServiceSet&) = delete;
  ServiceSet& operator=(const ServiceSet&) = delete;

  // The producers and relays of `config`, not started. False (after an error
  // log line) when a producer cannot be created.
  bool Init(const Config& config);
  void StartAll();
  // Applies a reload: producers for new kafka configs first (one that cannot
  // be created fails the reload before anything changed: false); the added
  // services start; the removed and changed services stop together, each
  // finishing its in-flight events (Relay::Stop with the shutdown's grace),
  // the removed ones' metric series go, the binlog streams follow
  // (Wakeups::Update), and the changed services start again. Unchanged services' Relays are not
  // touched. REQUIRES: plan.error is empty.
  bool Apply(const ReloadPlan& plan);
  // Stops every service at once, each finishing its in-flight events, then
  // the producers (which flush).
  void StopAll();
  // The config running. REQUIRES: the controlling thread.
  const Config& config() const { return config_; }

  // True when every producer reaches its brokers (outbox_kafka_up).
  bool KafkaUp() const EXCLUDES(mu_);
  // /readyz: 200 when every broker and the database of every service that
  // runs unpaused are reachable; a line per broker and per service. A paused
  // service, or one a reload is stopping, is listed as such and never makes
  // it 503.
  HttpResponse Readyz() const EXCLUDES(mu_);

 private:
  struct Entry {
    ServiceConfig config;
    std::shared_ptr<KafkaPublisher> publisher;
    std::unique_ptr<Relay> relay;
    bool stopping = false;  // guarded by mu_: a reload stops it
  };
  using EntryPtr = std::shared_ptr<Entry>;

  EntryPtr NewEntry(const Config& config, const ServiceConfig& service) EXCLUDES(mu_);
  // Producers for the services of `config` that no producer fits, into *fresh.
  bool NewClusters(const Config& config, std::vector<Cluster>* fresh) const EXCLUDES(mu_);
  // Creates and starts the services of `config` named `names` and adds them
  // to the set.
  void StartNew(const Config& config, const std::vector<std::string>& names) EXCLUDES(mu_);
  // Takes the entries named `names` out of the set, stopped (in parallel).
  std::vector<EntryPtr> StopAndTake(const std::vector<std::string>& names) EXCLUDES(mu_);
  // Drops the producers no entry uses; they are destroyed (flushed) here,
  // outside mu_.
  void PruneClusters() EXCLUDES(mu_);

  const Deps deps_;
  Config config_;  // the controlling thread only

  mutable Mutex mu_;
  std::vector<EntryPtr> entries_ GUARDED_BY(mu_);
  std::vector<Cluster> clusters_ GUARDED_BY(mu_);
};

}  // namespace outbox
