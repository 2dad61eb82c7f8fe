#include "outbox/mysql_store.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <thread>

#include "fakes/fake_clock.h"
#include "support/settle_ops.h"
#include "support/test_env.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;

namespace {

// A fresh database `name` (plus `extra_columns`) with `events` NEW rows, one
// per aggregate, and a store that claimed them all (a 30 s lease).
struct ClaimedRows {
  ClaimedRows(const std::string& name, int events, const std::string& extra_columns = "")
      : db(name, extra_columns), store(db.mysql()) {
    db.InsertEvents(events, 1);
    REQUIRE(store.ClaimDue(10, 30000, false, &batch, {}).ok());
    REQUIRE(batch.rows.size() == static_cast<size_t>(events));
  }
  TestDatabase db;
  MysqlStore store;
  ClaimedBatch batch;
};

// A fresh database `name` with three NEW rows, one per aggregate, and two
// stores on it: two relays sharing the table.
struct TwoStores {
  explicit TwoStores(const std::string& name) : db(name), a(db.mysql()), b(db.mysql()) {
    db.InsertEvents(3, 1);
  }
  TestDatabase db;
  MysqlStore a, b;
};

// Rows `first` to `last`, one aggregate each, NEW and all due at the same
// moment (2020-01-01).
void InsertDue(TestDatabase& db, int64_t first, int64_t last) {
  db.Exec(
      "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload,"
      " status, next_retry_at, created_at, updated_at) SELECT seq, 'Order', seq, 'OrderCreated',"
      " CONCAT('k', seq), '{}', 'NEW', '2020-01-01 00:00:00', NOW(), NOW() FROM seq_" +
      std::to_string(first) + "_to_" + std::to_string(last));
}

// The ids of a batch's rows, in order.
std::vector<int64_t> Ids(const ClaimedBatch& b) {
  std::vector<int64_t> out;
  for (const auto& r : b.rows) out.push_back(r.id);
  return out;
}

// Kills the newest session of the relay's account other than the test's
// own (the store's), as a server restart, a failover or wait_timeout does;
// returns its ID. Not INNODB_TRX: InnoDB refreshes that view at most every
// 100 ms, so it can still show an earlier test's session.
int64_t KillStoreSession(TestDatabase& db) {
  const int64_t session =
      db.QueryInt("SELECT MAX(ID) FROM information_schema.PROCESSLIST WHERE USER = '" +
                  db.mysql().user + "' AND ID <> CONNECTION_ID()");
  REQUIRE(session > 0);
  db.Exec("KILL CONNECTION " + std::to_string(session));
  return session;
}

}  // namespace

TEST_CASE("a settle under a lease that was taken over is counted stale and not applied",
          "[store]") {
  TwoStores stores("store_fencing");
  auto& [db, a, b] = stores;
  ClaimedBatch first;
  REQUIRE(a.ClaimDue(10, 2000, false, &first, {}).ok());
  REQUIRE(first.rows.size() == 3);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENDING'") == 3);
  // The lease (2 s on the database clock) expires; another relay reclaims
  // the rows under a new token.
  std::this_thread::sleep_for(std::chrono::milliseconds(3100));
  ClaimedBatch second;
  REQUIRE(b.ClaimDue(10, 2000, true, &second, {}).ok());
  REQUIRE(second.rows.size() == 3);
  CHECK(second.reclaimed == 3);
  CHECK(second.lease_token != first.lease_token);
  // The first relay wakes up and settles: every transition is fenced.
  SettleResult r;
  std::vector<SettleOp> ops = {{first.rows[0].id, SettleKind::kSent, 0, ""},
                               {first.rows[1].id, SettleKind::kRetry, 1000, "boom"},
                               {first.rows[2].id, SettleKind::kDead, 0, "boom"}};
  REQUIRE(a.Settle(first.lease_token, ops, &r).ok());
  CHECK(r.applied == 0);
  CHECK(r.stale == 3);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENDING'") == 3);
  // The current holder settles normally.
  REQUIRE(b.Settle(second.lease_token, AllSent(second), &r).ok());
  CHECK(r.applied == 3);
  CHECK(r.stale == 0);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENT'") == 3);
}

