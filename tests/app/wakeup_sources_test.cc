// src/app/wakeup_sources.cc: each server's binlog stream is a liveness loop, registered
// once per server and fed by the stream's own thread.
#include "app/wakeup_sources.h"

#include <catch2/catch.hpp>
#include <memory>
#include <thread>

#include "common/liveness.h"
#include "fakes/fake_clock.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

// A `wakeup: binlog` service on 127.0.0.1:`port`: nothing listens there, so
// the stream fails to connect and backs off, which must still count as
// progress (an unreachable server is not a hung thread).
ServiceConfig BinlogService(const std::string& name, int port) {
  ServiceConfig s;
  s.name = name;
  s.mysql.host = "127.0.0.1";
  s.mysql.port = port;
  s.mysql.user = "relay";
  s.mysql.database = name;
  s.mysql.connect_timeout_ms = 1000;
  s.wakeup = WakeupMode::kBinlog;
  return s;
}

// Every service's RelayOptions, wired as RunDaemon wires them.
std::vector<RelayOptions> WireAll(const Config& config, WakeupSources* wakeups,
                                  LivenessRegistry* liveness) {
  std::vector<RelayOptions> options(config.services.size());
  for (size_t i = 0; i < options.size(); ++i) {
    options[i].config = config.services[i];
    options[i].liveness = liveness;
    wakeups->Wire(config, &options[i]);
  }
  return options;
}

// `services` with their wake-ups wired (WireAll), the streams' loops in a
// registry on a fake clock.
struct WiredRig {
  explicit WiredRig(std::vector<ServiceConfig> services) {
    config.instance_id = "test";
    config.services = std::move(services);
    options = WireAll(config, &wakeups, &liveness);
  }

  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  LivenessRegistry liveness{clock};
  Config config;
  WakeupSources wakeups;
  std::vector<RelayOptions> options;
};

}  // namespace

TEST_CASE("each database server's binlog stream is one liveness loop beaten by the stream",
          "[wakeups]") {
  std::vector<ServiceConfig> services = {BinlogService("a", 1), BinlogService("b", 1),
                                         BinlogService("c", 9), BinlogService("polls", 1)};
  services.back().wakeup = WakeupMode::kPoll;
  WiredRig rig(services);
  // Two servers have binlog services: two loops, whatever the service count.
  CHECK(rig.liveness.Names() ==
        std::vector<std::string>{"binlog/127.0.0.1:1", "binlog/127.0.0.1:9"});
  CHECK(rig.options[3].wakeup == nullptr);  // the polling service keeps a PollWakeupSource
  // Past the stall limit with no beat, both are stalled...
  rig.clock->Advance(5min);
  REQUIRE(rig.liveness.Stalled().size() == 2);
  // ...until the streams' threads beat (each backoff step calls on_progress).
  CHECK(WaitFor([&] { return rig.liveness.Stalled().empty(); }, 10s));
}

TEST_CASE("services whose hosts differ only in case share one stream and one liveness loop",
          "[wakeups]") {
  std::vector<ServiceConfig> services = {BinlogService("a", 1), BinlogService("b", 1)};
  services[0].mysql.host = "LOCALHOST";
  services[1].mysql.host = "localhost";
  WiredRig rig(services);
  // The hub shares the stream, so a second loop would never be beaten.
  CHECK(rig.liveness.Names() == std::vector<std::string>{"binlog/localhost:1"});
  rig.clock->Advance(5min);
  CHECK(WaitFor([&] { return rig.liveness.Stalled().empty(); }, 10s));
}
