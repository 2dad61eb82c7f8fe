#pragma once

#include <memory>
#include <vector>

#include "app/service_set.h"
#include "common/liveness.h"
#include "http/http_server.h"
#include "metrics/metrics.h"
#include "relay/relay.h"

namespace outbox {

// What the daemon's endpoints read. Everything must outlive the handler.
struct Endpoints {
  Metrics* metrics = nullptr;
  const ServiceSet* services = nullptr;  // the running services, changed by reloads
  const LivenessRegistry* liveness = nullptr;
};

// /metrics, /healthz (liveness: src/http/healthz.h), /readyz (every database
// and broker reachable: ServiceSet::Readyz), 404 otherwise.
HttpServer::Handler MakeHttpHandler(Endpoints endpoints);

}  // namespace outbox