TEST_CASE(
    "a claim made late in a second still holds its lease for at least lease_ms on the "
    "database clock",
    "[store]") {
  // next_retry_at has whole seconds. A deadline of NOW() (truncated) + 2 s
  // made late in a second lasted barely more than 1 s, while the publish
  // budget assumes the full lease (half of it to start a chain's messages,
  // half for the last one to time out): healthy relays' batches were taken
  // over while in flight.
  TestDatabase db("store_lease_floor");
  db.InsertEvents(4, 1);
  MysqlStore store(db.mysql());
  auto late_in_second = [&] {
    // Ids of the claims below are settled within milliseconds: start with
    // 0.2 s or more of the second left, so the claim stays in this second.
    REQUIRE(WaitFor([&] { return db.QueryInt("SELECT MICROSECOND(NOW(6))") / 100000 == 6; },
                    std::chrono::seconds(5)));
    return db.QueryString("SELECT DATE_FORMAT(NOW(6), '%Y-%m-%d %H:%i:%s.%f')");
  };
  auto lease_us = [&](const std::string& since, int64_t id) {
    return db.QueryInt("SELECT TIMESTAMPDIFF(MICROSECOND, '" + since +
                       "', next_retry_at) FROM t_outbox WHERE id = " + std::to_string(id));
  };
  for (int64_t id = 1; id <= 2; ++id) {  // the per_aggregate path
    std::string before = late_in_second();
    ClaimedBatch batch;
    REQUIRE(store
                .ClaimIds({id}, 2000,
                          [](const std::vector<OutboxRow>& rows) {
                            return std::vector<int64_t>{rows.at(0).id};
                          },
                          &batch, {})
                .ok());
    REQUIRE(batch.rows.size() == 1);
    INFO("claimed at or after " << before << ", token " << batch.lease_token);
    CHECK(lease_us(before, id) >= 2000000);
    CHECK(db.QueryString("SELECT DATE_FORMAT(next_retry_at, '%Y-%m-%d %H:%i:%s') FROM t_outbox "
                         "WHERE id = " +
                         std::to_string(id)) == batch.lease_token);
  }
  {  // the ordering: none path
    std::string before = late_in_second();
    ClaimedBatch batch;
    REQUIRE(store.ClaimDue(10, 2000, true, &batch, {}).ok());
    REQUIRE(batch.rows.size() == 2);
    INFO("claimed at or after " << before << ", token " << batch.lease_token);
    for (const auto& row : batch.rows) CHECK(lease_us(before, row.id) >= 2000000);
  }
}

TEST_CASE(
    "retry sets backoff and retry_count and release returns a row without counting an attempt",
    "[store]") {
  ClaimedRows rows("store_retry", 2, ", last_error varchar(16)");
  auto& [db, s, batch] = rows;
  SettleResult r;
  REQUIRE(s.Settle(batch.lease_token,
                   {{1, SettleKind::kRetry, 60000, "a long error message beyond sixteen"},
                    {2, SettleKind::kRelease, 0, ""}},
                   &r)
              .ok());
  CHECK(r.applied == 2);
  CHECK(db.QueryInt("SELECT retry_count FROM t_outbox WHERE id = 1") == 1);
  CHECK(db.QueryInt(
            "SELECT TIMESTAMPDIFF(SECOND, NOW(), next_retry_at) FROM t_outbox WHERE id = 1") >= 58);
  CHECK(db.QueryInt("SELECT CHAR_LENGTH(last_error) FROM t_outbox WHERE id = 1") == 16);
  CHECK(db.QueryInt("SELECT retry_count FROM t_outbox WHERE id = 2 AND status = 'NEW'") == 0);
  bool due = false;
  REQUIRE(s.HasDue(false, &due).ok());
  CHECK(due);
}

