#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"

namespace outbox {

// The services that failed to start, when each is tried again, and whether
// a failure is news (a cause not reported before). A value; no I/O, no
// clock of its own: the caller passes `now`.
//
// Backoff: 1 s after the first failure, doubling to at most 30 s: a
// producer that cannot be made (a certificate not yet mounted, a typo
// fixed by the next reload) is tried again soon, and a lasting one costs
// one attempt in 30 s.
class StartRetries {
 public:
  static constexpr std::chrono::milliseconds kFirst{1000};
  static constexpr std::chrono::milliseconds kMax{30000};

  // Records a failure of `service`; true when `cause` differs from the one
  // last recorded for it (the caller logs and counts it then, once).
  bool Failed(const std::string& service, const std::string& cause, Clock::TimePoint now);
  // `service` runs (or is no longer wanted): its failures are forgotten.
  void Forget(const std::string& service);
  // Forgets every service not in `wanted`.
  void KeepOnly(const std::vector<std::string>& wanted);
  // False while `service` waits for its backoff.
  bool Due(const std::string& service, Clock::TimePoint now) const;
  // The earliest time a waiting service is due; none when none waits.
  std::optional<Clock::TimePoint> NextDue() const;
  // The failures in a row of `service` (0: none).
  int FailuresForTesting(const std::string& service) const;

 private:
  struct Entry {
    std::string cause;
    int failures = 0;
    Clock::TimePoint next;
  };
  std::map<std::string, Entry> book_;
};

}  // namespace outbox
