#include "app/http_handler.h"

#include "http/healthz.h"

namespace outbox {

HttpServer::Handler MakeHttpHandler(Endpoints e) {
  return [e](const std::string& target) -> HttpResponse {
    if (target == "/metrics")
      return {200, "text/plain; version=0.0.4; charset=utf-8", e.metrics->Serialize()};
    if (target == "/healthz") return HealthzResponse(*e.liveness);
    if (target == "/readyz") return e.services->Readyz();
    return {404, "text/plain; charset=utf-8", "not found; try /metrics, /healthz, /readyz\n"};
  };
}

}  // namespace outbox
