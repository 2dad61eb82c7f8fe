// A fleet of relay processes sharing thirty outbox databases through Kafka's
// group protocol (docs/DEPLOY.md "A fleet"): one mock
// cluster, several `outbox-relay run` processes with the same file, a steady
// load, and what the group does to them (a member joins, one is killed,
// one stops, the coordinator goes away, a reload adds a service). Ownership
// is read from each relay's outbox_service_owned; what reached Kafka is
// judged by outbox-check per database.
#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include "support/fleet_bed.h"
#include "support/metrics_text.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

using namespace outbox::testing::fleet;

namespace {

// Adds relay `name` and returns how many services kept their owner; each of
// them never stopped (its relay logs no second "relaying" line for it).
int JoinKeepsTheOthers(Bed& bed, const std::string& name) {
  std::map<std::string, std::vector<std::string>> owned_before;
  std::map<std::string, std::map<std::string, int>> starts_before;
  for (auto& r : bed.relays) {
    owned_before[r->name()] = bed.OwnedBy(r->name());
    starts_before[r->name()] = Starts(*r);
  }
  bed.Add(name);
  REQUIRE(WaitFor([&] { return !bed.OwnedBy(name).empty() && bed.OwnedOnce(); }, kTakeover + kSlack,
                  200ms));
  int kept = 0;
  for (auto& r : bed.relays) {
    if (r->name() == name) continue;
    const auto now_owned = bed.OwnedBy(r->name());
    const auto starts = Starts(*r);
    for (const auto& service : owned_before[r->name()]) {
      if (std::find(now_owned.begin(), now_owned.end(), service) == now_owned.end()) continue;
      INFO(r->name() << " kept " << service);
      CHECK(starts.at(service) == starts_before[r->name()].at(service));
      ++kept;
    }
  }
  return kept;
}

// Kills `relay` (kill -9), writes a fresh event into each of `orphaned`'s
// databases and returns the seconds until every one is SENT.
double KillAndServeAgain(Bed& bed, RelayProcess& relay, const std::vector<std::string>& orphaned) {
  relay.Kill();
  const auto killed = std::chrono::steady_clock::now();
  for (const auto& s : orphaned) bed.InsertFresh(IndexOf(s), "after-kill", 90000001);
  REQUIRE(WaitFor([&] { return bed.Sent(orphaned, "after-kill"); }, kTakeover + kSlack, 100ms));
  return Seconds(killed);
}

}  // namespace

TEST_CASE(
    "fleet: three relays share thirty databases one owner each while a joining relay moves only "
    "its shards and a stopped one hands over without duplicates and a killed one's services are "
    "served again",
    "[fleet][mock-faults]") {
  Bed bed("fleet_lifecycle", "poll");
  // The writer first: the sessions before the relays are the test's own.
  Writer writer(kServices, 100);
  REQUIRE(WaitFor([&] { return writer.written() >= 60; }, 30s, 100ms));
  const int64_t own_sessions = FleetConnections(*bed.databases[0]);
  for (const char* n : {"r1", "r2", "r3"}) bed.Add(n);
  // (a) Every service owned by exactly one relay.
  REQUIRE(WaitFor([&] { return bed.OwnedOnce(); }, kTakeover + kSlack, 200ms));
  REQUIRE(WaitFor([&] { return writer.written() >= 300 + 60; }, 30s, 100ms));
  // One relay's sessions per database (up to four a service), not three
  // relays' as without a fleet.
  const int64_t connections = FleetConnections(*bed.databases[0]) - own_sessions;
  CHECK(connections <= 4 * kServices);

  // (c) A fourth relay joins: only the shards given to it stop anywhere.
  const int kept = JoinKeepsTheOthers(bed, "r4");
  CHECK(kept >= kServices / 2);

  // (d) SIGTERM of r2: its services move at once and settle without a duplicate.
  const std::vector<std::string> handed = bed.OwnedBy("r2");
  REQUIRE(bed.relays[1]->Stop(60s));
  REQUIRE(WaitFor([&] { return bed.OwnedOnce(); }, kTakeover + kSlack, 200ms));

  // (b) kill -9 of r3: its services are served again (a fresh event each).
  const std::vector<std::string> orphaned = bed.OwnedBy("r3");
  const double takeover_s = KillAndServeAgain(bed, *bed.relays[2], orphaned);
  writer.Stop();
  for (int i = 0; i < kServices; ++i)
    REQUIRE(WaitFor([&] { return bed.Unsent(i) == 0; }, 60s, 100ms));

  // A service that r2 handed over to r3, which was then killed, carries
  // the kill's duplicates: it is judged with the killed ones, and the
  // hand-over on the services that no kill touched (judged_handed_over).
  int64_t duplicates_handed = 0, duplicates_killed = 0, judged_handed = 0;
  for (int i = 0; i < kServices; ++i) {
    const nlohmann::json report = bed.Check(i, "end");
    const int64_t d = report["duplicate_copies"].get<int64_t>();
    const bool killed = std::count(orphaned.begin(), orphaned.end(), Name(i)) > 0;
    if (killed) duplicates_killed += d;
    if (!killed && std::count(handed.begin(), handed.end(), Name(i))) {
      duplicates_handed += d;
      ++judged_handed;
    }
  }
  // A graceful hand-over sends nothing twice; a kill at most the in-flight
  // window of each service it held (4 batches of 50).
  CHECK(duplicates_handed == 0);
  CHECK(duplicates_killed <= static_cast<int64_t>(orphaned.size()) * 4 * 50);
  RecordFigures("fleet_lifecycle", {{"events", writer.written()},
                                    {"connections_3_relays", connections},
                                    {"kept_through_join", kept},
                                    {"handed_over", handed.size()},
                                    {"judged_handed_over", judged_handed},
                                    {"duplicates_handed_over", duplicates_handed},
                                    {"killed_services", orphaned.size()},
                                    {"takeover_after_kill_s", takeover_s},
                                    {"duplicates_after_kill", duplicates_killed}});
}

