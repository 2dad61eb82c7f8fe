// The store contract: behaviours of OutboxStore written once and run against
// both the fake (FakeTableEnv) and MysqlStore on MariaDB (MariaDbEnv), so the
// fake the relay's unit tests stand on cannot drift from the real store.
// Each case runs once per environment; ctest names end in " - FakeTableEnv"
// and " - MariaDbEnv".

#include <catch2/catch.hpp>
#include <limits>
#include <set>

#include "integration/store_contract_env.h"
#include "support/settle_ops.h"

using namespace outbox;
using namespace outbox::testing;

namespace {

std::vector<int64_t> Ids(const std::vector<OutboxRow>& rows) {
  std::vector<int64_t> out;
  for (const auto& r : rows) out.push_back(r.id);
  return out;
}

std::set<int64_t> Set(const std::vector<int64_t>& ids) { return {ids.begin(), ids.end()}; }

}  // namespace

#define STORE_CONTRACT(name) TEMPLATE_TEST_CASE(name, "[store][contract]", FakeTableEnv, MariaDbEnv)

STORE_CONTRACT("a claim takes the due NEW rows and leaves the rest") {
  TestType env;
  env.Seed({{.id = 1, .aggregate_id = 1},
            {.id = 2, .aggregate_id = 2, .due_in_s = 60},
            {.id = 3, .aggregate_id = 3, .status = "SENT"},
            {.id = 4, .aggregate_id = 4, .status = "DEAD"},
            {.id = 5, .aggregate_id = 5}});
  auto store = env.NewStore();
  bool due = false;
  REQUIRE(store->HasDue(false, &due).ok());
  CHECK(due);
  ClaimedBatch b;
  REQUIRE(store->ClaimDue(10, 30000, false, &b, {}).ok());
  CHECK(Ids(b.rows) == std::vector<int64_t>{1, 5});
  CHECK(b.reclaimed == 0);
  CHECK_FALSE(b.lease_token.empty());
  CHECK(env.Get(1).status == "SENDING");
  CHECK_FALSE(env.Get(1).due);
  CHECK(env.Get(2).status == "NEW");
  REQUIRE(store->ClaimDue(10, 30000, true, &b, {}).ok());
  CHECK(b.rows.empty());
  CHECK(b.lease_token.empty());
  REQUIRE(store->HasDue(true, &due).ok());
  CHECK_FALSE(due);
}

STORE_CONTRACT("an expired lease is reclaimed before new rows and counted as reclaimed") {
  TestType env;
  env.Seed({{.id = 1, .aggregate_id = 1},
            {.id = 2, .aggregate_id = 2, .status = "SENDING", .due_in_s = -5},
            {.id = 3, .aggregate_id = 3, .status = "SENDING", .due_in_s = 60}});
  auto store = env.NewStore();
  bool due = false;
  ClaimedBatch b;
  REQUIRE(store->ClaimDue(1, 30000, true, &b, {}).ok());
  REQUIRE(Ids(b.rows) == std::vector<int64_t>{2});
  CHECK(b.reclaimed == 1);
  CHECK(b.rows[0].reclaimed);
  REQUIRE(store->ClaimDue(10, 30000, false, &b, {}).ok());
  CHECK(Ids(b.rows) == std::vector<int64_t>{1});
  CHECK(b.reclaimed == 0);
  // Row 3's lease is live: nobody may take it.
  REQUIRE(store->HasDue(true, &due).ok());
  CHECK_FALSE(due);
  REQUIRE(store->ClaimDue(10, 30000, true, &b, {}).ok());
  CHECK(b.rows.empty());
}

