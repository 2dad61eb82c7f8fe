// The relay's loops and /healthz (src/relay/relay.h StallLimitsFor,
// src/common/liveness.h): a loop stuck in a store call is named, an outage
// is not a stall, a stopped relay is not a stalled one, nor a paused one.
// Real threads, a fake table and a fake clock that the test moves.
#include <catch2/catch.hpp>
#include <map>
#include <thread>

#include "http/healthz.h"
#include "relay/relay_rig.h"
#include "support/wait.h"

namespace outbox {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;
using testing::FakePublisher;
using testing::FakeTable;
using testing::Latch;
using testing::WaitFor;

// Its idle poll (the head read, or the probe while claiming is paused) never
// returns until the latch opens: a hung call.
struct HangingStore : testing::OutboxStoreWrapper {
  HangingStore(std::shared_ptr<OutboxStore> target, Latch* latch)
      : OutboxStoreWrapper(std::move(target)), latch_(latch) {}
  Status HasDue(bool include_expired, bool* due) override {
    latch_->Wait();
    return OutboxStoreWrapper::HasDue(include_expired, due);
  }
  Status ReadHead(const HeadQuery& q, HeadRead* out) override {
    latch_->Wait();
    return OutboxStoreWrapper::ReadHead(q, out);
  }
  Latch* latch_;
};

struct LiveRig {
  // `wrap` makes the stores over the rig's table (default: plain fakes).
  using WrapFn = std::function<StoreFactory(std::shared_ptr<FakeTable>)>;
  explicit LiveRig(const WrapFn& wrap = nullptr)
      : clock(std::make_shared<FakeClock>()),
        table(std::make_shared<FakeTable>(clock)),
        liveness(clock) {
    config.name = "orders";
    config.poll_interval_ms = 100;
    RelayOptions o =
        testing::FakeRelayOptions(config, wrap ? wrap(table) : testing::FakeStoreFactory(table),
                                  std::make_shared<FakePublisher>(), clock, &metrics);
    o.liveness = &liveness;
    relay = std::make_unique<Relay>(std::move(o));
  }

  std::vector<std::string> StalledNames() {
    std::vector<std::string> names;
    for (const auto& s : liveness.Stalled()) names.push_back(s.name);
    return names;
  }

  // Moves the fake clock `total` forward in steps, giving the loops real time
  // to wake and beat after each step; returns whether `ok` held after every
  // step.
  bool AdvanceChecking(std::chrono::milliseconds total, std::chrono::milliseconds step,
                       const std::function<bool()>& ok) {
    for (auto t = 0ms; t < total; t += step) {
      clock->Advance(step);
      std::this_thread::sleep_for(5ms);
      if (!ok()) return false;
    }
    return true;
  }

