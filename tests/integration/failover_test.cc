// Failover and network faults between a relay and its database
// (docs/RELIABILITY.md "Failover and network faults"): a GTID primary/replica
// pair of throwaway MariaDB servers (tests/support/mariadb_pair.h), the relay
// reaching them through a TcpProxy that stands for a DNS name or a VIP, the
// relay as a process with an account that has only the grants the README
// asks for (read_only does not stop root), and outbox-check's verdict at the
// end. Figures are printed as "FIGURES {json}" lines (scenario.h).
#include <catch2/catch.hpp>
#include <csignal>
#include <iostream>
#include <set>
#include <thread>

#include "support/http_probe.h"
#include "support/mariadb_pair.h"
#include "support/metrics_text.h"
#include "support/scenario.h"
#include "support/tcp_proxy.h"
#include "support/test_broker.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

constexpr const char* kDb = "failover";
constexpr const char* kUser = "failover_relay";
constexpr const char* kPassword = "failover-relay-pw";
constexpr int64_t kLeaseMs = 4000;

// Two servers, the proxy in front of the primary, a mock Kafka cluster, the
// outbox table and the relay's account on the primary (replicated).
struct Bed {
  explicit Bed(const std::string& name)
      : dir(ScratchDir(name)), pair(dir), proxy(pair.primary().port()) {
    std::cout << "scenario " << name << ": logs in " << dir << std::endl;
    REQUIRE(pair.started());
    REQUIRE(pair.primary().CreateOutbox(kDb));
    CreateRelayAccount(pair.primary(), kDb, kUser, kPassword);
    REQUIRE(pair.WaitCaughtUp(30));
    cluster.CreateTopic("outbox.event.Order", 4);
    cluster.CreateTopic("outbox.event.Payment", 4);
  }
  // The relay's view: through the proxy, as the minimal-grants account.
  RelaySpec Spec(const std::string& wakeup) const {
    RelaySpec s;
    s.mysql.host = "127.0.0.1";
    s.mysql.port = proxy.port();
    s.mysql.user = kUser;
    s.mysql.password = kPassword;
    s.mysql.database = kDb;
    s.bootstrap = cluster.bootstrap();
    s.lease_ms = kLeaseMs;
    s.wakeup = wakeup;
    s.connect_timeout_ms = 1000;
    s.read_timeout_ms = 2000;
    return s;
  }
  int64_t Load(MariadbServer& server, std::vector<std::string> args, const std::string& tag,
               const std::string& database = kDb, const std::string& types = "Order,Payment") {
    const std::string json = dir + "/load-" + tag + ".json";
    args.insert(args.end(), {"--json", json, "--aggregate-types", types, "--quiet"});
    REQUIRE(RunLoad(server.Admin(database), args, dir + "/load-" + tag + ".log", 5min) == 0);
    return nlohmann::json::parse(ReadFile(json))["events"].get<int64_t>();
  }
  std::string dir;
  MariadbPair pair;
  TcpProxy proxy;
  TestBroker cluster;
};

int64_t Sent(MariadbServer& s) {
  return s.QueryInt(std::string("SELECT COUNT(*) FROM `") + kDb + "`.t_outbox WHERE status='SENT'");
}
int64_t Unsent(MariadbServer& s) {
  return s.QueryInt(std::string("SELECT COUNT(*) FROM `") + kDb +
                    "`.t_outbox WHERE status IN ('NEW','SENDING')");
}

// What a failover left to check: the rows inserted on the new primary after
// the promotion, split by whether their aggregate had an event in flight
// (SENDING) at that moment.
struct AfterPromotion {
  int64_t max_id = 0;               // the highest id at the promotion
  std::string inflight_aggregates;  // SQL list of (type, id) pairs, "" when none
};

AfterPromotion SnapshotAtPromotion(MariadbServer& primary) {
  AfterPromotion a;
  a.max_id = primary.QueryInt(std::string("SELECT MAX(id) FROM `") + kDb + "`.t_outbox");
  const std::string rows =
      primary.Sql(std::string("SELECT DISTINCT CONCAT('(''', aggregate_type, ''',', aggregate_id, "
                              "')') FROM `") +
                  kDb + "`.t_outbox WHERE status = 'SENDING'");
  std::istringstream in(rows);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) a.inflight_aggregates += (a.inflight_aggregates.empty() ? "" : ",") + line;
  return a;
}