STORE_CONTRACT("a settle under a lease that was taken over is stale and names its rows") {
  TestType env;
  env.Seed(
      {{.id = 1, .aggregate_id = 1}, {.id = 2, .aggregate_id = 2}, {.id = 3, .aggregate_id = 3}});
  auto a = env.NewStore();
  auto b = env.NewStore();
  ClaimedBatch first, second;
  REQUIRE(a->ClaimDue(10, 30000, false, &first, {}).ok());
  REQUIRE(first.rows.size() == 3);
  for (int64_t id : {1, 2, 3}) env.Set(id, "SENDING", -1);  // the lease ran out
  // A longer lease than the first: a token that cannot equal it.
  REQUIRE(b->ClaimDue(10, 60000, true, &second, {}).ok());
  REQUIRE(second.rows.size() == 3);
  CHECK(second.reclaimed == 3);
  CHECK(second.lease_token != first.lease_token);
  SettleResult r;
  REQUIRE(a->Settle(first.lease_token,
                    {{1, SettleKind::kSent, 0, ""},
                     {2, SettleKind::kRetry, 1000, "boom"},
                     {3, SettleKind::kDead, 0, "boom"}},
                    &r)
              .ok());
  CHECK(r.applied == 0);
  CHECK(r.stale == 3);
  CHECK(r.commits == 0);  // nothing changed: nothing in the binary log
  CHECK(Set(r.stale_ids) == std::set<int64_t>{1, 2, 3});
  for (int64_t id : {1, 2, 3}) CHECK(env.Get(id).status == "SENDING");
  REQUIRE(b->Settle(second.lease_token, AllSent(second), &r).ok());
  CHECK(r.applied == 3);
  CHECK(r.stale == 0);
  CHECK(r.commits == 1);
  CHECK(r.stale_ids.empty());
}

STORE_CONTRACT("each settle kind moves its row and a second settle of it is stale") {
  TestType env;
  env.Seed({{.id = 1, .aggregate_id = 1},
            {.id = 2, .aggregate_id = 2},
            {.id = 3, .aggregate_id = 3},
            {.id = 4, .aggregate_id = 4, .retry_count = 2}});
  auto store = env.NewStore();
  ClaimedBatch b;
  REQUIRE(store->ClaimDue(10, 30000, false, &b, {}).ok());
  REQUIRE(b.rows.size() == 4);
  CHECK(b.rows[3].retry_count == 2);
  SettleResult r;
  REQUIRE(store
              ->Settle(b.lease_token,
                       {{1, SettleKind::kSent, 0, ""},
                        {2, SettleKind::kRetry, 60000, "boom"},
                        {3, SettleKind::kDead, 0, "bad"},
                        {4, SettleKind::kRelease, 0, ""}},
                       &r)
              .ok());
  CHECK(r.applied == 4);
  CHECK(r.stale == 0);
  CHECK(r.commits == 1);  // one transaction
  CHECK(env.Get(1).status == "SENT");
  const SeenRow retried = env.Get(2);
  CHECK(retried.status == "NEW");
  CHECK(retried.retry_count == 1);
  CHECK_FALSE(retried.due);
  CHECK(retried.last_error == "boom");
  const SeenRow dead = env.Get(3);
  CHECK(dead.status == "DEAD");
  CHECK(dead.retry_count == 1);
  CHECK(dead.last_error == "bad");
  const SeenRow released = env.Get(4);
  CHECK(released.status == "NEW");
  CHECK(released.retry_count == 2);  // a release is not an attempt
  CHECK(released.due);
  // Nothing is SENDING under the token any more. A SENT settle repeated (as
  // after a lost reply) is counted but not named: the row is SENT under this
  // lease. The other kinds name their row.
  REQUIRE(store->Settle(b.lease_token, {{1, SettleKind::kSent, 0, ""}}, &r).ok());
  CHECK(r.applied == 0);
  CHECK(r.stale == 1);
  CHECK(r.stale_ids.empty());
  REQUIRE(store->Settle(b.lease_token, {{3, SettleKind::kDead, 0, "again"}}, &r).ok());
  CHECK(r.stale == 1);
  CHECK(r.stale_ids == std::vector<int64_t>{3});
  CHECK(env.Get(3).last_error == "bad");
  // A stale release is only counted.
  REQUIRE(store->Settle(b.lease_token, {{4, SettleKind::kRelease, 0, ""}}, &r).ok());
  CHECK(r.stale == 1);
  CHECK(r.stale_ids.empty());
  CHECK(r.commits == 0);
}

