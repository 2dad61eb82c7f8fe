#pragma once

#include <chrono>
#include <string>

#include "common/status.h"

namespace outbox {

struct HttpUrl {
  std::string host;  // without brackets for IPv6
  std::string port;
  std::string target;  // "/healthz"
};

// Parses "http://host:port/path" (http only; "[::1]" for IPv6; the port is
// required). Returns an error naming what is wrong.
Status ParseHttpUrl(const std::string& url, HttpUrl* out);

// The URL that reaches a server listening on `listen` (http.listen,
// "host:port"): a wildcard address (0.0.0.0, ::, empty) is probed on loopback.
std::string LocalUrlForListen(const std::string& listen, const std::string& path);

struct HttpGetResult {
  int status = 0;
  std::string body;
};

// GET `url` with `timeout` for the whole exchange (resolve, connect, request,
// response). An error when no HTTP response arrived; any status otherwise.
// Blocking; thread-compatible.
Status HttpGet(const HttpUrl& url, std::chrono::milliseconds timeout, HttpGetResult* out);

}  // namespace outbox
