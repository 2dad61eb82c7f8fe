#pragma once

#include <string>
#include <thread>

#include "app/service_set.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "metrics/metrics.h"

namespace outbox {

// Reloads the config file when asked (SIGHUP; docs/CONFIG.md "Reload") on a
// thread of its own, so that HTTP, the tick and the systemd watchdog go on
// while services stop and start. A reload reads and validates the file
// again; a file that fails changes nothing (logged with file:line:column,
// outbox_config_reloads_total{result="failure"}); a good one is applied to
// the ServiceSet (outbox_config_reloads_total{result="success"},
// outbox_config_last_reload_success_timestamp_seconds), keys that need a
// restart reported and kept.
//
// Thread-safety: Request from any thread; Stop from the owner. Lifetime:
// `services` and `metrics` must outlive it; the ServiceSet is driven only by
// this thread between construction and Stop.
class Reloader {
 public:
  Reloader(std::string path, ServiceSet* services, Metrics* metrics);
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
  // One reload; true when it applied.
  bool ReloadOnce();

  const std::string path_;
  ServiceSet* const services_;
  Metrics* const metrics_;

  Mutex mu_;
  CondVar cv_{&mu_};
  bool pending_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace outbox
