// The binlog wake-up against the test MariaDB (scripts/test starts it with
// the binary log on, binlog_format=MIXED): docs/BINLOG.md.
#include "binlog/binlog_stream.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "binlog/binlog_check.h"
#include "binlog/binlog_streams.h"
#include "binlog/binlog_wakeup_source.h"
#include "relay/claim_scheduler.h"
#include "support/binlog_test_support.h"
#include "support/tcp_proxy.h"
#include "support/test_env.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

// A hub subscription waiting until its stream is up.
binlog::SubscriptionPtr SubscribeUp(binlog::BinlogStreams& hub, const binlog::BinlogOptions& o,
                                    const std::string& db, const std::string& table, Waker& w) {
  auto sub = hub.Subscribe(o, db, table, w.Callback());
  REQUIRE(WaitFor([&] { return sub->up(); }, 10s, 10ms));
  return sub;
}

// Restores binlog_format on the way out.
class GlobalFormat {
 public:
  explicit GlobalFormat(const std::string& format) {
    SqlClient admin("mysql");
    old_ = std::to_string(admin.QueryInt("SELECT @@GLOBAL.binlog_format = 'ROW'"));
    admin.Exec("SET GLOBAL binlog_format = '" + format + "'");
  }
  ~GlobalFormat() {
    try {
      SqlClient("mysql").Exec(std::string("SET GLOBAL binlog_format = '") +
                              (old_ == "1" ? "ROW" : "MIXED") + "'");
    } catch (...) {
    }
  }

 private:
  std::string old_;
};

}  // namespace

TEST_CASE("binlog: an insert into a watched table wakes its subscriber with ROW", "[binlog]") {
  RequireLogBin();
  TestDatabase db("binlog_row_wake");
  db.Exec("CREATE TABLE t_other (id INT PRIMARY KEY)");
  GlobalFormat row("ROW");
  db.Exec("SET SESSION binlog_format = 'ROW'");  // the session predates the global change
  binlog::BinlogStreams hub;
  Waker w;
  auto sub = SubscribeUp(hub, TestBinlogOptions(), "binlog_row_wake", "t_outbox", w);
  CHECK(sub->state().format == "ROW");
  CHECK(sub->state().table_granularity);
  const int before = w.count();
  const int inserts = w.inserts();
  db.InsertEvents(1, 1);
  CHECK(w.WaitAbove(before, 5s));
  CHECK(w.inserts() == inserts + 1);  // WRITE_ROWS: may have inserted rows

  SECTION("binlog: no wake-up for another table of the same database") {
    const int seen = w.count();
    db.Exec("INSERT INTO t_other VALUES (1)");
    // A marker commit to the watched table proves the stream read past it.
    db.InsertEvents(1, 1, 100, "Marker");
    REQUIRE(w.WaitAbove(seen, 5s));
    std::this_thread::sleep_for(200ms);
    CHECK(w.count() == seen + 1);
  }
}

TEST_CASE(
    "binlog: with MIXED a statement in the database wakes it and the state says database "
    "granularity",
    "[binlog]") {
  RequireLogBin();
  TestDatabase db("binlog_mixed_wake");
  TestDatabase other("binlog_mixed_other");
  db.Exec("CREATE TABLE t_other (id INT PRIMARY KEY)");
  GlobalFormat mixed("MIXED");
  db.Exec("SET SESSION binlog_format = 'MIXED'");  // the session predates the global change
  binlog::BinlogStreams hub;
  Waker w, w_other;
  auto sub = SubscribeUp(hub, TestBinlogOptions(), "binlog_mixed_wake", "t_outbox", w);
  auto sub_other = SubscribeUp(hub, TestBinlogOptions(), "binlog_mixed_other", "t_outbox", w_other);
  CHECK(sub->state().format == "MIXED");
  CHECK_FALSE(sub->state().table_granularity);
  int seen = w.count();
  const int other_seen = w_other.count();
  db.Exec("INSERT INTO t_other VALUES (1)");  // statement format, default database
  CHECK(w.WaitAbove(seen, 5s));
  seen = w.count();
  // From a session whose default database is another one: named in the text.
  SqlClient client("binlog_mixed_other");
  client.Exec("INSERT INTO binlog_mixed_wake.t_other VALUES (2)");
  CHECK(w.WaitAbove(seen, 5s));
  // binlog_mixed_other was the default database of that session: woken too
  // (coarser, still correct).
  CHECK(w_other.WaitAbove(other_seen, 5s));
}

