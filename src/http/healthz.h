#pragma once

#include "common/liveness.h"
#include "http/http_server.h"

namespace outbox {

// GET /healthz, the liveness probe: 200 "ok" while every registered loop
// makes progress; 503 naming each loop past its stall limit (a hung call, a
// deadlock). It never looks at the database or the broker: an outage makes
// /readyz fail, and restarting the relay would not fix it.
HttpResponse HealthzResponse(const LivenessRegistry& liveness);

}  // namespace outbox