TEST_CASE(
    "a retry backoff shorter than a second still delays the row: next_retry_at is rounded up "
    "to the next whole second",
    "[store]") {
  // next_retry_at has whole seconds; NOW() + 300 ms used to be stored as
  // NOW() itself, so three attempts with a 500 ms backoff ran within 40 ms.
  ClaimedRows rows("store_subsecond_backoff", 3);
  auto& [db, s, batch] = rows;
  const char* kNowUs = "SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)";
  // Row id: its backoff (ms).
  const std::map<int64_t, int64_t> backoffs = {{1, 1}, {2, 300}, {3, 1500}};
  std::vector<SettleOp> retries;
  for (auto [id, backoff_ms] : backoffs)
    retries.push_back({id, SettleKind::kRetry, backoff_ms, "boom"});
  const int64_t before_us = db.QueryInt(kNowUs);
  SettleResult r;
  REQUIRE(s.Settle(batch.lease_token, retries, &r).ok());
  CHECK(r.applied == 3);
  const int64_t after_us = db.QueryInt(kNowUs);
  for (auto [id, backoff_ms] : backoffs) {
    INFO("row " << id << ", backoff " << backoff_ms << " ms");
    const int64_t due_us = db.QueryInt(
        "SELECT CAST(UNIX_TIMESTAMP(next_retry_at) AS SIGNED) * 1000000 FROM t_outbox "
        "WHERE id = " +
        std::to_string(id));
    CHECK(due_us % 1000000 == 0);
    // Due no sooner than the backoff after the settle ...
    CHECK(due_us >= before_us + backoff_ms * 1000);
    // ... and at most a second after it.
    CHECK(due_us <= after_us + backoff_ms * 1000 + 1000000);
  }
}

TEST_CASE("retention deletes old SENT rows only and in bounded chunks", "[store]") {
  TestDatabase db("store_retention");
  db.GrantDelete();
  std::string v;
  for (int i = 1; i <= 2500; ++i) {
    const char* status =
        i % 5 == 0 ? "NEW" : (i % 7 == 0 ? "DEAD" : (i % 11 == 0 ? "SENDING" : "SENT"));
    int days = i <= 2000 ? 10 : 1;
    if (!v.empty()) v += ",";
    v += "(" + std::to_string(i) + ",'Order'," + std::to_string(i) + ",'E','k" + std::to_string(i) +
         "','{}','" + status + "',NOW(),NOW() - INTERVAL " + std::to_string(days) + " DAY,NOW())";
  }
  db.Exec(
      "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload,"
      " status, next_retry_at, created_at, updated_at) VALUES " +
      v);
  int64_t old_sent = db.QueryInt(
      "SELECT COUNT(*) FROM t_outbox WHERE status = 'SENT' AND created_at < NOW() - INTERVAL 7 "
      "DAY");
  int64_t total = db.QueryInt("SELECT COUNT(*) FROM t_outbox");
  MysqlStore s(db.mysql());
  int64_t cursor = std::numeric_limits<int64_t>::min(), deleted = 0, sum = 0;
  bool done = false;
  int chunks = 0;
  while (!done) {
    REQUIRE(s.DeleteSentBatch(7, 300, &cursor, &deleted, &done).ok());
    CHECK(deleted <= 300);
    sum += deleted;
    ++chunks;
  }
  CHECK(sum == old_sent);
  CHECK(chunks >= 7);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox") == total - old_sent);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status <> 'SENT' AND created_at < NOW() - "
                    "INTERVAL 7 DAY") > 0);
}

