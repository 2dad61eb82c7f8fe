#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/liveness.h"

namespace outbox {

// Turns the registry's stalls, sampled periodically, into log lines: an error
// line when a loop becomes stalled, an info line when it makes progress
// again (the degraded path's log; /healthz and outbox_stalled_loops show the
// state). Not thread-safe: one caller (the daemon's once-a-second tick).
class StallWatch {
 public:
  struct Changes {
    std::vector<std::string> stalled;    // newly past their limit
    std::vector<std::string> recovered;  // beat again, or unregistered
  };

  // Logs and returns what changed since the previous call.
  Changes Update(const std::vector<Stall>& stalls);

 private:
  std::set<std::string> stalled_;
};

}  // namespace outbox