STORE_CONTRACT("the table gauges count backlog and DEAD and unknown statuses and the oldest age") {
  TestType env;
  env.Seed({{.id = 1, .aggregate_id = 1, .created_ago_s = 100},
            {.id = 2, .aggregate_id = 2, .status = "SENDING", .due_in_s = 30, .created_ago_s = 50},
            {.id = 3, .aggregate_id = 3, .status = "SENT", .created_ago_s = 1000},
            {.id = 4, .aggregate_id = 4, .status = "DEAD", .created_ago_s = 2000},
            {.id = 5, .aggregate_id = 5, .status = "PAUSED"}});
  auto store = env.NewStore();
  TableStats stats;
  REQUIRE(store->ReadStats(&stats).ok());
  CHECK(stats.backlog == 2);
  CHECK(stats.dead == 1);
  CHECK(stats.unknown_status == 1);
  CHECK(stats.oldest_unsent_age_s >= 100);
  CHECK(stats.oldest_unsent_age_s < 103);
}

STORE_CONTRACT("the table gauges say when the first unsent row that is not due yet comes due") {
  TestType env;
  env.Seed({{.id = 1, .aggregate_id = 1},                                       // due now
            {.id = 2, .aggregate_id = 2, .due_in_s = 40},                       // a retry backoff
            {.id = 3, .aggregate_id = 3, .status = "SENDING", .due_in_s = 20},  // a lease
            {.id = 4, .aggregate_id = 4, .status = "DEAD", .due_in_s = 5},
            {.id = 5, .aggregate_id = 5, .status = "SENT", .due_in_s = 5}});
  auto store = env.NewStore();
  TableStats stats;
  REQUIRE(store->ReadStats(&stats).ok());
  REQUIRE(stats.next_due_in_s.has_value());
  // Whole seconds of DATETIME: the lease ends 19 to 20 s from now.
  CHECK(*stats.next_due_in_s > 18.5);
  CHECK(*stats.next_due_in_s <= 20.0);
  // Every unsent row due: nothing to time.
  env.Set(2, "NEW", -1);
  env.Set(3, "SENDING", -1);
  REQUIRE(store->ReadStats(&stats).ok());
  CHECK_FALSE(stats.next_due_in_s.has_value());
}

STORE_CONTRACT("DEAD heads name each aggregate's smallest DEAD id and blocked aggregates count") {
  TestType env;
  env.Seed({{.id = 1, .aggregate_id = 1, .status = "DEAD"},
            {.id = 2, .aggregate_id = 1, .status = "DEAD"},
            {.id = 3, .aggregate_id = 1},  // waits behind 1: blocked
            {.id = 4, .aggregate_id = 2},  // older than its DEAD row: not blocked
            {.id = 5, .aggregate_id = 2, .status = "DEAD"},
            {.id = 6, .aggregate_id = 1, .status = "DEAD", .aggregate_type = "Payment"},
            {.id = 7,
             .aggregate_id = 1,
             .status = "SENDING",
             .due_in_s = 30,
             .aggregate_type = "Payment"}});
  auto store = env.NewStore();
  std::vector<DeadHead> heads;
  REQUIRE(store->DeadHeads(&heads).ok());
  std::map<AggregateKey, int64_t> got;
  for (const auto& h : heads) got[h.aggregate] = h.min_dead_id;
  CHECK(got ==
        std::map<AggregateKey, int64_t>{{{"Order", 1}, 1}, {{"Order", 2}, 5}, {{"Payment", 1}, 6}});
  int64_t blocked = 0;
  REQUIRE(store->CountBlockedAggregates(&blocked).ok());
  CHECK(blocked == 2);
}

STORE_CONTRACT("the window scan returns unsent rows from an id in id order with their flags") {
  TestType env;
  env.Seed({{.id = 1, .aggregate_id = 1, .status = "SENT"},
            {.id = 2, .aggregate_id = 2},
            {.id = 3, .aggregate_id = 3, .due_in_s = 300},
            {.id = 4, .aggregate_id = 4, .status = "SENDING", .due_in_s = -1},
            {.id = 5, .aggregate_id = 5, .status = "SENDING", .due_in_s = 60},
            {.id = 6, .aggregate_id = 6, .status = "DEAD"},
            {.id = 7, .aggregate_id = 7}});
  auto store = env.NewStore();
  std::vector<WindowRow> w;
  REQUIRE(store->ScanWindow(1, 100, &w).ok());
  REQUIRE(w.size() == 5);
  std::vector<int64_t> ids;
  for (const auto& r : w) ids.push_back(r.id);
  CHECK(ids == std::vector<int64_t>{2, 3, 4, 5, 7});
  CHECK((w[0].due && !w[0].sending));
  CHECK((!w[1].due && !w[1].sending));
  CHECK((w[2].due && w[2].sending));  // an expired lease is due
  CHECK((!w[3].due && w[3].sending));
  CHECK(w[4].aggregate == AggregateKey{"Order", 7});
  REQUIRE(store->ScanWindow(4, 2, &w).ok());
  REQUIRE(w.size() == 2);
  CHECK((w[0].id == 4 && w[1].id == 5));
  std::optional<int64_t> min;
  REQUIRE(store->MinPendingId(&min).ok());
  CHECK(min == 2);
  for (int64_t id : {2, 3, 4, 5, 7}) env.Set(id, "SENT", 0);
  REQUIRE(store->MinPendingId(&min).ok());
  CHECK_FALSE(min.has_value());
}