TEST_CASE("the window scan finds sparse and dense unsent rows in id order across SENT runs",
          "[store][ordering]") {
  TestDatabase db("store_scan_window");
  db.InsertEvents(3000, 1);
  // Unsent rows: one waiting out a backoff at the start, a few scattered,
  // one SENDING; everything else SENT.
  db.Exec("UPDATE t_outbox SET status = 'SENT'");
  db.Exec(
      "UPDATE t_outbox SET status = 'NEW', next_retry_at = NOW() + INTERVAL 5 MINUTE WHERE id = 1");
  db.Exec("UPDATE t_outbox SET status = 'NEW' WHERE id IN (700, 1500, 2999)");
  db.Exec(
      "UPDATE t_outbox SET status = 'SENDING', next_retry_at = NOW() - INTERVAL 1 SECOND "
      "WHERE id = 2000");
  MysqlStore store(db.mysql());
  REQUIRE(store.Connect().ok());

  auto scan = [&](int64_t from, int limit) {
    std::vector<WindowRow> rows;
    REQUIRE(store.ScanWindow(from, limit, &rows).ok());
    std::vector<int64_t> ids;
    for (const auto& r : rows) ids.push_back(r.id);
    return std::make_pair(ids, rows);
  };
  // Few unsent rows: all of them, sorted, with their flags.
  auto [ids, rows] = scan(1, 100);
  CHECK(ids == std::vector<int64_t>{1, 700, 1500, 2000, 2999});
  CHECK_FALSE(rows[0].due);
  CHECK(rows[1].due);
  CHECK(rows[3].sending);
  CHECK(rows[3].due);  // lease expired
  CHECK(scan(701, 100).first == std::vector<int64_t>{1500, 2000, 2999});

  // More unsent rows than a page: pages by primary key, same order.
  db.Exec("UPDATE t_outbox SET status = 'NEW' WHERE id BETWEEN 2100 AND 2400");
  std::vector<int64_t> all;
  for (int64_t from = 1;;) {
    auto page = scan(from, 50).first;
    all.insert(all.end(), page.begin(), page.end());
    if (page.size() < 50) break;
    from = page.back() + 1;
  }
  std::vector<int64_t> want = {1, 700, 1500, 2000};
  for (int64_t id = 2100; id <= 2400; ++id) want.push_back(id);
  want.push_back(2999);
  CHECK(all == want);
}

TEST_CASE(
    "a claim resumes after the rows the last full batch took and still finds a row "
    "committed behind them",
    "[store]") {
  TestDatabase db("store_claim_resume");
  InsertDue(db, 100, 109);
  MysqlStore s(db.mysql());
  ClaimedBatch b;
  REQUIRE(s.ClaimDue(5, 30000, false, &b, {}).ok());
  CHECK(Ids(b) == std::vector<int64_t>{100, 101, 102, 103, 104});
  // Committed after that claim, with the same next_retry_at and a smaller id:
  // behind the position the next claim resumes from.
  InsertDue(db, 50, 50);
  REQUIRE(s.ClaimDue(5, 30000, false, &b, {}).ok());
  CHECK(Ids(b) == std::vector<int64_t>{105, 106, 107, 108, 109});
  // The range ahead is empty: a short batch, so the next claim starts over.
  REQUIRE(s.ClaimDue(5, 30000, false, &b, {}).ok());
  CHECK(b.rows.empty());
  REQUIRE(s.ClaimDue(5, 30000, false, &b, {}).ok());
  CHECK(Ids(b) == std::vector<int64_t>{50});
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENDING'") == 11);
}

TEST_CASE("a claim with include_expired or on a new session scans the due rows from the start",
          "[store]") {
  TestDatabase db("store_claim_rescan");
  InsertDue(db, 100, 109);
  MysqlStore s(db.mysql());
  ClaimedBatch b;
  REQUIRE(s.ClaimDue(5, 30000, false, &b, {}).ok());
  REQUIRE(b.rows.size() == 5);
  InsertDue(db, 50, 50);
  bool include_expired = false;
  SECTION("include_expired") { include_expired = true; }
  SECTION("a new session") {
    // The store's session is lost between two claims (a server restart, a
    // failover, wait_timeout): the first statement after it fails.
    const int64_t session = KillStoreSession(db);
    REQUIRE(WaitFor(
        [&] {
          return db.QueryInt("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = " +
                             std::to_string(session)) == 0;
        },
        std::chrono::seconds(10)));
    CHECK_FALSE(s.ClaimDue(5, 30000, false, &b, {}).ok());
  }
  REQUIRE(s.ClaimDue(5, 30000, include_expired, &b, {}).ok());
  REQUIRE(!b.rows.empty());
  CHECK(b.rows.front().id == 50);
}

