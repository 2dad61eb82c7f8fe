#pragma once

// Probing a running relay from a test: its HTTP endpoints (the one HTTP
// client of the tests; the relay's own is src/http/http_client.h). Read
// /metrics with support/metrics_text.h, wait with support/wait.h.

#include <string>

namespace outbox::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (bound, then closed).
int FreeTcpPort();

struct HttpReply {
  int status = 0;  // 0: no answer (connection refused, timeout)
  std::string body;
};
// GET http://127.0.0.1:port/path with a short timeout.
HttpReply HttpGet(int port, const std::string& path, int timeout_ms = 2000);

// The port a relay logged that it serves HTTP on (the line "http: serving
// /metrics, /healthz, /readyz" with address 127.0.0.1:PORT, JSON or text),
// or 0 while `log` has no such line.
int ServingPort(const std::string& log);

}  // namespace outbox::testing