STORE_CONTRACT("a claim of chosen ids offers the claimable rows in id order and takes the chosen") {
  TestType env;
  env.Seed({{.id = 1, .aggregate_id = 1},
            {.id = 2, .aggregate_id = 2, .due_in_s = 60},
            {.id = 3, .aggregate_id = 3, .status = "SENDING", .due_in_s = -1},
            {.id = 4, .aggregate_id = 4, .status = "SENT"},
            {.id = 5, .aggregate_id = 5}});
  auto store = env.NewStore();
  std::vector<int64_t> offered;
  std::vector<bool> reclaimed;
  ClaimedBatch b;
  REQUIRE(store
              ->ClaimIds({5, 4, 3, 2, 1}, 30000,
                         [&](const std::vector<OutboxRow>& rows) {
                           for (const auto& r : rows) {
                             offered.push_back(r.id);
                             reclaimed.push_back(r.reclaimed);
                           }
                           return std::vector<int64_t>{5, 1};
                         },
                         &b, {})
              .ok());
  CHECK(offered == std::vector<int64_t>{1, 3, 5});
  CHECK(reclaimed == std::vector<bool>{false, true, false});
  CHECK(Ids(b.rows) == std::vector<int64_t>{1, 5});
  CHECK(b.reclaimed == 0);
  CHECK(env.Get(1).status == "SENDING");
  CHECK(env.Get(3).due);  // offered, not chosen: untouched
  // Choosing nothing claims nothing.
  REQUIRE(
      store->ClaimIds({3}, 30000, [](const auto&) { return std::vector<int64_t>{}; }, &b, {}).ok());
  CHECK(b.rows.empty());
  CHECK(b.lease_token.empty());
}

STORE_CONTRACT("the pass reads inside a snapshot see the table as it was when it began") {
  TestType env;
  env.Seed({{.id = 1, .aggregate_id = 1}});
  auto store = env.NewStore();
  REQUIRE(store->BeginSnapshot().ok());
  std::vector<WindowRow> w;
  REQUIRE(store->ScanWindow(1, 100, &w).ok());
  CHECK(w.size() == 1);
  env.Seed({{.id = 2, .aggregate_id = 2}, {.id = 3, .aggregate_id = 3, .status = "DEAD"}});
  env.Set(1, "SENT", 0);
  std::optional<int64_t> min;
  REQUIRE(store->MinPendingId(&min).ok());
  CHECK(min == 1);
  REQUIRE(store->ScanWindow(1, 100, &w).ok());
  CHECK((w.size() == 1 && w[0].id == 1));
  std::vector<DeadHead> heads;
  REQUIRE(store->DeadHeads(&heads).ok());
  CHECK(heads.empty());
  store->EndSnapshot();
  REQUIRE(store->ScanWindow(1, 100, &w).ok());
  CHECK((w.size() == 1 && w[0].id == 2));
}

