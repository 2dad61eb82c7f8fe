#include "relay/stall_limits.h"

#include <algorithm>

namespace outbox {

StallLimits StallLimitsFor(const ServiceConfig& c) {
  using std::chrono::milliseconds;
  const auto statement = [&c](int round_trips) {
    return milliseconds(c.mysql.connect_timeout_ms) +
           round_trips * milliseconds(c.mysql.read_timeout_ms);
  };
  constexpr milliseconds kMargin(10000);
  constexpr milliseconds kBackoffCap(5000);  // the loops' failure backoff (claim_scheduler.cc)
  milliseconds claim_wait =
      std::max({milliseconds(c.poll_interval_ms), kBackoffCap, milliseconds(1000)});
  if (c.wakeup == Wakeup::kBinlog) claim_wait = std::max(claim_wait, milliseconds(30000));
  const milliseconds house_wait =
      std::max(milliseconds(c.gauge_interval_ms), milliseconds(c.retention.pause_ms));
  return {claim_wait + statement(4) + kMargin, kBackoffCap + statement(6) + kMargin,
          house_wait + statement(4) + kMargin};
}

}  // namespace outbox
