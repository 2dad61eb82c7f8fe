#pragma once

#include <memory>
#include <vector>

#include "app/clusters.h"
#include "common/liveness.h"
#include "http/http_server.h"
#include "metrics/metrics.h"
#include "relay/relay.h"

namespace outbox {

// What the daemon's endpoints read. Everything must outlive the handler.
struct Endpoints {
  Metrics* metrics = nullptr;
  const std::vector<Cluster>* clusters = nullptr;
  const std::vector<std::unique_ptr<Relay>>* relays = nullptr;
  const LivenessRegistry* liveness = nullptr;
};

// /metrics, /healthz (liveness: src/http/healthz.h), /readyz (every database
// and broker reachable), 404 otherwise.
HttpServer::Handler MakeHttpHandler(Endpoints endpoints);

}  // namespace outbox
