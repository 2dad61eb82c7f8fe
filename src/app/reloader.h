#pragma once

#include <string>
#include <thread>

#include "app/fleet.h"
#include "app/service_set.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "metrics/metrics.h"

namespace outbox {

// The one thread that drives the ServiceSet after start: it reloads the
// config file when asked (SIGHUP; docs/CONFIG.md "Reload") and makes the
// running services follow the fleet's assignment (docs/DEPLOY.md "A
// fleet"), so that reloads, assignments and `paused` compose: what runs is
// always the file's services that this relay owns, as the file says them.
// HTTP, the tick and the systemd watchdog go on meanwhile.
//
// A reload reads and validates the file again; a file that fails changes
// nothing (logged with file:line:column,
// outbox_config_reloads_total{result="failure"}); a good one is applied
// (outbox_config_reloads_total{result="success"},
// outbox_config_last_reload_success_timestamp_seconds), keys that need a
// restart reported and kept.
//
// Thread-safety: Request and RequestAssignment from any thread; Stop from
// the owner. Lifetime: `services`, `fleet` and `metrics` must outlive it;
// the ServiceSet is driven only by this thread between construction and
// Stop.
class Reloader {
 public:
  // `file` is the config loaded at start (the ServiceSet runs the part of it
  // the fleet owns).
  Reloader(const Config& file, ServiceSet* services, Fleet* fleet, Metrics* metrics);
  ~Reloader();  // Stop
  Reloader(const Reloader&) = delete;
  Reloader& operator=(const Reloader&) = delete;

  // A reload as soon as the one running (if any) is over; requests made
  // meanwhile merge into that one.
  void Request() EXCLUDES(mu_);
  // The fleet's assignment changed: the services follow Fleet::Current()
  // as soon as this thread is free; changes meanwhile merge.
  void RequestAssignment() EXCLUDES(mu_);
  // Lets a reload in progress finish, then ends the thread.
  void Stop() EXCLUDES(mu_);

 private:
  void Run() EXCLUDES(mu_);
  // One reload; true when it applied.
  bool ReloadOnce();
  // Starts and stops services so that the set runs what the fleet owns of
  // file_; `restart_only` are the file's keys a reload kept (for the log).
  // False when a producer cannot be created.
  bool Follow(const std::vector<std::string>& restart_only);

  const std::string path_;
  ServiceSet* const services_;
  Fleet* const fleet_;
  Metrics* const metrics_;
  Config file_;  // this thread only: the file as last loaded (restart-only keys kept)

  Mutex mu_;
  CondVar cv_{&mu_};
  bool pending_ GUARDED_BY(mu_) = false;
  bool assignment_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace outbox
