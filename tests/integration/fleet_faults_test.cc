// A fleet that converges when things go wrong around a rebalance
// (docs/DEPLOY.md "A fleet"): a relay cut off from the group's coordinator
// alone, a relay whose reloads keep failing while another member dies, a
// newly owned service whose producer cannot be made. Each relay connects
// as a database account of its own, so the server's process list, not the
// relays' metrics, says which relay serves which database.
#include <librdkafka/rdkafka.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/fleet_bed.h"
#include "support/metrics_text.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace outbox::testing::fleet;
using namespace std::chrono_literals;

namespace {

// The port of broker `id` of the cluster at `bootstrap`, from its metadata.
int BrokerPort(const std::string& bootstrap, int id) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  REQUIRE(rk != nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  int port = 0;
  if (rd_kafka_metadata(rk, 0, nullptr, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    for (int i = 0; i < md->broker_cnt; ++i)
      if (md->brokers[i].id == id) port = md->brokers[i].port;
    rd_kafka_metadata_destroy(md);
  }
  rd_kafka_destroy(rk);
  return port;
}

// A firewall rule that drops what processes of `uid` send to `port` on
// loopback: their connections to it go silent, as behind a partition.
class Cut {
 public:
  Cut(int uid, int port)
      : rule_("OUTPUT -o lo -p tcp -m owner --uid-owner " + std::to_string(uid) + " --dport " +
              std::to_string(port) + " -j DROP") {}
  ~Cut() { End(); }
  bool Begin() {
    on_ = std::system(("iptables -I " + rule_).c_str()) == 0;
    return on_;
  }
  void End() {
    if (on_ && std::system(("iptables -D " + rule_).c_str()) == 0) on_ = false;
  }

 private:
  const std::string rule_;
  bool on_ = false;
};

// The relays that serve database `service` now, by the process list.
std::set<std::string> Serving(Bed& bed, const std::string& service) {
  const auto served = bed.ServedBy();
  auto it = served.find(service);
  return it == served.end() ? std::set<std::string>{} : it->second;
}

// True when no database has a session of `relay`.
bool ServesNothing(Bed& bed, const std::string& relay) {
  for (const auto& [db, who] : bed.ServedBy())
    if (who.count(relay)) return false;
  return true;
}

std::vector<std::string> AllServices() {
  std::vector<std::string> all;
  for (int i = 0; i < kServices; ++i) all.push_back(Name(i));
  return all;
}

// Drains the writer's events and judges every database with outbox-check.
void DrainAndCheck(Bed& bed, Writer& writer, const std::string& tag) {
  writer.Stop();
  for (int i = 0; i < kServices; ++i)
    REQUIRE(WaitFor([&] { return bed.Unsent(i) == 0; }, 60s, 100ms));
  for (int i = 0; i < kServices; ++i) bed.Check(i, tag);
}

}  // namespace

TEST_CASE(
    "fleet: a relay cut off from the group's coordinator alone serves nothing within a session "
    "timeout while the others serve its databases and it serves again after the cut",
    "[fleet][mock-faults]") {
  REQUIRE(geteuid() == 0);  // the firewall rule and the relay's own uid (scripts/test runs as root)
  Bed bed("fleet_cut", "poll", 3, true);
  // The coordinator alone on broker 3; every other partition led by 1 or 2.
  bed.broker.SetCoordinator(kGroup, 3);
  for (int i = 0; i < kServices; ++i)
    for (int p = 0; p < 2; ++p) bed.broker.SetLeader("fleet." + Name(i), p, 1 + p);
  for (int p = 0; p < kShards; ++p) bed.broker.SetLeader(kShardTopic, p, 1 + p % 2);
  // r1 runs as a uid of its own (a copy of the binary that uid can run).
  const int uid = 60000 + getpid() % 5000;
  RelaySpec cut_spec = bed.Spec("r1");
  cut_spec.binary = bed.dir + "/outbox-relay";
  std::filesystem::copy_file(OUTBOX_BINARY, cut_spec.binary);
  cut_spec.launcher = {"/usr/bin/setpriv", "--reuid=" + std::to_string(uid),
                       "--regid=" + std::to_string(uid), "--clear-groups"};
  bed.Add("r1", cut_spec);
  bed.Add("r2");
  bed.Add("r3");
  REQUIRE(WaitFor([&] { return bed.OwnedOnce() && bed.ServedOnce(); }, kTakeover + kSlack, 200ms));
  REQUIRE_FALSE(ServesNothing(bed, "r1"));
  Writer writer(kServices, 100);
  bed.WaitSteady();

  Cut cut(uid, BrokerPort(bed.broker.bootstrap(), 3));
  REQUIRE(cut.Begin());
  const auto cut_at = std::chrono::steady_clock::now();
  // It stops by itself before the group can hand its shards on.
  REQUIRE(WaitFor([&] { return ServesNothing(bed, "r1"); },
                  std::chrono::milliseconds(kSessionMs) + 5s + kSlack, 100ms));
  const double stopped_s = Seconds(cut_at);
  CHECK(bed.relays[0]->ReadyzStatus() == 503);
  // The others serve every database, once each.
  for (int i = 0; i < kServices; ++i) bed.InsertFresh(i, "during-cut", 90000001);
  REQUIRE(WaitFor([&] { return bed.ServedOnce({"r1"}) && bed.Sent(AllServices(), "during-cut"); },
                  kTakeover + kSlack, 100ms));
  const double taken_over_s = Seconds(cut_at);

  cut.End();
  const auto healed_at = std::chrono::steady_clock::now();
  REQUIRE(WaitFor([&] { return !ServesNothing(bed, "r1") && bed.ServedOnce(); }, kTakeover + kSlack,
                  100ms));
  const double back_s = Seconds(healed_at);
  CHECK(bed.relays[0]->ReadyzStatus() == 200);
  DrainAndCheck(bed, writer, "end");
  CHECK(MetricSum(bed.relays[0]->Metrics(), "outbox_fleet_rebalances_total",
                  "kind=\"suspended\"") >= 1);
  RecordFigures("fleet_cut_from_coordinator", {{"events", writer.written()},
                                               {"cut_relay_serves_nothing_after_s", stopped_s},
                                               {"others_serve_all_after_s", taken_over_s},
                                               {"cut_relay_serves_again_after_s", back_s}});
}

TEST_CASE(
    "fleet: a relay whose file is invalid and that gets SIGHUP every few milliseconds follows "
    "the group when another member is killed",
    "[fleet][mock-faults]") {
  Bed bed("fleet_reload_storm", "poll", 1, true);
  for (const char* n : {"r1", "r2", "r3"}) bed.Add(n);
  REQUIRE(WaitFor([&] { return bed.OwnedOnce() && bed.ServedOnce(); }, kTakeover + kSlack, 200ms));
  std::ofstream(bed.relays[0]->config_path(), std::ios::app) << "bogus: [\n";
  std::atomic<bool> storm{true};
  std::thread hups([&] {
    while (storm) {
      bed.relays[0]->Signal(SIGHUP);
      std::this_thread::sleep_for(5ms);
    }
  });
  std::vector<std::string> orphaned;
  for (const auto& [db, who] : bed.ServedBy())
    if (who.count("r3")) orphaned.push_back(db);
  REQUIRE_FALSE(orphaned.empty());
  bed.relays[2]->Kill();
  const auto killed = std::chrono::steady_clock::now();
  for (const auto& s : orphaned) bed.InsertFresh(IndexOf(s), "after-kill", 90000001);
  REQUIRE(WaitFor([&] { return bed.ServedOnce({"r3"}) && bed.Sent(orphaned, "after-kill"); },
                  kTakeover + kSlack, 100ms));
  const double takeover_s = Seconds(killed);
  storm = false;
  hups.join();
  const std::string m = bed.relays[0]->Metrics();
  CHECK(MetricValue(m, "outbox_config_reloads_total{result=\"failure\"}") > 0);
  CHECK(MetricValue(m, "outbox_config_reloads_total{result=\"success\"}") == 0);
  bool r1_serves_orphan = false;
  for (const auto& s : orphaned) r1_serves_orphan = r1_serves_orphan || Serving(bed, s).count("r1");
  RecordFigures("fleet_reload_storm", {{"orphaned", orphaned.size()},
                                       {"takeover_after_kill_s", takeover_s},
                                       {"invalid_relay_took_some", r1_serves_orphan}});
}

TEST_CASE(
    "fleet: a newly owned service whose producer cannot be made is retried and reported owned "
    "and not running until it can be made and then served",
    "[fleet][mock-faults]") {
  Bed bed("fleet_start_failure", "poll", 1, true);
  const std::string plugin = bed.dir + "/plugins/noop_kafka_plugin.so";
  RelaySpec spec = bed.Spec("r1", 2);
  // svc01's own kafka block names a librdkafka plugin not yet installed.
  spec.extra_services_yaml +=
      "    kafka: {properties: {plugin.library.paths: \"" + plugin + "\"}}\n";
  RelayProcess& relay = bed.Add("r1", spec);
  REQUIRE(WaitFor(
      [&] {
        const std::string m = relay.Metrics();
        return MetricValue(m, "outbox_service_owned{service=\"svc01\"}") == 1 &&
               MetricValue(m, "outbox_service_running{service=\"svc00\"}") == 1;
      },
      kTakeover + kSlack, 200ms));
  REQUIRE(WaitFor([&] { return !Serving(bed, "svc00").empty(); }, 30s, 100ms));
  bed.InsertFresh(1, "waiting", 90000001);
  std::this_thread::sleep_for(4s);  // several retries (1, 2 s ...)
  std::string m = relay.Metrics();
  CHECK(MetricValue(m, "outbox_service_running{service=\"svc01\"}") == 0);
  CHECK(MetricValue(m, "outbox_service_start_failures_total{service=\"svc01\"}") == 1);
  CHECK(Serving(bed, "svc01").empty());
  CHECK(bed.Unsent(1) == 1);
  const std::string log = ReadFile(relay.log_path());
  CHECK(log.find("a service this relay should run cannot start") != std::string::npos);

  std::filesystem::create_directories(bed.dir + "/plugins");
  std::filesystem::copy_file(OUTBOX_NOOP_PLUGIN, plugin);
  const auto installed = std::chrono::steady_clock::now();
  REQUIRE(WaitFor([&] { return bed.Sent({"svc01"}, "waiting"); }, 60s, 100ms));
  const double served_s = Seconds(installed);
  m = relay.Metrics();
  CHECK(MetricValue(m, "outbox_service_running{service=\"svc01\"}") == 1);
  CHECK(MetricValue(m, "outbox_service_start_failures_total{service=\"svc01\"}") == 1);
  CHECK(Serving(bed, "svc01") == std::set<std::string>{"r1"});
  RecordFigures("fleet_start_failure", {{"served_after_install_s", served_s}});
}
