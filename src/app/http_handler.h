#pragma once

#include <memory>
#include <vector>

#include "app/service_set.h"
#include "common/liveness.h"
#include "fleet/fleet.h"
#include "http/http_server.h"
#include "metrics/metrics.h"
#include "relay/relay.h"

namespace outbox {

// What the daemon's endpoints read. Everything must outlive the handler.
struct Endpoints {
  Metrics* metrics = nullptr;
  const ServiceSet* services = nullptr;  // the running services, changed by reloads
  const LivenessRegistry* liveness = nullptr;
  const Fleet* fleet = nullptr;  // the fleet's line of /readyz; null: none
};

// /metrics, /healthz (liveness: src/http/healthz.h), /readyz (a member of
// its fleet, if any: Fleet::Readyz; every database and broker of what it
// runs reachable: ServiceSet::Readyz), 404 otherwise.
HttpServer::Handler MakeHttpHandler(Endpoints endpoints);

}  // namespace outbox
