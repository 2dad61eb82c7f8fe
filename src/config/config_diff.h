#pragma once

// What a reload changes (docs/CONFIG.md "Reload"): which services start,
// stop, restart or keep running, and which top-level keys changed that only
// a restart applies. Pure: no I/O, no threads; src/app/ acts on the plan.

#include <string>
#include <vector>

#include "config/config.h"

namespace outbox {

// A service in both configs whose settings differ: it restarts alone.
struct ServiceChange {
  std::string name;
  // The keys of its entry that differ ("mysql", "paused", ...), in the file's
  // documented order; for the log line.
  std::vector<std::string> keys;
};

struct ReloadPlan {
  // What to run: the new file's services, the keys that need a restart kept
  // at the running values (and each service's kafka merged again onto the
  // running top-level block).
  Config config;
  // Top-level keys that changed in the file but keep their running values
  // until a restart ("instance_id", "http.listen", "log.level",
  // "log.format", "kafka", "fleet").
  std::vector<std::string> restart_only;
  std::vector<std::string> added;      // in the new file only, in its order
  std::vector<std::string> removed;    // in the running config only, in its order
  std::vector<ServiceChange> changed;  // in both, different: restarted alone
  std::vector<std::string> unchanged;  // in both, equal: left running untouched
  // Set when the new file cannot run on the running top-level values (a
  // service whose bootstrap_servers came only from the changed top-level
  // kafka block); nothing else of the plan applies then.
  std::string error;
};

// The top-level kafka block `base` with a service's own block `own` on top:
// its bootstrap_servers if it names one, its properties over base's.
KafkaConfig MergeKafka(const KafkaConfig& base, const KafkaConfig& own);

// The keys of a services[] entry whose values differ between `a` and `b`.
std::vector<std::string> ChangedServiceKeys(const ServiceConfig& a, const ServiceConfig& b);

// Compares the running config with one just loaded and validated.
ReloadPlan PlanReload(const Config& running, const Config& loaded);

}  // namespace outbox
