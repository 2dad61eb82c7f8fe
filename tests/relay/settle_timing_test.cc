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

TEST_CASE("the SENT group's table: held and then written at its window or when full or at a stop",
          "[relay][settle]") {
  struct Row {
    const char* what;
    std::vector<size_t> batches;  // rows of each batch that joined, all at time 0
    Clock::Duration later;        // asked this long after the first joined
    bool claims_ended;
    bool due;
  };
  const Row rows[] = {
      {"an empty group is never due", {}, 1s, true, false},
      {"one batch waits for the window", {1}, 499ms, false, false},
      {"and is written when it ends", {1}, 500ms, false, true},
      {"several small batches wait together", {1, 1, 1, 1, 1}, 100ms, false, false},
      {"a group of kMaxRows rows is written at once", {16, 16}, 0ms, false, true},
      {"one row short of it waits", {16, 15}, 0ms, false, false},
      {"a stop writes the group at once", {1}, 0ms, true, true},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    SentGrouping g;
    const Clock::TimePoint t0{};
    for (size_t n : r.batches) g.Add(n, t0);
    CHECK(g.Due(t0 + r.later, r.claims_ended) == r.due);
  }
  CHECK(SentGrouping::kWindow == 500ms);
  CHECK(SentGrouping::kMaxRows == 32);
}

TEST_CASE("only acknowledged batches of at most kMaxRows rows are held and never at a stop",
          "[relay][settle]") {
  SentGrouping g;
  CHECK(g.Holds(1, true, false));
  CHECK_FALSE(g.Holds(1, false, false));  // a retry, a DEAD or a release: at once
  CHECK_FALSE(g.Holds(1, true, true));    // the claims ended: nothing waits
  CHECK_FALSE(SentGrouping(0ms).Holds(1, true, false));
  CHECK(g.Holds(SentGrouping::kMaxRows, true, false));
  CHECK_FALSE(g.Holds(SentGrouping::kMaxRows + 1, true, false));  // large: alone, at once
  // A batch that does not fit ends the group: it never holds more than kMaxRows.
  g.Add(10, Clock::TimePoint{});
  CHECK(g.rows() == 10);
  CHECK(g.Fits(22));
  CHECK_FALSE(g.Fits(23));
  g.Clear();
  // The window counts from the first batch that joined; Clear starts afresh.
  g.Add(1, Clock::TimePoint{} + 100ms);
  g.Add(1, Clock::TimePoint{} + 400ms);
  CHECK(g.due() == Clock::TimePoint{} + 600ms);
  g.Clear();
  CHECK(g.empty());
  g.Add(1, Clock::TimePoint{} + 700ms);
  CHECK(g.due() == Clock::TimePoint{} + 1200ms);
}

}  // namespace
}  // namespace outbox
