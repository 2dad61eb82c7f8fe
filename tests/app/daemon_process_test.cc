// The daemon as systemd runs it: the notify protocol and the health
// subcommand against the real binary, with nothing reachable.

#include <signal.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/http_probe.h"
#include "support/metrics_text.h"
#include "support/notify_socket.h"
#include "support/process.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

TEST_CASE(
    "under systemd the daemon sends READY then WATCHDOG while healthy and STOPPING on "
    "SIGTERM",
    "[systemd][process]") {
  TempDir dir;
  const std::string config = dir.Write(
      "c.yaml",
      "instance_id: notify-test\nhttp: {listen: 127.0.0.1:0}\nlog: {level: info, format: json}\n"
      "kafka: {bootstrap_servers: 127.0.0.1:1}\nservices:\n  - name: order\n    mysql: {host: "
      "127.0.0.1, port: 1, user: u, database: d}\n");
  NotifySocket socket(dir.path() + "/notify");
  ChildProcess relay({OUTBOX_BINARY, "run", "-c", config},
                     ChildEnv({"NOTIFY_SOCKET=" + socket.path(), "WATCHDOG_USEC=200000"}));
  const std::string ready = socket.Receive(30s);
  INFO(relay.err());
  REQUIRE(ready.rfind("READY=1", 0) == 0);
  // READY=1 comes once HTTP serves: the port is logged before it.
  const int port = ServingPort(relay.err());
  REQUIRE(port > 0);
  for (int i = 0; i < 3; ++i) CHECK(socket.Receive(5s) == "WATCHDOG=1");

  // A database and a broker that are down do not make the relay unhealthy.
  ProcessResult health = RunProcess(
      {OUTBOX_BINARY, "health", "--url", "http://127.0.0.1:" + std::to_string(port) + "/healthz"},
      ChildEnv());
  CHECK(health.exit_code == 0);
  HttpReply metrics = HttpGet(port, "/metrics", 5000);
  REQUIRE(metrics.status == 200);
  CHECK(MetricValue(metrics.body, "outbox_stalled_loops") == 0);

  relay.Signal(SIGTERM);
  std::string msg;
  while (!(msg = socket.Receive(30s)).empty() && msg == "WATCHDOG=1") {
  }
  CHECK(msg.rfind("STOPPING=1", 0) == 0);
  CHECK(relay.Wait(60s) == 0);

  // Every stderr line is one JSON object with the fixed keys.
  const std::string err = relay.err();
  size_t start = 0, lines = 0;
  while (start < err.size()) {
    const size_t end = err.find('\n', start);
    const std::string line = err.substr(start, end - start);
    INFO(line);
    nlohmann::json j;
    REQUIRE_NOTHROW(j = nlohmann::json::parse(line));
    CHECK(j.at("instance") == "notify-test");
    CHECK(j.contains("ts"));
    CHECK(j.contains("level"));
    CHECK(j.contains("msg"));
    ++lines;
    start = end + 1;
  }
  CHECK(lines >= 3);
}
