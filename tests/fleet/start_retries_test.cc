#include "fleet/start_retries.h"

#include <catch2/catch.hpp>

using namespace outbox;
using namespace std::chrono_literals;

TEST_CASE("a failed start waits 1 s then twice as long each time and at most 30 s", "[fleet]") {
  StartRetries r;
  const Clock::TimePoint t0{};
  auto at = t0;
  std::vector<std::chrono::milliseconds> waits;
  for (int i = 0; i < 7; ++i) {
    (void)r.Failed("a", "cause", at);
    const auto next = *r.NextDue();
    waits.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(next - at));
    CHECK_FALSE(r.Due("a", next - 1ms));
    CHECK(r.Due("a", next));
    at = next;
  }
  CHECK(waits == std::vector<std::chrono::milliseconds>{1s, 2s, 4s, 8s, 16s, 30s, 30s});
  CHECK(r.FailuresForTesting("a") == 7);
  CHECK(r.Due("b", t0));
}

TEST_CASE("a failure is news only when its cause is new", "[fleet]") {
  StartRetries r;
  const Clock::TimePoint t0{};
  CHECK(r.Failed("a", "x", t0));
  CHECK_FALSE(r.Failed("a", "x", t0));
  CHECK(r.Failed("a", "y", t0));
  CHECK(r.Failed("b", "y", t0));
  r.Forget("a");
  CHECK(r.FailuresForTesting("a") == 0);
  CHECK(r.Failed("a", "y", t0));
  r.KeepOnly({"b"});
  CHECK(r.FailuresForTesting("a") == 0);
  CHECK(r.FailuresForTesting("b") == 1);
}
