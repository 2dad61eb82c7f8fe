#include <iostream>

#include "app/commands.h"
#include "http/http_client.h"

namespace outbox {

int RunHealth(const std::string& url, std::chrono::milliseconds timeout) {
  HttpUrl parsed;
  Status s = ParseHttpUrl(url, &parsed);
  if (!s.ok()) {
    std::cerr << s.message() << "\n";
    return kExitFailure;  // never 2: Docker reserves it in HEALTHCHECK
  }
  HttpGetResult result;
  s = HttpGet(parsed, timeout, &result);
  if (!s.ok()) {
    std::cout << url << ": unhealthy: " << s.message() << "\n";
    return kExitFailure;
  }
  std::cout << url << ": " << result.status << "\n" << result.body;
  if (!result.body.empty() && result.body.back() != '\n') std::cout << "\n";
  return result.status == 200 ? kExitOk : kExitFailure;
}

}  // namespace outbox