  ServiceConfig config;
  std::shared_ptr<FakeClock> clock;
  std::shared_ptr<FakeTable> table;
  LivenessRegistry liveness;
  testing::FakeStats metrics;
  std::unique_ptr<Relay> relay;
};

TEST_CASE("stall limits cover the longest wait and one statement with its timeouts",
          "[relay][liveness]") {
  ServiceConfig c;
  c.poll_interval_ms = 100;
  c.mysql.connect_timeout_ms = 5000;
  c.mysql.read_timeout_ms = 30000;
  StallLimits l = StallLimitsFor(c);
  CHECK(l.claim == 5s + 5s + 4 * 30s + 10s);
  CHECK(l.settle == 5s + 5s + 6 * 30s + 10s);
  CHECK(l.housekeeping == std::chrono::milliseconds(c.gauge_interval_ms) + 5s + 4 * 30s + 10s);
  c.wakeup = WakeupMode::kBinlog;  // waits up to the 30 s safety poll
  CHECK(StallLimitsFor(c).claim == 30s + 5s + 4 * 30s + 10s);
}

TEST_CASE("a service whose store call hangs turns /healthz 503 naming its loop",
          "[relay][liveness]") {
  Latch latch;
  LiveRig rig([&latch](std::shared_ptr<FakeTable> table) -> StoreFactory {
    return [table, &latch] {
      return std::make_unique<HangingStore>(std::make_unique<testing::FakeStore>(table), &latch);
    };
  });
  rig.relay->Start();
  REQUIRE(WaitFor([&] { return latch.Waiting() > 0; }, 10s, 2ms));  // the claim loop is stuck
  CHECK(HealthzResponse(rig.liveness).status == 200);

  const auto limit = StallLimitsFor(rig.config).claim;
  rig.AdvanceChecking(limit + 1s, 1s, [] { return true; });
  REQUIRE(WaitFor([&] { return rig.StalledNames() == std::vector<std::string>{"orders/claim"}; },
                  10s, 2ms));
  HttpResponse r = HealthzResponse(rig.liveness);
  CHECK(r.status == 503);
  CHECK(r.body.find("orders/claim") != std::string::npos);
  CHECK(r.body.find("orders/settle") == std::string::npos);

  latch.Open();  // the call returns: the loop beats again
  REQUIRE(WaitFor([&] { return rig.StalledNames().empty(); }, 10s, 2ms));
  rig.relay->Stop(0ms);
}

TEST_CASE("a database that is down is not a stalled loop", "[relay][liveness]") {
  LiveRig rig;
  rig.table->set_down(true);
  rig.relay->Start();
  const auto longest =
      std::max({StallLimitsFor(rig.config).claim, StallLimitsFor(rig.config).settle,
                StallLimitsFor(rig.config).housekeeping});
  // Twice the longest stall limit of fake time passes while every call fails.
  CHECK(rig.AdvanceChecking(2 * longest, 1s, [&] { return rig.liveness.Stalled().empty(); }));
  CHECK(HealthzResponse(rig.liveness).status == 200);
  CHECK_FALSE(rig.relay->DatabaseReady());
  rig.relay->Stop(0ms);
}

TEST_CASE("a stopped relay unregisters its loops", "[relay][liveness]") {
  LiveRig rig;
  rig.relay->Start();
  CHECK(rig.liveness.Names() ==
        std::vector<std::string>{"orders/claim", "orders/settle", "orders/housekeeping"});
  rig.relay->Stop(0ms);
  CHECK(rig.liveness.Names().empty());
}

// `paused: true` (ClaimScheduler::SetPaused, src/relay/claim_loop.cc): the
// claim loop claims nothing, yet it beats and probes the database, so that a
// paused service never looks stalled and its last poll stays fresh.
struct PauseRig {
  PauseRig() : clock(std::make_shared<FakeClock>()), liveness(clock) {}

  // A relay named `name` over a table of three NEW rows, its loops in
  // `liveness`.
  std::unique_ptr<Relay> NewRelay(const std::string& name, bool paused,
                                  std::shared_ptr<FakeTable>* table) {
    *table = std::make_shared<FakeTable>(clock);
    for (int i = 1; i <= 3; ++i) (*table)->Insert("Order", i, "OrderPaid");
    ServiceConfig config;
    config.name = name;
    config.poll_interval_ms = 100;
    config.paused = paused;
    RelayOptions o =
        testing::FakeRelayOptions(config, testing::FakeStoreFactory(*table),
                                  std::make_shared<FakePublisher>(), clock, &metrics[name]);
    o.liveness = &liveness;
    return std::make_unique<Relay>(std::move(o));
  }

  std::shared_ptr<FakeClock> clock;
  LivenessRegistry liveness;
  std::map<std::string, testing::FakeStats> metrics;
};

TEST_CASE("a paused relay claims nothing while its loops beat and it keeps polling the database",
          "[relay][liveness]") {
  PauseRig rig;
  std::shared_ptr<FakeTable> paused_table, control_table;
  auto paused = rig.NewRelay("paused", true, &paused_table);
  auto control = rig.NewRelay("control", false, &control_table);  // the same, unpaused
  paused->Start();
  control->Start();

  // Twice the claim loop's stall limit of fake time, in 1 s steps.
  ServiceConfig config;
  config.poll_interval_ms = 100;
  const auto limit = StallLimitsFor(config).claim;
  for (auto t = 0ms; t < 2 * limit; t += 1s) {
    rig.clock->Advance(1s);
    std::this_thread::sleep_for(2ms);
    REQUIRE(rig.liveness.Stalled().empty());
  }
  CHECK(paused_table->CountStatus("NEW") == 3);
  CHECK(control_table->CountStatus("NEW") == 0);
  CHECK(rig.metrics["paused"].Value(ServiceStats::Gauge::kLastPoll) > 0);
  CHECK(rig.metrics["paused"].Value(ServiceStats::Gauge::kPaused) == 1);
  CHECK(rig.metrics["control"].Value(ServiceStats::Gauge::kPaused) == 0);
  CHECK(paused->DatabaseReady());
  paused->Stop(0ms);
  control->Stop(0ms);
}

}  // namespace
}  // namespace outbox
