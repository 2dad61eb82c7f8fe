#pragma once

// Probing a running relay from a test: its HTTP endpoints and metrics.

#include <chrono>
#include <functional>
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

// The value of the first sample of `metric` whose text starts with `prefix`
// (e.g. `outbox_database_up{service="orders"}`); NaN when absent.
double MetricValue(const std::string& exposition, const std::string& sample_prefix);

// Polls `cond` every 50 ms until it holds or `deadline` passes.
bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds deadline);

}  // namespace outbox::testing