TEST_CASE(
    "fleet: relays woken by the binlog stop serving while the group's coordinator is away and "
    "serve again after it returns losing nothing and a reload's new service starts on one relay",
    "[fleet][mock-faults]") {
  Bed bed("fleet_coordinator", "binlog", 3);
  // The group's coordinator alone on broker 3; every event topic led by 1 or 2.
  bed.broker.SetCoordinator(kGroup, 3);
  REQUIRE(bed.broker.CreateTopic("fleet." + Name(kServices), 2));  // for the reload below
  for (int i = 0; i <= kServices; ++i)
    for (int p = 0; p < 2; ++p) bed.broker.SetLeader("fleet." + Name(i), p, 1 + p);
  for (const char* n : {"r1", "r2", "r3"}) bed.Add(n);
  REQUIRE(WaitFor([&] { return bed.OwnedOnce(); }, kTakeover + kSlack, 200ms));
  Writer writer(kServices, 100);
  REQUIRE(WaitFor([&] { return writer.written() >= 300; }, 30s, 100ms));
  bed.WaitSteady();

  // (e) The coordinator away for 20 s: past the session timeout every relay
  // gives its shards up by itself.
  bed.broker.SetBrokerDown(3, true);
  const auto down = std::chrono::steady_clock::now();
  const bool let_go = WaitFor([&] { return bed.Owners().empty(); }, 20s, 200ms);
  std::this_thread::sleep_until(down + 20s);
  bed.broker.SetBrokerDown(3, false);
  const auto back = std::chrono::steady_clock::now();
  CHECK(let_go);
  for (int i = 0; i < kServices; ++i)
    bed.databases[i]->Exec(
        "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, "
        "status, next_retry_at, created_at, updated_at) VALUES (90000002, 'Fresh', 1, "
        "'AfterOutage', "
        "'after-outage', '{}', 'NEW', NOW(), NOW(), NOW())");
  REQUIRE(WaitFor(
      [&] {
        for (int i = 0; i < kServices; ++i)
          if (bed.databases[i]->QueryInt(
                  "SELECT COUNT(*) FROM t_outbox WHERE event_key = 'after-outage' AND status = "
                  "'SENT'") != 1)
            return false;
        return true;
      },
      kTakeover + kSlack, 100ms));
  const double served_again_s = Seconds(back);
  REQUIRE(WaitFor([&] { return bed.OwnedOnce(); }, kTakeover + kSlack, 200ms));

  // (f) A reload adds a service: exactly one relay starts it.
  TestDatabase added("fleet_" + Name(kServices));
  for (auto& r : bed.relays) {
    std::ofstream(r->config_path(), std::ios::app)
        << bed.ServiceYaml(kServices, RelayMysql("").user);
    r->Signal(SIGHUP);
  }
  REQUIRE(WaitFor([&] { return bed.OwnedOnce(kServices + 1); }, 30s, 200ms));
  added.InsertEvents(5, 2);
  REQUIRE(WaitFor(
      [&] { return added.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENT'") == 10; },
      30s, 100ms));

  writer.Stop();
  for (int i = 0; i < kServices; ++i)
    REQUIRE(WaitFor([&] { return bed.Unsent(i) == 0; }, 60s, 100ms));
  for (int i = 0; i < kServices; ++i) bed.Check(i, "end");
  RecordFigures("fleet_coordinator",
                {{"events", writer.written()}, {"served_again_after_return_s", served_again_s}});
}

TEST_CASE(
    "fleet: a shard beyond the topic's partitions and a missing topic are named by check and at "
    "start while the other services run",
    "[fleet][mock-faults]") {
  const std::string dir = ScratchDir("fleet_bad_input");
  TestDatabase a("fleet_" + Name(0)), b("fleet_" + Name(1));
  TestBroker broker;
  REQUIRE(broker.CreateTopic(kShardTopic, 2));
  REQUIRE(broker.CreateTopic("fleet." + Name(0), 1));
  REQUIRE(broker.CreateTopic("fleet." + Name(1), 1));
  auto spec = [&](const std::string& topic) {
    RelaySpec s;
    s.service = Name(0);
    s.mysql = RelayMysql("fleet_" + Name(0));
    s.bootstrap = broker.bootstrap();
    s.topic = "fleet.{service}";
    s.top_yaml = std::string("fleet: {group_id: ") + kGroup + ", topic: " + topic +
                 ", session_timeout_ms: " + std::to_string(kSessionMs) + "}\n";
    s.extra_services_yaml = ServiceYaml(1, "poll", RelayMysql("").user) + "    shard: 5\n";
    return s;
  };

  SECTION("a shard beyond the partitions") {
    RelayProcess relay("relay", dir, spec(kShardTopic));
    const ProcessResult check =
        RunProcess({OUTBOX_BINARY, "check", "--connect", "--config", relay.config_path()},
                   ChildEnv(RelayChildEnv()));
    INFO(check.out << check.err);
    CHECK(check.exit_code == 1);
    CHECK(check.out.find("services[1].shard: 5 is beyond the 2 partitions of fleet.topic " +
                         std::string(kShardTopic)) != std::string::npos);
    CHECK(check.out.find("service svc00 is in shard") != std::string::npos);
    REQUIRE(relay.Start());
    REQUIRE(WaitFor([&] { return relay.Metric("outbox_service_owned") == 1; }, kTakeover + kSlack,
                    200ms));
    a.InsertEvents(3, 2);
    REQUIRE(WaitFor(
        [&] { return a.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENT'") == 6; }, 30s,
        100ms));
    CHECK(ReadFile(relay.log_path()).find("fleet: a service no relay can serve") !=
          std::string::npos);
    CHECK(MetricValue(relay.Metrics(), "outbox_service_owned{service=\"svc01\"}") == 0);
    CHECK(relay.ReadyzStatus() == 200);
  }
  SECTION("a missing topic") {
    // The mock creates any topic it is asked about; a real cluster without
    // auto-creation answers this.
    broker.SetTopicError("no-such-topic", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    RelayProcess relay("relay", dir, spec("no-such-topic"));
    const ProcessResult check =
        RunProcess({OUTBOX_BINARY, "check", "--connect", "--config", relay.config_path()},
                   ChildEnv(RelayChildEnv()));
    INFO(check.out << check.err);
    CHECK(check.exit_code == 1);
    CHECK(check.out.find("topic no-such-topic does not exist") != std::string::npos);
    REQUIRE(relay.Start());
    REQUIRE(WaitFor([&] { return relay.ReadyzStatus() == 503; }, 20s, 200ms));
    CHECK(HttpGet(relay.port(), "/readyz").body.find("not a member") != std::string::npos);
  }
}
