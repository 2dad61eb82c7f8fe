#pragma once

#include <string>
#include <thread>

#include "common/clock.h"
#include "common/mutex.h"
#include "config/config.h"
#include "fleet/fleet.h"
#include "fleet/reconciler.h"
#include "metrics/metrics.h"

namespace outbox {

// Reloads the config file when asked (SIGHUP; docs/CONFIG.md "Reload"), on
// a thread of its own, and hands a file that loaded to the Reconciler, which
// makes what runs follow it together with the fleet's shards: a reload is
// one of its two inputs, never a gate on the other.
//
// A reload reads and validates the file again; a file that fails changes
// nothing (logged with file:line:column,
// outbox_config_reloads_total{result="failure"}): the reconciler keeps the
// file it has and goes on following the shards. A good one is handed on and
// counted once the reconciler has followed it
// (outbox_config_reloads_total{result="success"},
// outbox_config_last_reload_success_timestamp_seconds); keys that need a
// restart are reported and kept.
//
// Thread-safety: Request from any thread; Stop from the owner. Lifetime:
// the reconciler, the fleet and the metrics must outlive it.
class Reloader {
 public:
  // `file` is the config loaded at start.
  Reloader(const Config& file, Reconciler* reconciler, Fleet* fleet, Metrics* metrics);
  ~Reloader();  // Stop
  Reloader(const Reloader&) = delete;
  Reloader& operator=(const Reloader&) = delete;

  // A reload as soon as the one running (if any) is over; requests made
  // meanwhile merge into that one.
  void Request() EXCLUDES(mu_);
  // Lets a reload in progress finish, then ends the thread.
  void Stop() EXCLUDES(mu_);

 private:
  void Run() EXCLUDES(mu_);
  // One reload; true when the file loaded (and was followed).
  bool ReloadOnce();

  const std::string path_;
  Reconciler* const reconciler_;
  Fleet* const fleet_;
  Metrics* const metrics_;
  Config file_;  // this thread only: the file as last loaded (restart-only keys kept)

  Mutex mu_;
  CondVar cv_{&mu_};
  bool pending_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace outbox
