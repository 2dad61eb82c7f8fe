// The settle side's timing (src/relay/settle_timing.h): the backoff after a
// failed settle and the stop grace, as tables. (The SettleGate's table is in
// settle_queue_test.cc, beside the queue that keeps it.)
#include "relay/settle_timing.h"

#include <catch2/catch.hpp>
#include <vector>

namespace outbox {
namespace {

using namespace std::chrono_literals;

TEST_CASE("the settle scheduler's table: the backoff after a failed settle", "[relay][settle]") {
  struct Row {
    const char* what;
    std::vector<bool> passes;  // each pass before the last: failed or not
    Clock::Duration wait;      // the last pass fails: the wait it asks for
  };
  const Row rows[] = {
      {"the first failure waits 100 ms", {}, 100ms},
      {"failures double the wait", {true}, 200ms},
      {"and again", {true, true}, 400ms},
      {"up to 5 s", {true, true, true, true, true, true}, 5s},
      {"and no more", {true, true, true, true, true, true, true, true}, 5s},
      {"a pass that did not fail starts again at 100 ms", {true, true, false}, 100ms},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    SettleScheduler s;
    const Clock::TimePoint now{};
    for (bool failed : r.passes) {
      if (failed) {
        (void)s.OnFailed(now);
      } else {
        s.OnSettled();
      }
    }
    CHECK(s.OnFailed(now) - now == r.wait);
  }
  CHECK(SettleScheduler::kAdmitWait == 200ms);
}

TEST_CASE("the stop grace is half the lease and 5 s but at most a minute", "[relay][settle]") {
  struct Row {
    int64_t lease_ms;
    std::chrono::milliseconds grace;
  };
  const Row rows[] = {{30000, 20000ms}, {10000, 10000ms}, {110000, 60000ms}, {600000, 60000ms}};
  for (const Row& r : rows) {
    INFO(r.lease_ms);
    ServiceConfig c;
    c.lease_ms = r.lease_ms;
    CHECK(StopGrace(c) == r.grace);
  }
}

}  // namespace
}  // namespace outbox
