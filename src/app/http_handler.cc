#include "app/http_handler.h"

#include "http/healthz.h"

namespace outbox {

namespace {

HttpResponse Readyz(const Endpoints& e) {
  HttpResponse r = e.services->Readyz();
  if (e.fleet == nullptr) return r;
  std::string head;
  if (!e.fleet->Readyz(&head)) r.status = 503;
  r.body = head + r.body;
  return r;
}

}  // namespace

HttpServer::Handler MakeHttpHandler(Endpoints e) {
  return [e](const std::string& target) -> HttpResponse {
    if (target == "/metrics")
      return {200, "text/plain; version=0.0.4; charset=utf-8", e.metrics->Serialize()};
    if (target == "/healthz") return HealthzResponse(*e.liveness);
    if (target == "/readyz") return Readyz(e);
    return {404, "text/plain; charset=utf-8", "not found; try /metrics, /healthz, /readyz\n"};
  };
}

}  // namespace outbox
