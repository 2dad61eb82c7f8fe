#include "relay/stall_limits.h"

#include <algorithm>

#include "relay/claim_scheduler.h"  // kMaxFailureBackoff, kSafetyPoll
#include "relay/settle_timing.h"    // SettleScheduler::kMaxBackoff

namespace outbox {

StallLimits StallLimitsFor(const ServiceConfig& c) {
  using std::chrono::milliseconds;
  const auto statement = [&c](int round_trips) {
    return milliseconds(c.mysql.connect_timeout_ms) +
           round_trips * milliseconds(c.mysql.read_timeout_ms);
  };
  constexpr milliseconds kMargin(10000);
  milliseconds claim_wait =
      std::max({milliseconds(c.poll_interval_ms), kMaxFailureBackoff, milliseconds(1000)});
  if (c.wakeup == WakeupMode::kBinlog) claim_wait = std::max<milliseconds>(claim_wait, kSafetyPoll);
  const milliseconds house_wait =
      std::max(milliseconds(c.gauge_interval_ms), milliseconds(c.retention.pause_ms));
  return {claim_wait + statement(4) + kMargin,
          SettleScheduler::kMaxBackoff + statement(6) + kMargin,
          house_wait + statement(4) + kMargin};
}

}  // namespace outbox