TEST_CASE("the DEAD heads follow every change of the DEAD rows while the grouping is cached",
          "[store][ordering]") {
  TestDatabase db("store_dead_heads");
  db.InsertEvents(20, 3);
  MysqlStore store(db.mysql());
  REQUIRE(store.Connect().ok());
  // The oracle: the grouping itself, straight from the table.
  auto expected = [&] {
    std::map<std::pair<std::string, int64_t>, int64_t> out;
    for (int64_t id = 1; id <= 60; ++id) {
      if (db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'DEAD' AND id = " +
                      std::to_string(id)) == 0)
        continue;
      int64_t agg =
          db.QueryInt("SELECT aggregate_id FROM t_outbox WHERE id = " + std::to_string(id));
      out.try_emplace({"Order", agg}, id);
    }
    return out;
  };
  auto heads = [&] {
    std::vector<DeadHead> got;
    REQUIRE(store.DeadHeads(&got).ok());
    std::map<std::pair<std::string, int64_t>, int64_t> out;
    for (const auto& h : got) out[{h.aggregate.type, h.aggregate.id}] = h.min_dead_id;
    return out;
  };
  CHECK(heads().empty());
  db.Exec("UPDATE t_outbox SET status = 'DEAD' WHERE id IN (5, 9, 30)");
  CHECK(heads() == expected());
  CHECK(heads() == expected());  // unchanged: served from the cache
  db.Exec("UPDATE t_outbox SET status = 'DEAD' WHERE id = 2");
  CHECK(heads() == expected());
  // One row replayed and another dead between two reads: same count.
  db.Exec("UPDATE t_outbox SET status = 'NEW' WHERE id = 5");
  db.Exec("UPDATE t_outbox SET status = 'DEAD' WHERE id = 7");
  CHECK(heads() == expected());
  db.Exec("UPDATE t_outbox SET status = 'NEW' WHERE status = 'DEAD'");
  CHECK(heads().empty());
}

TEST_CASE("a claim hands its batch to before_commit while the rows are locked and uncommitted",
          "[store]") {
  TwoStores stores("store_before_commit");
  auto& [db, a, b] = stores;
  for (bool per_aggregate : {false, true}) {
    INFO((per_aggregate ? "ClaimIds" : "ClaimDue"));
    std::vector<int64_t> handed;
    std::string status_seen;
    size_t peer_claimed = 99;
    int early_stale = -1;
    auto before_commit = [&](const ClaimedBatch& claimed) {
      handed = Ids(claimed);
      // Not committed: others read the rows as they were, and a peer's
      // claim skips them (locked).
      status_seen = db.QueryString("SELECT GROUP_CONCAT(DISTINCT status) FROM t_outbox");
      ClaimedBatch peer;
      REQUIRE(b.ClaimDue(10, 30000, true, &peer, {}).ok());
      peer_claimed = peer.rows.size();
      // A settle now does not wait for the claim: under READ COMMITTED its
      // UPDATE reads the rows' committed version (NEW), skips them and is
      // stale. That is why the relay settles a batch only after its claim
      // ended (SettleGate).
      SettleResult early;
      REQUIRE(b.Settle(claimed.lease_token, AllSent(claimed), &early).ok());
      early_stale = early.stale;
    };
    ClaimedBatch batch;
    if (per_aggregate) {
      REQUIRE(a.ClaimIds(
                   {1, 2, 3}, 30000,
                   [](const auto&) {
                     return std::vector<int64_t>{1, 2, 3};
                   },
                   &batch, before_commit)
                  .ok());
    } else {
      REQUIRE(a.ClaimDue(10, 30000, false, &batch, before_commit).ok());
    }
    CHECK(handed == std::vector<int64_t>{1, 2, 3});
    CHECK(Ids(batch) == handed);
    CHECK(status_seen == "NEW");
    CHECK(peer_claimed == 0);
    CHECK(early_stale == 3);
    CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENDING'") == 3);
    db.Exec("UPDATE t_outbox SET status = 'NEW', next_retry_at = NOW(6) - INTERVAL 1 SECOND");
  }
  // Nothing claimed: before_commit is not called.
  db.Exec("UPDATE t_outbox SET status = 'SENT'");
  bool called = false;
  ClaimedBatch none;
  REQUIRE(a.ClaimDue(10, 30000, false, &none, [&](const auto&) { called = true; }).ok());
  REQUIRE(a.ClaimIds(
               {1}, 30000, [](const auto&) { return std::vector<int64_t>{1}; }, &none,
               [&](const auto&) { called = true; })
              .ok());
  CHECK_FALSE(called);
}

