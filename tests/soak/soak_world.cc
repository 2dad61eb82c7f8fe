#include "soak/soak_world.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <thread>

#include "support/metrics_text.h"
#include "support/process.h"
#include "support/wait.h"

namespace outbox::soak {

using namespace std::chrono_literals;

const Service kServices[2] = {
    {"soak_poll", "soak_poll", "Order,Payment", "^outbox\\.event\\.(Order|Payment)$", "poll"},
    {"soak_binlog", "soak_binlog", "Invoice,Shipment", "^outbox\\.event\\.(Invoice|Shipment)$",
     "binlog"},
};

namespace {

constexpr const char* kUser = "soak_relay";
constexpr const char* kPassword = "soak-relay-pw";

// A value of /proc/PID/status ("VmRSS:", "Threads:"), 0 when absent.
int64_t ProcStatus(int pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::atoll(line.c_str() + key.size());
  return 0;
}

int64_t OpenFds(int pid) {
  DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (!d) return 0;
  int64_t n = 0;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n;
}

}  // namespace

int Partitions(const Options& o) {
  // librdkafka's mock cluster keeps at most 5 MB (and 100,000 message sets)
  // a partition and deletes the oldest beyond that, and the checker reads
  // everything at the end: an hour at 100 events/s, about 180,000 events a
  // topic at about 400 bytes, needs more than 4 partitions to keep them all.
  // At most 8,000 events a partition (about 3 MB), at least 4.
  const double per_topic = o.rate * o.minutes * 60 / 2;
  return std::max(4, static_cast<int>(std::ceil(per_topic / 8000)));
}

World::World(const Options& options, const std::string& dir)
    : options_(options), dir_(dir), pair_(dir), proxy_(pair_.primary().port()) {
  if (!pair_.started()) return;
  for (const Service& s : kServices) {
    if (!pair_.primary().CreateOutbox(s.database)) return;
    testing::CreateRelayAccount(pair_.primary(), s.database, kUser, kPassword);
  }
  if (!pair_.WaitCaughtUp(30)) return;
  for (const char* t : {"Order", "Payment", "Invoice", "Shipment"})
    cluster_.CreateTopic(std::string("outbox.event.") + t, Partitions(options_));
  relay_ = std::make_unique<RelayProcess>("relay", dir_, Spec());
  ok_ = relay_->Start();
}

RelaySpec World::Spec() const {
  RelaySpec s;
  s.service = kServices[0].name;
  s.mysql.host = "127.0.0.1";
  s.mysql.port = proxy_.port();
  s.mysql.user = kUser;
  s.mysql.password = kPassword;
  s.mysql.database = kServices[0].database;
  s.bootstrap = cluster_.bootstrap();
  s.lease_ms = options_.lease_ms;
  s.wakeup = kServices[0].wakeup;
  s.connect_timeout_ms = 1000;
  s.read_timeout_ms = 3000;
  const Service& b = kServices[1];
  s.extra_services_yaml =
      "  - name: " + b.name +
      "\n    mysql: {host: 127.0.0.1, port: " + std::to_string(proxy_.port()) + ", user: " + kUser +
      ", password_env: OUTBOX_TEST_MYSQL_PASSWORD, database: " + b.database +
      ", tls: {mode: disabled}, connect_timeout_ms: 1000, read_timeout_ms: 3000}\n" +
      "    lease_ms: " + std::to_string(options_.lease_ms) + "\n    wakeup: " + b.wakeup +
      "\n    batch_size: 200\n    max_inflight_batches: 4\n";
  return s;
}

void World::StartWriters(double seconds) {
  if (writing_) return;
  const int64_t aggregates = std::max<int64_t>(1, std::llround(options_.rate * seconds / 3.5));
  for (int i = 0; i < 2; ++i) {
    const Service& s = kServices[i];
    writer_json_[i] = dir_ + "/load-" + s.name + "-" + std::to_string(segment_) + ".json";
    testing::StartLoad(
        &writers_[i], pair_.primary().Admin(s.database),
        {"--aggregates", std::to_string(aggregates), "--events", "1..6", "--rate",
         std::to_string(options_.rate), "--writers", "2", "--duration",
         std::to_string(static_cast<int>(seconds)), "--first-aggregate-id",
         std::to_string(next_aggregate_), "--seed", std::to_string(options_.seed + segment_),
         "--aggregate-types", s.types, "--json", writer_json_[i], "--quiet"},
        dir_ + "/load-" + s.name + ".log");
  }
  next_aggregate_ += aggregates;
  ++segment_;
  writing_ = true;
}

bool World::WritersRunning() {
  if (!writing_) return false;
  if (writers_[0].running() || writers_[1].running()) return true;
  CollectWriters();
  return false;
}

void World::WaitWriters() {
  if (!writing_) return;
  for (auto& w : writers_) (void)w.Wait(120s);
  CollectWriters();
}

void World::CollectWriters() {
  for (int i = 0; i < 2; ++i) {
    (void)writers_[i].Wait(60s);
    try {
      written_ +=
          nlohmann::json::parse(testing::ReadFile(writer_json_[i]))["events"].get<int64_t>();
    } catch (const std::exception& e) {
      std::cerr << "soak: no summary from the writer of " << kServices[i].name << ": " << e.what()
                << std::endl;
    }
  }
  writing_ = false;
}

int64_t World::Backlog() {
  int64_t n = 0;
  for (const Service& s : kServices)
    n += pair_.primary().QueryInt("SELECT COUNT(*) FROM `" + s.database +
                                  "`.t_outbox WHERE status IN ('NEW','SENDING')");
  return n;
}

int64_t World::MaxId(int service) {
  return pair_.primary().QueryInt("SELECT IFNULL(MAX(id), 0) FROM `" + kServices[service].database +
                                  "`.t_outbox");
}

Sample World::TakeSample(double t) {
  Sample s;
  s.t = t;
  const int pid = relay_->process().pid();
  s.rss_kb = ProcStatus(pid, "VmRSS:");
  s.threads = ProcStatus(pid, "Threads:");
  s.fds = OpenFds(pid);
  for (MariadbServer* db : {&pair_.primary(), &pair_.replica()})
    s.db_connections += db->QueryInt(std::string("SELECT COUNT(*) FROM information_schema.") +
                                     "PROCESSLIST WHERE USER = '" + kUser + "'");
  s.backlog = Backlog();
  return s;
}

void World::Kill9() {
  relay_->Kill();
  relay_->Remember();
  std::this_thread::sleep_for(2s);
  if (!relay_->Start()) std::cerr << "soak: the relay did not start again" << std::endl;
}

void World::DbRestart() {
  MariadbServer& db = pair_.primary();
  if (!db.Stop() || !db.Restart()) std::cerr << "soak: restarting the primary failed" << std::endl;
}

void World::DbFreeze(std::chrono::seconds how_long) {
  pair_.primary().Freeze();
  std::this_thread::sleep_for(how_long);
  pair_.primary().Thaw();
}

void World::BrokerDown(std::chrono::seconds how_long) {
  cluster_.SetAllBrokersDown(true);
  std::this_thread::sleep_for(how_long);
  cluster_.SetAllBrokersDown(false);
}

void World::Failover() {
  if (!pair_.Promote()) std::cerr << "soak: the replica did not catch up before promotion";
  proxy_.SetTarget(pair_.primary().port());
  if (!pair_.Reattach()) std::cerr << "soak: the demoted server did not follow the new primary";
}

void World::Blackhole(std::chrono::seconds how_long) {
  proxy_.Blackhole();
  std::this_thread::sleep_for(how_long);
  proxy_.Heal();
}

bool World::Drain(std::chrono::seconds timeout) {
  WaitWriters();
  const bool drained = testing::WaitFor([&] { return Backlog() == 0; }, timeout, 500ms);
  const auto st = relay_->Stop(60s);
  return drained && st && WIFEXITED(*st) && WEXITSTATUS(*st) == 0;
}

testing::CheckResult World::Check(int service, const std::string& tag) {
  const Service& s = kServices[service];
  // An hour's events (about 360,000 a service) take the checker minutes on
  // a loaded machine: far more time than the scenarios' few thousand need.
  return testing::RunCheck(pair_.primary().Admin(s.database), cluster_.bootstrap(),
                           {"--topic-regex", s.topic_regex, "--sample", "1000000"}, dir_,
                           tag + "-" + s.name, std::chrono::minutes(30));
}

}  // namespace outbox::soak
