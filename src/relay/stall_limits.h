#pragma once

#include <chrono>

#include "config/config.h"

namespace outbox {

// How long each of a service's loops may go without progress before /healthz
// calls it stalled (docs/RUNBOOK.md, "Liveness"): the loop's longest wait
// plus its longest statement (a transaction of up to 4 round trips, 6 for a
// settle, each bounded by mysql.read_timeout_ms, after a reconnect bounded by
// mysql.connect_timeout_ms), plus 10 s. The units beat after every statement,
// so a limit need cover one statement, not a whole iteration.
struct StallLimits {
  std::chrono::milliseconds claim, settle, housekeeping;
};
StallLimits StallLimitsFor(const ServiceConfig& config);

}  // namespace outbox