STORE_CONTRACT("retention deletes SENT rows older than the cutoff and nothing else") {
  TestType env;
  env.GrantDelete();
  constexpr int64_t kDay = 86400;
  env.Seed({{.id = 1, .aggregate_id = 1, .status = "SENT", .created_ago_s = 10 * kDay},
            {.id = 2, .aggregate_id = 2, .status = "SENT", .created_ago_s = 10 * kDay},
            {.id = 3, .aggregate_id = 3, .status = "DEAD", .created_ago_s = 10 * kDay},
            {.id = 4, .aggregate_id = 4, .created_ago_s = 10 * kDay},
            {.id = 5, .aggregate_id = 5, .status = "SENT", .created_ago_s = kDay},
            {.id = 6, .aggregate_id = 6, .status = "SENT", .created_ago_s = kDay}});
  auto store = env.NewStore();
  int64_t cursor = std::numeric_limits<int64_t>::min(), deleted = 0, total = 0;
  bool done = false;
  for (int calls = 0; !done && calls < 10; ++calls) {
    REQUIRE(store->DeleteSentBatch(7, 2, &cursor, &deleted, &done).ok());
    CHECK(deleted <= 2);
    total += deleted;
  }
  CHECK(done);
  CHECK(total == 2);
  CHECK_FALSE(env.Get(1).exists);
  CHECK_FALSE(env.Get(2).exists);
  for (int64_t id : {3, 4, 5, 6}) CHECK(env.Get(id).exists);
}

STORE_CONTRACT("a claimed row carries its age at the claim on the database clock") {
  TestType env;
  env.Seed({{.id = 1, .aggregate_id = 1, .created_ago_s = 5},
            {.id = 2, .aggregate_id = 2, .created_ago_s = 3600}});
  auto store = env.NewStore();
  ClaimedBatch b;
  REQUIRE(store->ClaimDue(10, 30000, false, &b, {}).ok());
  REQUIRE(b.rows.size() == 2);
  // DATETIME has whole seconds: up to a second more, plus the test's own time.
  CHECK(b.rows[0].age_at_claim_us >= 5'000'000);
  CHECK(b.rows[0].age_at_claim_us < 7'000'000);
  CHECK(b.rows[1].age_at_claim_us >= 3600'000'000LL);
  CHECK(b.rows[1].age_at_claim_us < 3602'000'000LL);
}

STORE_CONTRACT("every call of a store whose database is unreachable fails as unavailable") {
  TestType env;
  auto store = env.NewUnreachableStore();
  bool due = false;
  ClaimedBatch b;
  SettleResult r;
  TableStats stats;
  std::optional<int64_t> min;
  std::vector<WindowRow> w;
  std::vector<Status> got = {store->Connect(),
                             store->HasDue(true, &due),
                             store->ClaimDue(10, 30000, true, &b, {}),
                             store->BeginSnapshot(),
                             store->MinPendingId(&min),
                             store->ScanWindow(1, 10, &w),
                             store->Settle("t", {{1, SettleKind::kSent, 0, ""}}, &r),
                             store->ReadStats(&stats)};
  for (const Status& s : got) {
    INFO(s.message());
    CHECK_FALSE(s.ok());
    CHECK(s.code() == StatusCode::kUnavailable);
  }
}

STORE_CONTRACT("a grouped SENT settle writes each claim's rows under its own lease, all at once") {
  TestType env;
  env.Seed({{.id = 1, .aggregate_id = 1},
            {.id = 2, .aggregate_id = 2},
            {.id = 3, .aggregate_id = 3},
            {.id = 4, .aggregate_id = 4}});
  auto store = env.NewStore();
  auto all = [](const std::vector<OutboxRow>& locked) { return Ids(locked); };
  // Three claims under three leases: three tokens (MysqlStore writes two per
  // statement, so the third goes in a second one, in one transaction).
  ClaimedBatch a, b, c;
  REQUIRE(store->ClaimIds({1, 2}, 30000, all, &a, {}).ok());
  REQUIRE(store->ClaimIds({3}, 60000, all, &b, {}).ok());
  REQUIRE(store->ClaimIds({4}, 90000, all, &c, {}).ok());
  REQUIRE(std::set<std::string>{a.lease_token, b.lease_token, c.lease_token}.size() == 3);
  env.Set(2, "SENDING", 120);  // taken over: another relay's lease now
  std::vector<SettleResult> r;
  REQUIRE(
      store->SettleSent({{a.lease_token, {1, 2}}, {b.lease_token, {3}}, {c.lease_token, {4}}}, &r)
          .ok());
  REQUIRE(r.size() == 3);
  CHECK(r[0].applied == 1);
  CHECK(r[0].stale == 1);
  CHECK(r[0].stale_ids == std::vector<int64_t>{2});
  CHECK(r[1].applied == 1);
  CHECK(r[1].stale == 0);
  CHECK(r[2].applied == 1);
  CHECK(env.Get(1).status == "SENT");
  CHECK(env.Get(2).status == "SENDING");
  CHECK(env.Get(3).status == "SENT");
  CHECK(env.Get(4).status == "SENT");
  // A row under one claim's token is not SENT under another's.
  ClaimedBatch d;
  env.Set(2, "NEW", -1);
  REQUIRE(store->ClaimIds({2}, 30000, all, &d, {}).ok());
  REQUIRE(store->SettleSent({{b.lease_token, {2}}}, &r).ok());
  CHECK(r[0].stale == 1);
  CHECK(env.Get(2).status == "SENDING");
}

