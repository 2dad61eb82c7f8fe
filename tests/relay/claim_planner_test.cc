#include "relay/claim_planner.h"

#include <catch2/catch.hpp>

using namespace outbox;

namespace {
WindowRow W(int64_t id, int64_t agg, bool due = true, bool sending = false) {
  return WindowRow{id, {"Order", agg}, sending, due};
}
OutboxRow R(int64_t id, int64_t agg) {
  OutboxRow r;
  r.id = id;
  r.aggregate = {"Order", agg};
  return r;
}
std::vector<OutboxRow> Locked(std::vector<int64_t> ids) {
  std::vector<OutboxRow> out;
  for (auto id : ids) out.push_back(R(id, 0));
  return out;
}
// Claims every candidate, as ClaimIds does when it locks them all.
std::vector<int64_t> ClaimAll(ClaimPlanner& p, const std::map<int64_t, int64_t>& agg_of) {
  std::vector<int64_t> chosen = p.Choose(Locked(p.candidates()));
  std::vector<OutboxRow> rows;
  for (int64_t id : chosen) rows.push_back(R(id, agg_of.at(id)));
  p.OnClaimed(rows);
  return chosen;
}
SettledRow Sent(int64_t id, int64_t agg) { return {id, {"Order", agg}, true}; }
SettledRow Failed(int64_t id, int64_t agg) { return {id, {"Order", agg}, false}; }
}  // namespace

TEST_CASE("a row waits behind an older unsent row of its aggregate and only its aggregate",
          "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  p.StartPass(1);
  p.BeginRound(10);
  // aggregate 1: id 1 backing off (not due) -> 3 must wait; aggregate 2 flows.
  p.Consume({W(1, 1, false), W(2, 2), W(3, 1), W(4, 2), W(5, 3)}, 100, 10);
  CHECK(p.candidates() == std::vector<int64_t>{2, 4, 5});
  CHECK(p.pass_exhausted());
}

TEST_CASE("DEAD blocks later events of its aggregate under block but not under skip",
          "[ordering]") {
  for (DeadPolicy policy : {DeadPolicy::kBlock, DeadPolicy::kSkip}) {
    ClaimPlanner p(policy);
    // The pass's snapshot holds row 2 of order 1 DEAD (below the pass start
    // or replayed since: either way the scan does not show it).
    p.StartPass(1, {{{"Order", 1}, 2}});
    p.BeginRound(10);
    p.Consume({W(1, 1), W(3, 1), W(4, 2)}, 100, 10);
    if (policy == DeadPolicy::kBlock)
      CHECK(p.candidates() == std::vector<int64_t>{1, 4});
    else
      CHECK(p.candidates() == std::vector<int64_t>{1, 3, 4});
  }
}

TEST_CASE("a chain is cut at the first row another relay holds", "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  p.StartPass(1);
  p.BeginRound(10);
  p.Consume({W(1, 1), W(2, 1), W(3, 1), W(4, 2), W(5, 2)}, 100, 10);
  // Row 2 was locked by someone else: 1 may go, 3 must not overtake 2.
  CHECK(p.Choose(Locked({1, 3, 4, 5})) == std::vector<int64_t>{1, 4, 5});
  // Aggregate 1 stays blocked for the rest of the pass.
  p.BeginRound(10);
  p.Consume({W(6, 1), W(7, 3)}, 100, 10);
  CHECK(p.candidates() == std::vector<int64_t>{7});
}

TEST_CASE("a pass says when another relay holds what blocks an aggregate until the next starts",
          "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  // Backing off (NEW, not due) and behind a DEAD row: no other relay.
  p.StartPass(1, {{{"Order", 3}, 5}});
  p.BeginRound(10);
  p.Consume({W(1, 1, false), W(2, 2), W(6, 3)}, 100, 10);
  CHECK(p.Choose(Locked({2})) == std::vector<int64_t>{2});
  CHECK_FALSE(p.held_by_peer());
  SECTION("SENDING under a live lease") {
    p.StartPass(10);
    p.BeginRound(10);
    p.Consume({W(10, 1, false, true), W(11, 1)}, 100, 10);
    CHECK(p.held_by_peer());
    p.EndPass();
    CHECK(p.held_by_peer());  // what the claim loop asks after an empty pass
    p.StartPass(12);
    CHECK_FALSE(p.held_by_peer());
  }
  SECTION("locked by its claim") {
    p.StartPass(10);
    p.BeginRound(10);
    p.Consume({W(10, 1), W(11, 1)}, 100, 10);
    CHECK(p.Choose(Locked({})).empty());
    CHECK(p.held_by_peer());
  }
}