TEST_CASE("a claim whose commit fails after before_commit leaves the rows to the next claim",
          "[store]") {
  TwoStores stores("store_commit_lost");
  auto& [db, a, b] = stores;
  ClaimedBatch handed;
  // The claim's session is lost while its batch is being published: the
  // server rolls the claim back.
  auto kill_claim = [&](const ClaimedBatch& claimed) {
    handed = claimed;
    // The claim's session: the only one of the relay's account other than
    // ours (b has not connected).
    (void)KillStoreSession(db);
  };
  ClaimedBatch batch;
  const Status s = a.ClaimDue(10, 30000, false, &batch, kill_claim);
  CHECK_FALSE(s.ok());
  INFO(s.message());
  CHECK(s.code() == StatusCode::kUnavailable);
  REQUIRE(handed.rows.size() == 3);
  // The batch's settle (after its messages were acknowledged) finds the rows
  // not its own: nothing is marked SENT that no claim of ours holds.
  SettleResult r;
  REQUIRE(a.Settle(handed.lease_token, AllSent(handed), &r).ok());
  CHECK(r.applied == 0);
  CHECK(r.stale == 3);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'NEW'") == 3);
  // KILL returns before the killed session has rolled back; until it has,
  // its row locks make the next claim skip the rows (SKIP LOCKED).
  REQUIRE(WaitFor(
      [&] {
        return db.QueryInt(
                   "SELECT COUNT(*) FROM (SELECT id FROM t_outbox FOR UPDATE SKIP LOCKED) "
                   "AS unlocked") == 3;
      },
      std::chrono::seconds(10)));
  // And the next claim takes them again: a duplicate, never a loss.
  ClaimedBatch again;
  REQUIRE(b.ClaimDue(10, 30000, false, &again, {}).ok());
  CHECK(Ids(again) == std::vector<int64_t>{1, 2, 3});
}

TEST_CASE(
    "a session closed while idle by wait_timeout or a proxy is replaced before the next call fails",
    "[store]") {
  TestDatabase db("store_idle_closed");
  db.InsertEvents(3, 1);
  // The store decides idleness on its injected clock: the test advances it
  // instead of sleeping.
  auto clock = std::make_shared<FakeClock>();
  MysqlStore store(db.mysql(), clock);
  REQUIRE(store.Connect().ok());
  TableStats stats;
  REQUIRE(store.ReadStats(&stats).ok());
  // The store's session: the newest of the relay's account, other than ours.
  INFO("sessions: " << db.QueryString(
           "SELECT GROUP_CONCAT(CONCAT_WS(' ', ID, USER, HOST, DB, COMMAND) SEPARATOR '; ') "
           "FROM information_schema.PROCESSLIST"));
  // What a server with wait_timeout=1 does to a relay polling every 5 s: the
  // next statement used to fail with "2006 Server has gone away", logged as a
  // failed poll with outbox_database_up 0, on every poll.
  (void)KillStoreSession(db);
  clock->Advance(std::chrono::milliseconds(1500));  // idle past the ping threshold
  CHECK(store.ReadStats(&stats).ok());
  CHECK(stats.backlog == 3);
  bool due = false;
  CHECK(store.HasDue(false, &due).ok());
  CHECK(due);
}