TEST_CASE("binlog: one stream serves many subscribers on one server", "[binlog]") {
  RequireLogBin();
  GlobalFormat row("ROW");
  constexpr int kServices = 12;
  std::vector<std::unique_ptr<TestDatabase>> dbs;
  std::vector<std::unique_ptr<Waker>> wakers;
  binlog::BinlogStreams hub;
  std::vector<binlog::SubscriptionPtr> subs;
  for (int i = 0; i < kServices; ++i) {
    dbs.push_back(std::make_unique<TestDatabase>("binlog_many_" + std::to_string(i)));
    wakers.push_back(std::make_unique<Waker>());
    subs.push_back(
        SubscribeUp(hub, TestBinlogOptions(), dbs.back()->name(), "t_outbox", *wakers.back()));
  }
  CHECK(hub.StreamsForTesting().size() == 1);
  SqlClient admin("mysql");
  // Registered: SHOW SLAVE HOSTS lists its server_id (and "outbox-relay binlog-test").
  CHECK(admin.QueryInt("SHOW SLAVE HOSTS") ==
        static_cast<int64_t>(binlog::EffectiveServerId(TestBinlogOptions())));
  CHECK(admin.QueryInt("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE "
                       "'Binlog Dump%'") == 1);
  // The subscriptions came one by one while the tables were created: on a
  // loaded machine the stream may still be delivering what came before. A
  // marker first, so that the counts start from a stream that has read and
  // delivered everything before it.
  const int settled = wakers[0]->count();
  dbs[0]->InsertEvents(1, 1);
  REQUIRE(wakers[0]->WaitAbove(settled, 5s));
  std::vector<int> before;
  for (auto& w : wakers) before.push_back(w->count());
  dbs[5]->InsertEvents(1, 1);
  REQUIRE(wakers[5]->WaitAbove(before[5], 5s));
  dbs[0]->InsertEvents(1, 1, 2, "Marker");  // the stream read past the first commit
  REQUIRE(wakers[0]->WaitAbove(before[0], 5s));
  for (int i = 1; i < kServices; ++i)
    if (i != 5) CHECK(wakers[i]->count() == before[i]);
}

TEST_CASE("binlog: a BinlogWakeupSource ends its wait on a commit and says while its stream is up",
          "[binlog]") {
  RequireLogBin();
  TestDatabase db("binlog_wakeup_seam");
  binlog::BinlogStreams hub;
  binlog::BinlogWakeupSource wakeup(DefaultClock(), hub, TestBinlogOptions(), "binlog_wakeup_seam",
                                    "t_outbox");
  REQUIRE(WaitFor([&] { return wakeup.binlog_up(); }, 10s, 10ms));
  while (wakeup.WaitUntil(DefaultClock()->Now() + 50ms) != WakeCause::kDeadline) {
  }  // the up transition's wake-up, consumed
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    SqlClient("binlog_wakeup_seam")
        .Exec(
            "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, "
            "payload, status, next_retry_at, created_at, updated_at) VALUES (1, 'A', 1, 'E', "
            "'k1', '{}', 'NEW', NOW(), NOW(), NOW())");
  });
  CHECK(wakeup.WaitUntil(DefaultClock()->Now() + 10s) == WakeCause::kInsert);
  writer.join();
  // The row's claim, an UPDATE: a wake-up without the commit-race retry.
  SqlClient("binlog_wakeup_seam").Exec("UPDATE t_outbox SET status = 'SENDING' WHERE id = 1");
  CHECK(wakeup.WaitUntil(DefaultClock()->Now() + 10s) == WakeCause::kChange);
}

TEST_CASE("binlog: the stream follows FLUSH BINARY LOGS into the next file", "[binlog]") {
  RequireLogBin();
  TestDatabase db("binlog_rotate");
  binlog::BinlogStreams hub;
  Waker w;
  auto sub = SubscribeUp(hub, TestBinlogOptions(), "binlog_rotate", "t_outbox", w);
  const std::string file = sub->state().file;
  db.Exec("FLUSH BINARY LOGS");
  db.Exec("FLUSH BINARY LOGS");
  const int seen = w.count();
  db.InsertEvents(1, 1);
  CHECK(w.WaitAbove(seen, 5s));
  CHECK(sub->state().connects == 1);
  CHECK(sub->state().file != file);
}