TEST_CASE("the rest of a page is consumed by the next round without reading it again",
          "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  p.StartPass(1);
  p.BeginRound(2);
  p.Consume({W(1, 1), W(2, 2), W(3, 3), W(4, 4)}, 4, 2);
  CHECK(p.candidates() == std::vector<int64_t>{1, 2});
  CHECK(p.cursor() == 5);  // the next page starts after the whole page
  CHECK_FALSE(p.pass_exhausted());
  ClaimAll(p, {{1, 1}, {2, 2}});
  p.BeginRound(2);
  p.ConsumeBuffered(2);
  CHECK(p.candidates() == std::vector<int64_t>{3, 4});
  CHECK(p.full(2));
  CHECK_FALSE(p.pass_exhausted());  // the page was full: there may be more
}

TEST_CASE("events of an aggregate in flight are deferred and go once it is settled SENT",
          "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  const std::map<int64_t, int64_t> agg{{1, 1}, {2, 2}, {3, 1}, {4, 1}};
  p.StartPass(1);
  p.BeginRound(1);
  p.Consume({W(1, 1), W(2, 2), W(3, 1), W(4, 1)}, 100, 1);  // batch of one
  CHECK(ClaimAll(p, agg) == std::vector<int64_t>{1});
  p.BeginRound(10);
  p.ConsumeBuffered(10);
  // 3 and 4 are order 1, whose event 1 is in flight: deferred, not blocked.
  CHECK(p.candidates() == std::vector<int64_t>{2});
  CHECK(p.deferred_count() == 2);
  CHECK(ClaimAll(p, agg) == std::vector<int64_t>{2});
  p.BeginRound(10);
  CHECK(p.candidates().empty());  // still in flight
  p.OnSettled({Sent(1, 1)});
  p.BeginRound(10);
  CHECK(p.candidates() == std::vector<int64_t>{3, 4});
  CHECK(p.deferred_count() == 0);
  CHECK(ClaimAll(p, agg) == std::vector<int64_t>{3, 4});
}

TEST_CASE("a later row of an aggregate never overtakes its deferred rows", "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  const std::map<int64_t, int64_t> agg{{1, 1}, {2, 1}, {3, 1}, {9, 1}};
  p.StartPass(1);
  p.BeginRound(1);
  p.Consume({W(1, 1), W(2, 1), W(3, 1)}, 3, 1);
  ClaimAll(p, agg);  // 1 in flight
  p.BeginRound(5);
  p.ConsumeBuffered(5);  // 2 and 3 deferred
  CHECK(p.deferred_count() == 2);
  p.OnSettled({Sent(1, 1)});
  // Room for one: 2 is promoted, 3 stays deferred; 9 (same aggregate, next
  // page) must queue behind 3, not join the round's chain after 2.
  p.BeginRound(1);
  CHECK(p.candidates() == std::vector<int64_t>{2});
  p.Consume({W(9, 1)}, 100, 5);
  CHECK(p.candidates() == std::vector<int64_t>{2});
  CHECK(p.deferred_count() == 2);
  CHECK(ClaimAll(p, agg) == std::vector<int64_t>{2});
  p.OnSettled({Sent(2, 1)});
  p.BeginRound(5);
  CHECK(p.candidates() == std::vector<int64_t>{3, 9});
}

