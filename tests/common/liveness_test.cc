#include "common/liveness.h"

#include <catch2/catch.hpp>

#include "app/stall_watch.h"
#include "fakes/fake_clock.h"
#include "http/healthz.h"

using namespace outbox;
using namespace std::chrono_literals;

namespace {

// A registry whose time moves only when a test advances it.
struct LivenessFixture {
  std::shared_ptr<testing::FakeClock> clock = std::make_shared<testing::FakeClock>();
  LivenessRegistry registry{clock};
};

}  // namespace

TEST_CASE_METHOD(LivenessFixture, "a loop that beats within its stall limit is not stalled",
                 "[liveness]") {
  HeartbeatPtr claim = registry.Register("order/claim", 10s);
  clock->Advance(9s);
  claim->Beat();
  clock->Advance(9s);
  CHECK(registry.Stalled().empty());
  CHECK(registry.Names() == std::vector<std::string>{"order/claim"});
}

TEST_CASE_METHOD(LivenessFixture,
                 "a loop whose last beat is older than its limit is named as stalled",
                 "[liveness]") {
  HeartbeatPtr claim = registry.Register("order/claim", 10s);
  HeartbeatPtr settle = registry.Register("order/settle", 30s);
  clock->Advance(11s);
  settle->Beat();
  auto stalls = registry.Stalled();
  REQUIRE(stalls.size() == 1);
  CHECK(stalls[0].name == "order/claim");
  CHECK(stalls[0].since_last_beat == 11s);
  CHECK(stalls[0].stall_limit == 10s);
  CHECK(DescribeStalls(stalls) == "order/claim: no progress for 11.0 s (stall limit 10.0 s)\n");
  // Exactly at the limit is not yet a stall; one beat clears it.
  claim->Beat();
  clock->Advance(10s);
  CHECK(registry.Stalled().empty());
}

TEST_CASE_METHOD(LivenessFixture, "a heartbeat dropped by its owner unregisters", "[liveness]") {
  HeartbeatPtr gone = registry.Register("order/housekeeping", 1s);
  HeartbeatPtr kept = registry.Register("order/claim", 1h);
  gone.reset();
  clock->Advance(10s);
  CHECK(registry.Stalled().empty());
  CHECK(registry.Names() == std::vector<std::string>{"order/claim"});
}

TEST_CASE_METHOD(LivenessFixture, "heartbeats beat from many threads while the registry is read",
                 "[liveness]") {
  std::vector<std::thread> threads;
  std::atomic<bool> stop{false};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      HeartbeatPtr beat = registry.Register("loop" + std::to_string(t), 1h);
      while (!stop) beat->Beat();
    });
  }
  for (int i = 0; i < 1000; ++i) CHECK(registry.Stalled().empty());
  stop = true;
  for (auto& t : threads) t.join();
  CHECK(registry.Names().empty());
}

TEST_CASE_METHOD(LivenessFixture, "healthz answers 503 naming the stalled loop and 200 otherwise",
                 "[liveness][http]") {
  CHECK(HealthzResponse(registry).status == 200);
  HeartbeatPtr claim = registry.Register("order/claim", 60s);
  HeartbeatPtr settle = registry.Register("order/settle", 60s);
  CHECK(HealthzResponse(registry).status == 200);
  CHECK(HealthzResponse(registry).body == "ok\n");
  clock->Advance(61s);
  settle->Beat();
  HttpResponse r = HealthzResponse(registry);
  CHECK(r.status == 503);
  CHECK(r.body == "stalled:\norder/claim: no progress for 61.0 s (stall limit 60.0 s)\n");
  claim->Beat();
  CHECK(HealthzResponse(registry).status == 200);
}

TEST_CASE_METHOD(LivenessFixture,
                 "the stall watch reports a loop once when it stalls and once when it recovers",
                 "[liveness]") {
  HeartbeatPtr claim = registry.Register("order/claim", 10s);
  StallWatch watch;
  CHECK(watch.Update(registry.Stalled()).stalled.empty());
  clock->Advance(11s);
  CHECK(watch.Update(registry.Stalled()).stalled == std::vector<std::string>{"order/claim"});
  clock->Advance(1s);
  auto again = watch.Update(registry.Stalled());
  CHECK(again.stalled.empty());
  CHECK(again.recovered.empty());
  claim->Beat();
  CHECK(watch.Update(registry.Stalled()).recovered == std::vector<std::string>{"order/claim"});
}
