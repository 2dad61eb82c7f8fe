// The log of a relay going through failures, read as an operator's log
// pipeline would: every JSON line that concerns a service says which.

#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/http_probe.h"
#include "support/process.h"
#include "support/test_broker.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

std::vector<nlohmann::json> JsonLines(const std::string& err) {
  std::vector<nlohmann::json> out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    INFO(line);
    auto j = nlohmann::json::parse(line, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    out.push_back(std::move(j));
  }
  return out;
}

// The service a line is about, judged from its content alone (not from the
// code that wrote it): a field that only a service's line has, or any text
// naming one of the services, their databases or tables. "" when none.
std::string ConcernedService(const nlohmann::json& j) {
  static const std::vector<std::pair<std::string, std::string>> kMarks = {
      {"svc-alpha", "svc-alpha"},
      {"db_alpha", "svc-alpha"},
      {"svc-beta", "svc-beta"},
      {"db_beta", "svc-beta"}};
  // A summary of several services lists them ("services", "started",
  // "stopped"): not a line about one of them.
  static const std::vector<std::string> kLists = {"services", "started", "stopped"};
  for (const auto& [key, value] : j.items()) {
    if (key == "service" || !value.is_string()) continue;
    if (std::find(kLists.begin(), kLists.end(), key) != kLists.end()) continue;
    const std::string text = value.get<std::string>();
    for (const auto& [mark, service] : kMarks)
      if (text.find(mark) != std::string::npos) return service;
  }
  for (const char* key : {"outbox_id", "first_id", "aggregate_id", "call", "table"})
    if (j.contains(key)) return "?";  // some service's: must say which
  return "";
}

}  // namespace

TEST_CASE("every log line of a relay whose database and then broker fail names its service",
          "[logs][process]") {
  TestBroker broker;
  TempDir dir;
  std::string config =
      "instance_id: logs\nhttp: {listen: 127.0.0.1:0}\n"
      "log: {level: debug, format: json}\n"
      "kafka: {bootstrap_servers: \"" +
      broker.bootstrap() + "\"}\nservices:\n";
  for (const char* s : {"alpha", "beta"})
    config += std::string("  - name: svc-") + s + "\n    retention: {sent_days: 7}\n" +
              "    mysql: {host: 127.0.0.1, port: 1, user: u, database: db_" + s +
              ", connect_timeout_ms: 1000}\n";
  const std::string file = dir.Write("c.yaml", config);
  ChildProcess relay({OUTBOX_BINARY, "run", "-c", file}, ChildEnv());
  int port = 0;
  REQUIRE(WaitFor([&] { return (port = ServingPort(relay.err())) > 0; }, 30s));
  // The database is down from the start: both services report it.
  REQUIRE(WaitFor(
      [&] {
        const std::string err = relay.err();
        return err.find("\"service\":\"svc-alpha\",\"call\"") != std::string::npos &&
               err.find("\"service\":\"svc-beta\",\"call\"") != std::string::npos &&
               err.find("kafka: broker reachable") != std::string::npos;
      },
      30s));
  // Then the broker goes.
  broker.SetAllBrokersDown(true);
  CHECK(WaitFor(
      [&] { return HttpGet(port, "/readyz").body.find("unreachable") != std::string::npos; }, 30s,
      200ms));
  relay.Signal(SIGTERM);
  CHECK(relay.Wait(60s) == 0);

  const std::vector<nlohmann::json> lines = JsonLines(relay.err());
  int about_services = 0;
  bool relaying_alpha = false;
  for (const auto& j : lines) {
    INFO(j.dump());
    const std::string concerned = ConcernedService(j);
    if (concerned.empty()) continue;
    ++about_services;
    REQUIRE(j.contains("service"));
    if (concerned != "?") CHECK(j.at("service") == concerned);
    if (j.at("msg") == "relaying" && j.at("service") == "svc-alpha") relaying_alpha = true;
  }
  // The startup line of each service, the database failures, the stop.
  CHECK(relaying_alpha);
  CHECK(about_services >= 4);
}