// The longest insert-to-SENT time (whole seconds, the columns' precision) of
// the rows after the promotion whose aggregate was (`inflight`) or was not
// in flight then; -1 when there is no such row.
int64_t MaxDelaySeconds(MariadbServer& primary, const AfterPromotion& a, bool inflight) {
  std::string where = "id > " + std::to_string(a.max_id) + " AND status = 'SENT'";
  if (!a.inflight_aggregates.empty())
    where += std::string(" AND (aggregate_type, aggregate_id) ") + (inflight ? "" : "NOT ") +
             "IN (" + a.inflight_aggregates + ")";
  else if (inflight)
    return -1;
  return primary.QueryInt(std::string("SELECT IFNULL(MAX(TIMESTAMPDIFF(SECOND, created_at, "
                                      "updated_at)), -1) FROM `") +
                          kDb + "`.t_outbox WHERE " + where);
}

// One more event for each aggregate that was in flight at the promotion.
void InsertBehindInflight(MariadbServer& primary, const AfterPromotion& a) {
  if (a.inflight_aggregates.empty()) return;
  primary.Sql(std::string("INSERT INTO `") + kDb +
              "`.t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, "
              "status, next_retry_at, created_at, updated_at) SELECT " +
              std::to_string(a.max_id + 1000000) +
              " + ROW_NUMBER() OVER (), aggregate_type, aggregate_id, 'AfterFailover', "
              "CONCAT('after-', aggregate_type, '-', aggregate_id), '{}', 'NEW', NOW(), NOW(), "
              "NOW() FROM (SELECT DISTINCT aggregate_type, aggregate_id FROM `" +
              kDb + "`.t_outbox WHERE (aggregate_type, aggregate_id) IN (" + a.inflight_aggregates +
              ")) t");
}

CheckResult Verdict(Bed& bed, MariadbServer& primary, const std::string& tag,
                    const std::vector<std::string>& extra = {}) {
  CheckResult c = RunCheck(primary.Admin(kDb), bed.cluster.bootstrap(), extra, bed.dir, tag);
  INFO(c.output);
  REQUIRE(c.report.is_object());
  CHECK(c.report["lost"] == 0);
  CHECK(c.report["order_violations"] == 0);
  CHECK(c.report["split_aggregates"] == 0);
  CHECK(c.report["overtaken"] == 0);
  CHECK(c.report["verdict"] == "OK");
  return c;
}