TEST_CASE("binlog: idle the stream reports progress through heartbeats", "[binlog]") {
  RequireLogBin();
  std::atomic<int> progress{0};
  binlog::BinlogOptions o = TestBinlogOptions();
  o.on_progress = [&] { ++progress; };
  binlog::BinlogStream stream(o, nullptr, nullptr);
  stream.Start();
  REQUIRE(WaitFor([&] { return stream.up(); }, 10s, 10ms));
  const int at_up = progress.load();
  const uint64_t heartbeats = stream.state().heartbeats;
  CHECK(WaitFor([&] { return stream.state().heartbeats >= heartbeats + 2; }, 5s, 10ms));
  CHECK(progress.load() > at_up);
}

namespace {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// One row per iteration, autocommit; the wake-up latency from the start of
// the INSERT to the callback, and how often a claim-style locking read right
// after the wake-up still misses the row (the commit race).
void MeasureLatency(const std::string& format) {
  const std::string name = "binlog_latency_" + format;
  TestDatabase db(name);
  db.Exec("SET SESSION binlog_format = '" + format + "'");
  GlobalFormat global(format);
  SqlClient claimer(name);
  binlog::BinlogStreams hub;
  Waker w;
  auto sub = SubscribeUp(hub, TestBinlogOptions(), name, "t_outbox", w);
  constexpr int kRows = 300;
  std::vector<double> latency_ms, race_ms;
  int raced = 0, before_return = 0, missed_after_retry = 0, max_attempts = 0;
  std::atomic<int> probed{0};
  // The claimer reacts on its own thread, as a relay's loop would: on each
  // wake-up at once a claim-style locking read of the new row.
  std::thread prober([&] {
    int seen = w.count();
    for (int i = 1; i <= kRows; ++i) {
      if (!w.WaitAbove(seen, 5s)) return;
      seen = w.count();
      const auto woke = std::chrono::steady_clock::now();
      const std::string probe = "SELECT COUNT(*) FROM t_outbox WHERE id = " + std::to_string(i) +
                                " FOR UPDATE SKIP LOCKED";
      if (claimer.QueryInt(probe) == 0) {
        ++raced;
        // The relay's bounded retry (kCommitRaceRetry in
        // src/relay/claim_scheduler.h), then wait it out.
        int attempts = 1;
        int64_t got = claimer.QueryInt(probe);
        for (size_t p = 0; got == 0 && p < kCommitRaceRetry.size(); ++p, ++attempts) {
          std::this_thread::sleep_for(kCommitRaceRetry[p]);
          got = claimer.QueryInt(probe);
        }
        if (got == 0) ++missed_after_retry;
        max_attempts = std::max(max_attempts, attempts);
        while (claimer.QueryInt(probe) == 0) std::this_thread::sleep_for(100us);
        race_ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - woke)
                .count());
      }
      probed = i;
    }
  });
  for (int i = 1; i <= kRows; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    db.Exec(
        "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, "
        "payload, status, next_retry_at, created_at, updated_at) VALUES (" +
        std::to_string(i) + ", 'A', 1, 'E', 'k" + std::to_string(i) +
        "', '{}', 'NEW', NOW(), NOW(), NOW())");
    const auto returned = std::chrono::steady_clock::now();
    REQUIRE(WaitFor([&] { return probed.load() >= i; }, 10s, 10ms));
    const auto woke = w.last();
    if (woke < returned) ++before_return;
    latency_ms.push_back(std::chrono::duration<double, std::milli>(woke - t0).count());
    std::this_thread::sleep_for(10ms);
  }
  prober.join();
  std::cout << "binlog wake-up latency, binlog_format=" << format << ", " << kRows
            << " single-row autocommit INSERTs: p50 " << Percentile(latency_ms, 0.5) << " ms, p99 "
            << Percentile(latency_ms, 0.99) << " ms, max " << Percentile(latency_ms, 1.0) << " ms; "
            << before_return
            << " wake-ups came before the INSERT returned; a locking read (SKIP LOCKED) right "
               "after the wake-up missed the row "
            << raced << " times, visible after at most " << Percentile(race_ms, 1.0)
            << " ms; the commit-race retry found it after at most " << max_attempts
            << " claims and missed it " << missed_after_retry << " times\n";
}

}  // namespace

// A measurement, not a test of speed: it asserts only that every INSERT
// woke the subscriber. Hidden from ctest; run it by hand:
//   build/tests/binlog_tests "[.binlog-latency]"   (docs/BINLOG.md)
TEST_CASE("binlog: wake-up latency is measured for ROW and MIXED", "[.binlog-latency]") {
  RequireLogBin();
  MeasureLatency("ROW");
  MeasureLatency("MIXED");
}

