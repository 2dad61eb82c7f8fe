// `paused: true` (ClaimScheduler::SetPaused, src/relay/claim_loop.cc): the claim loop claims
// nothing, yet it beats and probes the database, so that a paused service
// never looks stalled and its last poll stays fresh. Real threads, a fake
// table and a fake clock that the test moves.
#include <catch2/catch.hpp>
#include <map>
#include <thread>

#include "fakes/fake_clock.h"
#include "fakes/fake_publisher.h"
#include "fakes/fake_stats.h"
#include "fakes/fake_store.h"
#include "relay/relay.h"

namespace outbox {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;
using testing::FakePublisher;
using testing::FakeTable;

struct PauseRig {
  PauseRig() : clock(std::make_shared<FakeClock>()), liveness(clock) {}

  // A relay named `name` over a table of three NEW rows, its loops in
  // `liveness`.
  std::unique_ptr<Relay> NewRelay(const std::string& name, bool paused,
                                  std::shared_ptr<FakeTable>* table) {
    *table = std::make_shared<FakeTable>(clock);
    for (int i = 1; i <= 3; ++i) (*table)->Insert("Order", i, "OrderPaid");
    RelayOptions o;
    o.config.name = name;
    o.config.poll_interval_ms = 100;
    o.config.paused = paused;
    o.store_factory = testing::FakeStoreFactory(*table);
    o.publisher = std::make_shared<FakePublisher>();
    o.metrics = &metrics[name];
    o.clock = clock;
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