// A planned failover (or, with `kill_old`, the old primary killed): the
// relay relays a backlog from the primary, the primary is demoted (or
// killed), the replica promoted and the proxy moved to it while the
// connections already open stay where they are.
void RunFailover(const std::string& name, const std::string& wakeup, bool kill_old) {
  Bed bed(name);
  const int64_t preloaded =
      bed.Load(bed.pair.primary(),
               {"--aggregates", "600", "--events", "2..12", "--bulk", "--seed", "25"}, "preload");
  REQUIRE(bed.pair.WaitCaughtUp(30));
  // Small batches and a 50 ms broker round trip: batches are in flight (and
  // their rows SENDING) when the primary is demoted.
  bed.cluster.SetRtt(50);
  RelaySpec spec = bed.Spec(wakeup);
  spec.batch_size = 50;
  RelayProcess relay("relay", bed.dir, spec);
  REQUIRE(relay.Start());
  // Most of the backlog sent: the rows written after the promotion wait for
  // the failover, not behind a long backlog (id order within a pass).
  REQUIRE(WaitFor([&] { return Sent(bed.pair.primary()) >= preloaded * 3 / 4; }, 60s, 20ms));

  // References to the servers: Promote swaps the pair's roles.
  MariadbServer& old_primary = bed.pair.primary();
  MariadbServer& new_primary = bed.pair.replica();
  // A planned failover that completes before the relay looks (its read_only
  // check runs once a second per session): the relay is frozen across the
  // demotion and the move, so its sessions are on the demoted server by
  // construction, whatever the machine's speed.
  if (!kill_old) relay.Signal(SIGSTOP);
  if (kill_old) {
    REQUIRE(bed.pair.WaitCaughtUp(30));  // semi-sync in spirit: nothing committed is lost
    old_primary.Kill();
    bed.pair.PromoteNow();
  } else {
    REQUIRE(bed.pair.Promote());
  }
  const auto promoted_at = std::chrono::steady_clock::now();
  bed.proxy.SetTarget(new_primary.port());
  const AfterPromotion at = SnapshotAtPromotion(new_primary);
  if (!kill_old) {
    // The sessions opened before the move stay on the demoted server (the
    // proxy publishes its counts every 20 ms; the frozen relay closes none).
    CHECK(WaitFor([&] { return bed.proxy.OpenByTarget()[old_primary.port()] > 0; }, 5s, 20ms));
    relay.Signal(SIGCONT);
  }
  // New events on the new primary: fresh aggregates, and one behind each
  // aggregate that was in flight.
  const int64_t written =
      bed.Load(new_primary,
               {"--aggregates", "100", "--events", "1..4", "--rate", "100", "--writers", "2",
                "--first-aggregate-id", "5000000", "--seed", "26"},
               "after");
  InsertBehindInflight(new_primary, at);
  REQUIRE(WaitFor([&] { return Unsent(new_primary) == 0; }, 90s, 100ms));
  const double drained_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - promoted_at).count();

  CHECK(relay.Metric("outbox_database_server_changes_total") == 1);
  const int64_t fresh_delay = MaxDelaySeconds(new_primary, at, false);
  const int64_t inflight_delay = MaxDelaySeconds(new_primary, at, true);
  CHECK(fresh_delay >= 0);
  // Found by the relay's own timers, not by a restart or a lease: a stuck
  // session is noticed within read_timeout_ms (2 s) and reconnected within
  // the backoff's cap (5 s), at the columns' whole-second resolution. On a
  // quiet machine it takes 2-3 s (the figures); a loaded one adds to it.
  CHECK(fresh_delay <= 2 + 5 + 1 + 2);
  CHECK(inflight_delay <= kLeaseMs / 1000 + 5);
  CheckResult c = Verdict(bed, new_primary, "after");
  RecordFigures(name, {{"wakeup", wakeup},
                       {"events", c.report["rows"]},
                       {"written_after_promotion", written},
                       {"lost", c.report["lost"]},
                       {"duplicates", c.report["duplicate_copies"]},
                       {"max_delay_fresh_s", fresh_delay},
                       {"max_delay_inflight_s", inflight_delay},
                       {"drained_after_s", drained_s}});
  REQUIRE(relay.Stop(60s));
}

}  // namespace

TEST_CASE(
    "failover: polling relays find the promoted replica through the proxy while old sessions "
    "stay on the demoted primary",
    "[failover][local-db]") {
  RunFailover("failover_sticky_poll", "poll", false);
}

TEST_CASE(
    "failover: binlog-woken relays find the promoted replica through the proxy while old "
    "sessions stay on the demoted primary",
    "[failover][local-db]") {
  RunFailover("failover_sticky_binlog", "binlog", false);
}

TEST_CASE("failover: the old primary killed and the replica promoted loses nothing",
          "[failover][local-db]") {
  RunFailover("failover_killed", "binlog", true);
}

