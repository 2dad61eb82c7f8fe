#include "outbox/claim_planner.h"

#include <catch2/catch.hpp>

using namespace outbox;

namespace {
WindowRow W(int64_t id, int64_t agg, bool due = true, bool sending = false) {
  return WindowRow{id, {"Order", agg}, sending, due};
}
std::vector<OutboxRow> Locked(std::vector<int64_t> ids) {
  std::vector<OutboxRow> out;
  for (auto id : ids) {
    OutboxRow r;
    r.id = id;
    out.push_back(r);
  }
  return out;
}
}  // namespace

TEST_CASE("a row waits behind an older unsent row of its aggregate and only its aggregate",
          "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  p.StartPass(1);
  p.BeginRound();
  // aggregate 1: id 1 backing off (not due) -> 3 must wait; aggregate 2 flows.
  p.Consume({W(1, 1, false), W(2, 2), W(3, 1), W(4, 2), W(5, 3)}, 100, 10);
  CHECK(p.candidates() == std::vector<int64_t>{2, 4, 5});
  CHECK(p.pass_exhausted());
}

TEST_CASE("DEAD blocks later events of its aggregate under block but not under skip",
          "[ordering]") {
  for (DeadPolicy policy : {DeadPolicy::kBlock, DeadPolicy::kSkip}) {
    ClaimPlanner p(policy);
    p.StartPass(1);
    p.BeginRound();
    p.Consume({W(1, 1), W(3, 1), W(4, 2)}, 100, 10);
    p.UpdateDeadHeads({{{"Order", 1}, 2}});
    if (policy == DeadPolicy::kBlock)
      CHECK(p.candidates() == std::vector<int64_t>{1, 4});
    else
      CHECK(p.candidates() == std::vector<int64_t>{1, 3, 4});
  }
}

TEST_CASE("a chain is cut at the first row another relay holds", "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  p.StartPass(1);
  p.BeginRound();
  p.Consume({W(1, 1), W(2, 1), W(3, 1), W(4, 2), W(5, 2)}, 100, 10);
  // Row 2 was locked by someone else: 1 may go, 3 must not overtake 2.
  auto chosen = p.Choose(Locked({1, 3, 4, 5}));
  CHECK(chosen == std::vector<int64_t>{1, 4, 5});
  // The aggregate stays blocked for the rest of the pass.
  p.BeginRound();
  p.Consume({W(6, 1), W(7, 3)}, 100, 10);
  CHECK(p.candidates() == std::vector<int64_t>{7});
}

TEST_CASE("events of an aggregate in flight wait until it is settled SENT", "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  p.StartPass(1);
  p.BeginRound();
  p.Consume({W(1, 1), W(2, 2)}, 2, 1);  // batch of one: takes 1, stops at 2
  CHECK(p.candidates() == std::vector<int64_t>{1});
  CHECK(p.cursor() == 2);
  auto chosen = p.Choose(Locked({1}));
  OutboxRow r;
  r.id = 1;
  r.aggregate = {"Order", 1};
  p.OnClaimed({r});
  p.BeginRound();
  p.Consume({W(2, 2), W(3, 1)}, 100, 10);  // 3 is aggregate 1: its event 1 is in flight
  CHECK(p.candidates() == std::vector<int64_t>{2});
  p.OnSettled({{"Order", 1}}, {});
  p.EndPass();
  p.StartPass(3);
  p.BeginRound();
  p.Consume({W(3, 1)}, 100, 10);
  CHECK(p.candidates() == std::vector<int64_t>{3});
}

TEST_CASE("a failed settle blocks the aggregate for the rest of the pass", "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  p.StartPass(1);
  p.BeginRound();
  p.Consume({W(1, 1)}, 1, 10);
  CHECK_FALSE(p.pass_exhausted());
  p.Choose(Locked({1}));
  OutboxRow r;
  r.id = 1;
  r.aggregate = {"Order", 1};
  p.OnClaimed({r});
  p.OnSettled({}, {{"Order", 1}});  // went back to NEW with backoff
  p.BeginRound();
  p.Consume({W(5, 1), W(6, 2)}, 100, 10);
  CHECK(p.candidates() == std::vector<int64_t>{6});
}

TEST_CASE("a DEAD row learned after the scan drops the candidates behind it and blocks the pass",
          "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  p.StartPass(1);
  p.BeginRound();
  p.Consume({W(1, 1), W(5, 1), W(6, 1), W(7, 2)}, 100, 10);
  p.UpdateDeadHeads({{{"Order", 1}, 3}});  // row 3 of order 1 died meanwhile
  CHECK(p.candidates() == std::vector<int64_t>{1, 7});
  p.BeginRound();
  p.Consume({W(8, 1), W(9, 2)}, 100, 10);
  CHECK(p.candidates() == std::vector<int64_t>{9});
}

TEST_CASE("an aggregate whose DEAD row was replayed mid-pass stays blocked until the next pass",
          "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  p.StartPass(10);
  p.BeginRound();
  p.Consume({W(10, 2)}, 1, 10);
  p.UpdateDeadHeads({{{"Order", 1}, 3}});
  p.BeginRound();
  p.Consume({W(11, 2)}, 1, 10);
  p.UpdateDeadHeads({});  // row 3 was replayed: NEW again, behind the cursor
  p.BeginRound();
  p.Consume({W(12, 1)}, 100, 10);
  p.UpdateDeadHeads({});
  CHECK(p.candidates().empty());  // order 1 must wait for row 3
  p.EndPass();
  p.StartPass(3);
  p.BeginRound();
  p.Consume({W(3, 1), W(12, 1)}, 100, 10);
  p.UpdateDeadHeads({});
  CHECK(p.candidates() == std::vector<int64_t>{3, 12});
}