TEST_CASE("a claimed row's age comes from the database clock whatever the relay host's clock says",
          "[store]") {
  TestDatabase db("store_age_at_claim");
  // created_at 5 s ago, and outside TIMESTAMP's range on both sides, where
  // UNIX_TIMESTAMP(created_at) gives NULL or 0.
  db.Exec(
      "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload,"
      " status, next_retry_at, created_at, updated_at) VALUES"
      " (1, 'Order', 1, 'E', 'k1', '{}', 'NEW', NOW(), NOW() - INTERVAL 5 SECOND, NOW()),"
      " (2, 'Order', 2, 'E', 'k2', '{}', 'NEW', NOW(), '1960-01-01 00:00:00', NOW()),"
      " (3, 'Order', 3, 'E', 'k3', '{}', 'NEW', NOW(), '2100-01-01 00:00:00', NOW())");
  // A relay host whose clock says 1970 (and never moves): nothing in the
  // age may come from it.
  MysqlStore store(db.mysql(), std::make_shared<FakeClock>(0.0));
  ClaimedBatch b;
  REQUIRE(store.ClaimDue(10, 30000, false, &b, {}).ok());
  REQUIRE(b.rows.size() == 3);
  std::map<int64_t, int64_t> age;
  for (const auto& r : b.rows) age[r.id] = r.age_at_claim_us;
  // DATETIME holds whole seconds: 5 s, up to a second more, plus the claim's time.
  CHECK(age[1] >= 5'000'000);
  CHECK(age[1] < 6'500'000);
  auto db_age = [&](const char* created_at) {
    return db.QueryInt(std::string("SELECT TIMESTAMPDIFF(MICROSECOND, '") + created_at +
                       "', NOW(6))");
  };
  const int64_t year_us = 365LL * 86400 * 1'000'000;
  CHECK(age[2] > 60 * year_us);
  CHECK(std::abs(age[2] - db_age("1960-01-01 00:00:00")) < 2'000'000);
  CHECK(age[3] < -70 * year_us);  // created in the future: a negative age, not 0 or NULL
  CHECK(std::abs(age[3] - db_age("2100-01-01 00:00:00")) < 2'000'000);
}

TEST_CASE("the store's failures say whether the database is down or the table is wrong",
          "[store]") {
  TestDatabase db("store_status_codes");
  MysqlConfig missing = db.mysql();
  missing.table = "t_missing";
  MysqlStore no_table(missing);
  Status s = no_table.Connect();
  CHECK(s.code() == StatusCode::kSchema);
  CHECK(s.message().find("t_missing does not exist") != std::string::npos);
  // Nothing listens on port 1: the connection is refused at once.
  MysqlConfig down = db.mysql();
  down.port = 1;
  down.connect_timeout_ms = 1000;
  MysqlStore unreachable(down);
  bool due = false;
  s = unreachable.HasDue(false, &due);
  INFO(s.message());
  CHECK(s.code() == StatusCode::kUnavailable);
  CHECK(s.message().find("MySQL error 200") != std::string::npos);
  CHECK(s.message().find("reachable at mysql.host:mysql.port") != std::string::npos);
  MysqlConfig wrong = db.mysql();
  wrong.password = "wrong-pw-for-test";
  MysqlStore denied(wrong);
  s = denied.Connect();
  INFO(s.message());
  CHECK(s.code() == StatusCode::kPermission);
  CHECK(s.message().find("MySQL error 1045 (28000)") != std::string::npos);
  CHECK(s.message().find("wrong-pw-for-test") == std::string::npos);
}