TEST_CASE(
    "failover: a 20 s blackhole towards one database is detected while the other service keeps "
    "relaying and nothing is lost",
    "[failover][local-db]") {
  Bed bed("failover_blackhole");
  // A second service in the same process, on the replica's server directly
  // (its own database there): it must keep relaying through the blackhole.
  bed.pair.replica().Sql("STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0;");
  REQUIRE(bed.pair.replica().CreateOutbox("other"));
  CreateRelayAccount(bed.pair.replica(), "other", kUser, kPassword);
  bed.cluster.CreateTopic("outbox.event.Other", 2);
  RelaySpec spec = bed.Spec("poll");
  spec.extra_services_yaml =
      "  - name: other\n"
      "    mysql: {host: 127.0.0.1, port: " +
      std::to_string(bed.pair.replica().port()) + ", user: " + kUser +
      ", password_env: OUTBOX_TEST_MYSQL_PASSWORD, database: other, tls: {mode: disabled}, "
      "connect_timeout_ms: 1000, read_timeout_ms: 2000}\n"
      "    lease_ms: 4000\n    poll_interval_ms: 50\n";
  RelayProcess relay("relay", bed.dir, spec);
  REQUIRE(relay.Start());
  const int64_t before =
      bed.Load(bed.pair.primary(), {"--aggregates", "50", "--events", "2..4", "--bulk"}, "before");
  REQUIRE(WaitFor([&] { return Unsent(bed.pair.primary()) == 0; }, 30s, 50ms));

  bed.proxy.Blackhole();
  const auto cut = std::chrono::steady_clock::now();
  const int64_t during = bed.Load(
      bed.pair.primary(),
      {"--aggregates", "50", "--events", "2..4", "--bulk", "--first-aggregate-id", "100000"},
      "during");
  // Detected within the timeouts: connect 1 s, read 2 s, a retry or two.
  const bool detected = WaitFor(
      [&] { return MetricValue(relay.Metrics(), "outbox_database_up{service=\"faults\"}") == 0; },
      15s, 100ms);
  CHECK(detected);
  const double detect_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - cut).count();
  // The other service relays meanwhile, and the process stays healthy.
  bed.Load(bed.pair.replica(), {"--aggregates", "20", "--events", "1..3", "--bulk"}, "other",
           "other", "Other");
  CHECK(WaitFor(
      [&] {
        return bed.pair.replica().QueryInt(
                   "SELECT COUNT(*) FROM other.t_outbox WHERE status IN "
                   "('NEW','SENDING')") == 0;
      },
      15s, 100ms));
  CHECK(HttpGet(relay.port(), "/healthz").status == 200);
  while (std::chrono::steady_clock::now() - cut < 20s) {
    CHECK(HttpGet(relay.port(), "/healthz").status == 200);
    std::this_thread::sleep_for(1s);
  }
  bed.proxy.Heal();
  REQUIRE(WaitFor([&] { return Unsent(bed.pair.primary()) == 0; }, 60s, 100ms));
  CheckResult c = Verdict(bed, bed.pair.primary(), "after",
                          {"--topic-regex", "^outbox\\.event\\.(Order|Payment)$"});
  CHECK(c.report["rows"] == before + during);
  RecordFigures("failover_blackhole", {{"events", c.report["rows"]},
                                       {"lost", c.report["lost"]},
                                       {"duplicates", c.report["duplicate_copies"]},
                                       {"detected_after_s", detect_s}});
  REQUIRE(relay.Stop(60s));
}

TEST_CASE(
    "failover: a relay cut off from the database but not from Kafka loses its leases to the "
    "other relay and its late settles are fenced off",
    "[failover][local-db]") {
  Bed bed("failover_cut_relay");
  // Every batch takes half a second at the broker: the cut relay has
  // batches in flight (published, not yet settled) when the cut comes.
  bed.cluster.SetRtt(500);
  bed.Load(bed.pair.primary(), {"--aggregates", "500", "--events", "2..8", "--bulk"}, "preload");
  RelaySpec cut_spec = bed.Spec("poll");  // through the proxy
  RelaySpec other_spec = bed.Spec("poll");
  other_spec.mysql.port = bed.pair.primary().port();  // directly
  RelayProcess cut("cut", bed.dir, cut_spec);
  RelayProcess other("other", bed.dir, other_spec);
  REQUIRE(cut.Start());
  REQUIRE(other.Start());
  REQUIRE(WaitFor([&] { return cut.Metric("outbox_events_published_total") >= 200; }, 30s, 20ms));

  bed.proxy.Blackhole();
  const double published_before_cut = cut.Metric("outbox_events_published_total");
  // The cut relay's leases expire and the other relay takes their rows.
  CHECK(WaitFor([&] { return other.Metric("outbox_leases_reclaimed_total") > 0; },
                std::chrono::milliseconds(kLeaseMs + 15000), 100ms));
  std::this_thread::sleep_for(3s);
  bed.proxy.Heal();
  REQUIRE(WaitFor([&] { return Unsent(bed.pair.primary()) == 0; }, 90s, 100ms));
  // Back, its settles of the batches it published while cut find the rows
  // no longer its own: 0 rows changed, counted.
  CHECK(WaitFor([&] { return cut.Metric("outbox_stale_transitions_total") > 0; }, 20s, 100ms));
  const double stale = cut.Metric("outbox_stale_transitions_total");
  const double reclaimed = other.Metric("outbox_leases_reclaimed_total");
  // Retries after a failure the broker may have written (a loaded machine's
  // timeouts at 500 ms a round trip) are the other source of copies.
  const double maybe_written =
      MetricSum(cut.Metrics(), "outbox_duplicates_risk_total", "cause=\"maybe_written\"") +
      MetricSum(other.Metrics(), "outbox_duplicates_risk_total", "cause=\"maybe_written\"");
  REQUIRE(cut.Stop(60s));
  REQUIRE(other.Stop(60s));
  CheckResult c = Verdict(bed, bed.pair.primary(), "after");
  // Each duplicate is a row the other relay reclaimed from the cut one, which
  // had at most max_inflight_batches x batch_size rows in flight, or a retry
  // of a request the broker may have written.
  const int64_t duplicates = c.report["duplicate_copies"].get<int64_t>();
  CHECK(duplicates <= static_cast<int64_t>(reclaimed + maybe_written));
  CHECK(duplicates <= cut_spec.max_inflight_batches * cut_spec.batch_size);
  RecordFigures("failover_cut_relay", {{"events", c.report["rows"]},
                                       {"lost", c.report["lost"]},
                                       {"duplicates", duplicates},
                                       {"reclaimed_by_other", reclaimed},
                                       {"maybe_written", maybe_written},
                                       {"stale_settles_of_cut", stale},
                                       {"published_by_cut_before", published_before_cut}});
}

