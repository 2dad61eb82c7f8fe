#include "http/healthz.h"

namespace outbox {

HttpResponse HealthzResponse(const LivenessRegistry& liveness) {
  const std::vector<Stall> stalls = liveness.Stalled();
  if (stalls.empty()) return {200, "text/plain; charset=utf-8", "ok\n"};
  return {503, "text/plain; charset=utf-8", "stalled:\n" + DescribeStalls(stalls)};
}

}  // namespace outbox