STORE_CONTRACT("the head read: the due rows, or with ordered every unsent row and the DEAD heads") {
  TestType env;
  env.Seed({{.id = 1, .aggregate_id = 1, .status = "SENT"},
            {.id = 2, .aggregate_id = 2, .status = "DEAD"},
            {.id = 3, .aggregate_id = 3, .status = "SENDING", .due_in_s = 60},
            {.id = 4, .aggregate_id = 4, .due_in_s = 60},
            {.id = 5, .aggregate_id = 5, .status = "SENDING", .due_in_s = -5},
            {.id = 6, .aggregate_id = 6}});
  auto store = env.NewStore();
  HeadRead head;
  const HeadQuery due{false, false, 10, 30000};
  REQUIRE(store->ReadHead(due, &head).ok());
  CHECK(Ids(head.rows) == std::vector<int64_t>{5, 6});
  CHECK(head.complete(due));
  CHECK(head.rows[0].reclaimed);
  CHECK_FALSE(head.lease_token.empty());
  CHECK(head.dead_heads.empty());
  const HeadQuery unsent{true, true, 10, 30000};
  REQUIRE(store->ReadHead(unsent, &head).ok());
  REQUIRE(Ids(head.rows) == std::vector<int64_t>{3, 4, 5, 6});
  CHECK(head.rows[2].event_key == "k5");
  CHECK_FALSE(head.window[0].due);
  CHECK(head.window[0].sending);
  CHECK_FALSE(head.window[1].due);
  CHECK(head.window[2].due);
  CHECK(head.window[3].due);
  REQUIRE(head.dead_heads.size() == 1);
  CHECK(head.dead_heads[0].min_dead_id == 2);
  // A limit the rows reach: not complete, and a later read gives way to a pass.
  const HeadQuery two{true, false, 2, 30000};
  REQUIRE(store->ReadHead(two, &head).ok());
  CHECK(head.rows.size() == 2);
  CHECK_FALSE(head.complete(two));
}

STORE_CONTRACT("a row claimed by ClaimRow is SENDING under the head read's token, once") {
  TestType env;
  env.Seed({{.id = 1, .aggregate_id = 1},
            {.id = 2, .aggregate_id = 2, .status = "SENDING", .due_in_s = -5},
            {.id = 3, .aggregate_id = 3, .due_in_s = 60}});
  auto a = env.NewStore();
  auto b = env.NewStore();
  HeadRead head;
  REQUIRE(a->ReadHead({false, false, 10, 30000}, &head).ok());
  REQUIRE(Ids(head.rows) == std::vector<int64_t>{1, 2});
  bool claimed = false;
  REQUIRE(a->ClaimRow(1, head.lease_token, &claimed).ok());
  CHECK(claimed);
  CHECK(env.Get(1).status == "SENDING");
  CHECK_FALSE(env.Get(1).due);
  // Another relay read the same head: the row is no longer claimable.
  REQUIRE(b->ClaimRow(1, head.lease_token, &claimed).ok());
  CHECK_FALSE(claimed);
  // An expired lease is claimable; a row not due is not.
  REQUIRE(b->ClaimRow(2, head.lease_token, &claimed).ok());
  CHECK(claimed);
  REQUIRE(b->ClaimRow(3, head.lease_token, &claimed).ok());
  CHECK_FALSE(claimed);
  // The settle is fenced on the token the claim wrote.
  SettleResult r;
  REQUIRE(a->Settle(head.lease_token, {{1, SettleKind::kSent, 0, ""}}, &r).ok());
  CHECK(r.applied == 1);
  CHECK(env.Get(1).status == "SENT");
}