TEST_CASE(
    "binlog: the stream connects with verify_identity against the test CA and refuses another CA",
    "[binlog][local-db]") {
  RequireLogBin();
  const char* dir = std::getenv("OUTBOX_TEST_MYSQL_TLS_DIR");
  if (!dir) FAIL("OUTBOX_TEST_MYSQL_TLS_DIR is unset: scripts/test starts MariaDB with TLS");
  binlog::BinlogOptions o = TestBinlogOptions();
  o.mysql.tls.mode = outbox::TlsMode::kVerifyIdentity;
  o.mysql.tls.ca = std::string(dir) + "/ca.pem";
  {
    binlog::BinlogStream stream(o, nullptr, nullptr);
    stream.Start();
    CHECK(WaitFor([&] { return stream.up(); }, 10s, 10ms));
  }
  o.mysql.tls.ca = std::string(dir) + "/other-ca.pem";
  binlog::BinlogStream stream(o, nullptr, nullptr);
  stream.Start();
  CHECK(WaitFor([&] { return stream.state().problem == StreamProblem::kConnect; }, 10s, 10ms));
  CHECK_FALSE(stream.up());
}

TEST_CASE("binlog: a destroyed subscription is never woken again while the others still are",
          "[binlog]") {
  RequireLogBin();
  TestDatabase db("binlog_unsubscribe");
  binlog::BinlogStreams hub;
  Waker kept;
  auto keep = SubscribeUp(hub, TestBinlogOptions(), "binlog_unsubscribe", "t_outbox", kept);
  auto gone_waker = std::make_unique<Waker>();
  auto gone = SubscribeUp(hub, TestBinlogOptions(), "binlog_unsubscribe", "t_outbox", *gone_waker);
  gone.reset();
  gone_waker.reset();  // a call after the unsubscribe would touch freed memory
  const int seen = kept.count();
  db.InsertEvents(1, 1);
  CHECK(kept.WaitAbove(seen, 5s));
  CHECK(hub.StreamsForTesting().size() == 1);
}

namespace {
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}
}  // namespace

// A measurement, not a test of speed (hidden from ctest; docs/BINLOG.md):
// the stream thread's CPU time per committed transaction and per row while
// a writer commits as fast as it can, in small and in large transactions.
TEST_CASE("binlog: the stream thread's CPU cost per transaction is measured", "[.binlog-cost]") {
  RequireLogBin();
  TestDatabase db("binlog_cost");
  db.Exec("SET SESSION binlog_format = 'ROW'");
  std::atomic<double> cpu_ms{0};
  binlog::BinlogOptions o = TestBinlogOptions();
  o.on_progress = [&] { cpu_ms = ThreadCpuMs(); };  // runs on the stream's thread
  std::atomic<uint64_t> commits{0};
  binlog::BinlogStream stream(
      o, [&](const binlog::Commit&) { ++commits; }, nullptr);
  stream.Start();
  REQUIRE(WaitFor([&] { return stream.up(); }, 10s, 10ms));
  for (int rows_per_txn : {1, 100}) {
    const int txns = rows_per_txn == 1 ? 3000 : 200;
    const double cpu0 = cpu_ms.load();
    const uint64_t c0 = commits.load();
    const auto t0 = std::chrono::steady_clock::now();
    int64_t id = rows_per_txn * 1000000;
    for (int t = 0; t < txns; ++t) {
      std::string values;
      for (int r = 0; r < rows_per_txn; ++r, ++id)
        values += std::string(values.empty() ? "" : ",") + "(" + std::to_string(id) +
                  ",'A',1,'E','k" + std::to_string(id) + "','{}','NEW',NOW(),NOW(),NOW())";
      db.Exec(
          "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, "
          "payload, status, next_retry_at, created_at, updated_at) VALUES " +
          values);
    }
    REQUIRE(WaitFor([&] { return commits.load() >= c0 + txns; }, 60s, 10ms));
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double used = cpu_ms.load() - cpu0;
    std::cout << "binlog stream CPU, ROW, " << txns << " transactions of " << rows_per_txn
              << " row(s) in " << secs << " s (" << txns / secs << " commits/s): " << used
              << " ms CPU, " << used * 1000 / txns << " us per transaction, "
              << used * 1000 / (txns * rows_per_txn) << " us per row\n";
  }
}