TEST_CASE(
    "failover: a replica promoted before it caught up sends again what it still holds as "
    "unsent and loses nothing it holds",
    "[failover][local-db]") {
  Bed bed("failover_lagging");
  const int64_t preloaded =
      bed.Load(bed.pair.primary(), {"--aggregates", "200", "--events", "2..8", "--bulk"}, "pre");
  REQUIRE(bed.pair.WaitCaughtUp(30));
  // The replica stops applying: it holds every preloaded row as NEW.
  bed.pair.replica().Sql("STOP SLAVE SQL_THREAD");
  RelayProcess relay("relay", bed.dir, bed.Spec("poll"));
  REQUIRE(relay.Start());
  REQUIRE(WaitFor([&] { return Unsent(bed.pair.primary()) == 0; }, 60s, 50ms));
  const int64_t unseen = bed.Load(
      bed.pair.primary(),
      {"--aggregates", "30", "--events", "1..3", "--bulk", "--first-aggregate-id", "900000"},
      "unseen");
  REQUIRE(WaitFor([&] { return Unsent(bed.pair.primary()) == 0; }, 60s, 50ms));
  const int64_t sent_on_old = Sent(bed.pair.primary());
  MariadbServer& new_primary = bed.pair.replica();
  // The old primary dies; the replica is promoted as it is (its relay log,
  // never applied, is thrown away).
  bed.pair.primary().Kill();
  bed.pair.PromoteNow();
  bed.proxy.SetTarget(new_primary.port());
  const int64_t held = new_primary.QueryInt("SELECT COUNT(*) FROM failover.t_outbox");
  REQUIRE(WaitFor([&] { return Unsent(new_primary) == 0; }, 60s, 100ms));
  REQUIRE(relay.Stop(60s));
  CheckResult c = RunCheck(new_primary.Admin(kDb), bed.cluster.bootstrap(), {}, bed.dir, "after");
  INFO(c.output);
  REQUIRE(c.report.is_object());
  // What the new primary holds is all SENT and in order; what it never
  // received shows as messages without a row; what it held as NEW although
  // the old primary had sent it went out again.
  CHECK(held == preloaded);
  CHECK(c.report["lost"] == 0);
  CHECK(c.report["order_violations"] == 0);
  CHECK(c.report["unmatched_messages"] == unseen);
  CHECK(c.report["duplicate_copies"] == preloaded);
  RecordFigures("failover_lagging", {{"rows_on_old_primary", sent_on_old},
                                     {"rows_on_new_primary", held},
                                     {"never_received", unseen},
                                     {"lost", c.report["lost"]},
                                     {"sent_again", c.report["duplicate_copies"]}});
}
