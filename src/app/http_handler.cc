#include "app/http_handler.h"

#include "http/healthz.h"

namespace outbox {

namespace {

HttpResponse Readyz(const Endpoints& e) {
  bool ready = true;
  std::string body;
  for (const auto& c : *e.clusters) {
    bool up = c.publisher->Healthy();
    ready = ready && up;
    body += "kafka " + c.config.bootstrap_servers + ": ";
    if (up) {
      body += "ok\n";
      continue;
    }
    // librdkafka's reason (SASL, TLS, a refused connection), as check says it.
    const KafkaProblem p = c.publisher->Problem();
    body += p.ok() ? "unreachable\n" : "unreachable: " + p.Describe() + "\n";
  }
  for (const auto& r : *e.relays) {
    bool up = r->DatabaseReady();
    ready = ready && up;
    body += "service " + r->name() + ": " + (up ? "ok" : "not ready: " + r->LastError());
    // Never a reason to be unready: the relay polls while the stream is down.
    const std::string wakeup = r->WakeupStatus();
    if (!wakeup.empty()) body += " (" + wakeup + ")";
    body += "\n";
  }
  return {ready ? 200 : 503, "text/plain; charset=utf-8", body};
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