TEST_CASE("a failed delivery blocks its aggregate and drops the rows deferred behind it",
          "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  const std::map<int64_t, int64_t> agg{{1, 1}, {5, 1}, {6, 2}};
  p.StartPass(1);
  p.BeginRound(1);
  p.Consume({W(1, 1)}, 1, 10);
  CHECK_FALSE(p.pass_exhausted());
  ClaimAll(p, agg);
  p.BeginRound(10);
  p.Consume({W(5, 1), W(6, 2)}, 100, 10);
  CHECK(p.candidates() == std::vector<int64_t>{6});
  CHECK(p.deferred_count() == 1);
  p.OnSettled({Failed(1, 1)});  // went back to NEW with backoff
  p.BeginRound(10);
  CHECK(p.candidates().empty());
  CHECK(p.deferred_count() == 0);
  // The next pass starts over: row 1 backing off holds 5 back.
  p.EndPass();
  p.StartPass(1);
  p.BeginRound(10);
  p.Consume({W(1, 1, false), W(5, 1)}, 100, 10);
  CHECK(p.candidates().empty());
}

TEST_CASE("this relay's own row in flight from an earlier pass does not block its aggregate",
          "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  const std::map<int64_t, int64_t> agg{{1, 1}, {2, 1}, {3, 2}};
  p.StartPass(1);
  p.BeginRound(1);
  p.Consume({W(1, 1)}, 100, 1);
  ClaimAll(p, agg);
  p.EndPass();
  // The next pass's snapshot shows row 1 SENDING under this relay's lease.
  p.StartPass(1);
  p.BeginRound(10);
  p.Consume({W(1, 1, false, true), W(2, 1), W(3, 2)}, 100, 10);
  CHECK(p.candidates() == std::vector<int64_t>{3});
  CHECK(p.deferred_count() == 1);
  p.OnSettled({Sent(1, 1)});
  p.BeginRound(10);
  CHECK(p.candidates() == std::vector<int64_t>{2});
}

TEST_CASE("beyond its limit a deferred row blocks its aggregate until the next pass",
          "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock, 1);
  const std::map<int64_t, int64_t> agg{{1, 1}, {2, 2}};
  p.StartPass(1);
  p.BeginRound(2);
  p.Consume({W(1, 1), W(2, 2)}, 2, 2);
  ClaimAll(p, agg);
  p.BeginRound(10);
  p.Consume({W(3, 1), W(4, 2), W(5, 3)}, 100, 10);
  CHECK(p.deferred_count() == 1);  // 3 waits for 1; 4 has no room
  CHECK(p.candidates() == std::vector<int64_t>{5});
  p.OnSettled({Sent(1, 1), Sent(2, 2)});
  p.BeginRound(10);
  CHECK(p.candidates() == std::vector<int64_t>{3});
}

TEST_CASE("a DEAD row of the pass's snapshot blocks its aggregate for the whole pass",
          "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  // Row 3 of order 1 was DEAD when the pass began; replayed since, it is NEW
  // behind the cursor where this pass does not look.
  p.StartPass(10, {{{"Order", 1}, 3}});
  p.BeginRound(10);
  p.Consume({W(10, 2), W(12, 1)}, 100, 10);
  CHECK(p.candidates() == std::vector<int64_t>{10});
  p.EndPass();
  p.StartPass(3);
  p.BeginRound(10);
  p.Consume({W(3, 1), W(12, 1)}, 100, 10);
  CHECK(p.candidates() == std::vector<int64_t>{3, 12});
}

TEST_CASE("a deferred row is claimable once its older event is acknowledged before its settle",
          "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  const std::map<int64_t, int64_t> agg{{1, 1}, {2, 1}, {3, 1}, {4, 2}};
  p.StartPass(1);
  p.BeginRound(1);
  p.Consume({W(1, 1), W(2, 1), W(3, 1), W(4, 2)}, 100, 1);
  CHECK(ClaimAll(p, agg) == std::vector<int64_t>{1});
  p.BeginRound(10);
  p.ConsumeBuffered(10);
  CHECK(p.deferred_count() == 2);  // 2 and 3 wait for 1
  CHECK(ClaimAll(p, agg) == std::vector<int64_t>{4});
  // 4's acknowledgement frees nothing; 1's frees 2 and 3 (its first copy is
  // in Kafka), while 1 is still SENDING in the table.
  CHECK_FALSE(p.OnDelivered({Sent(4, 2)}));
  CHECK(p.OnDelivered({Sent(1, 1)}));
  p.BeginRound(1);
  CHECK(p.candidates() == std::vector<int64_t>{2});
  CHECK(ClaimAll(p, agg) == std::vector<int64_t>{2});
  // 1's settle commits later: it must not count 2 out of flight, so 3 still
  // waits for 2.
  p.OnSettled({Sent(1, 1), Sent(4, 2)});
  p.BeginRound(10);
  CHECK(p.candidates().empty());
  CHECK(p.deferred_count() == 1);
  CHECK(p.OnDelivered({Sent(2, 1)}));
  p.BeginRound(10);
  CHECK(p.candidates() == std::vector<int64_t>{3});
}

TEST_CASE("an acknowledgement after its pass ended still says a row it deferred is claimable",
          "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  const std::map<int64_t, int64_t> agg{{1, 1}, {2, 1}, {3, 2}};
  p.StartPass(1);
  p.BeginRound(1);
  p.Consume({W(1, 1), W(2, 1), W(3, 2)}, 100, 1);
  CHECK(ClaimAll(p, agg) == std::vector<int64_t>{1});
  p.BeginRound(10);
  p.ConsumeBuffered(10);
  CHECK(ClaimAll(p, agg) == std::vector<int64_t>{3});
  p.BeginRound(10);
  REQUIRE(p.candidates().empty());  // 2 waits for 1; the round claims nothing
  p.EndPass();
  CHECK(p.deferred_count() == 0);
  CHECK_FALSE(p.OnDelivered({Sent(3, 2)}));  // nothing waited behind 3
  CHECK(p.OnDelivered({Sent(1, 1)}));        // 2 did: the loop should look
  // A new pass reads the table again: what the last one deferred is forgotten.
  p.StartPass(2);
  p.BeginRound(1);
  p.Consume({W(2, 1)}, 100, 1);
  CHECK(ClaimAll(p, agg) == std::vector<int64_t>{2});
  CHECK_FALSE(p.OnDelivered({Sent(2, 1)}));
}

TEST_CASE("an acknowledged row whose settle fails still blocks its aggregate", "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  const std::map<int64_t, int64_t> agg{{1, 1}, {2, 1}, {3, 1}};
  p.StartPass(1);
  p.BeginRound(1);
  p.Consume({W(1, 1), W(2, 1), W(3, 1)}, 100, 1);
  ClaimAll(p, agg);
  p.BeginRound(1);
  p.ConsumeBuffered(1);  // 2 and 3 deferred
  REQUIRE(p.OnDelivered({Sent(1, 1)}));
  p.BeginRound(1);
  CHECK(ClaimAll(p, agg) == std::vector<int64_t>{2});
  // The settle found the row no longer ours (a peer took it over after the
  // lease): the pass stops claiming the aggregate; 2, already out, follows 1.
  p.OnSettled({Failed(1, 1)});
  CHECK_FALSE(p.OnDelivered({Sent(2, 1)}));
  p.BeginRound(10);
  CHECK(p.candidates().empty());
  CHECK(p.deferred_count() == 0);
}

TEST_CASE("an acknowledged row not yet settled does not block a new pass", "[ordering]") {
  ClaimPlanner p(DeadPolicy::kBlock);
  const std::map<int64_t, int64_t> agg{{1, 1}, {2, 1}};
  p.StartPass(1);
  p.BeginRound(1);
  p.Consume({W(1, 1)}, 100, 1);
  ClaimAll(p, agg);
  CHECK_FALSE(p.OnDelivered({Sent(1, 1)}));  // nothing waits behind it
  CHECK_FALSE(p.OnDelivered({Sent(1, 1)}));  // told twice: counted once
  p.EndPass();
  // The next pass's snapshot shows row 1 SENDING under this relay's lease.
  p.StartPass(1);
  p.BeginRound(10);
  p.Consume({W(1, 1, false, true), W(2, 1)}, 100, 10);
  CHECK(p.candidates() == std::vector<int64_t>{2});
  CHECK(p.deferred_count() == 0);
}
