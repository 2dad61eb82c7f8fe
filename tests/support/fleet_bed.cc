#include "support/fleet_bed.h"

#include <catch2/catch.hpp>
#include <iostream>

#include "support/metrics_text.h"
#include "support/wait.h"

namespace outbox::testing::fleet {

using namespace std::chrono_literals;

std::string Name(int i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "svc%02d", i);
  return buf;
}

int IndexOf(const std::string& service) { return std::stoi(service.substr(3)); }

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

Writer::Writer(int databases, int per_second) : databases_(databases), per_second_(per_second) {
  thread_ = std::thread([this] { Run(); });
}

void Writer::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Writer::Run() {
  std::vector<std::unique_ptr<SqlClient>> clients;
  for (int i = 0; i < databases_; ++i)
    clients.push_back(std::make_unique<SqlClient>("fleet_" + Name(i)));
  const auto gap = std::chrono::microseconds(1000000 / per_second_);
  for (int64_t n = 0; !stop_; ++n) {
    const int db = static_cast<int>(n % databases_);
    const int64_t round = n / databases_;
    const std::string agg = std::to_string(1 + round % 20);
    clients[db]->Exec(
        "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, "
        "status, next_retry_at, created_at, updated_at) VALUES (" +
        std::to_string(round + 1) + ", 'Order', " + agg + ", 'OrderTick', 'tick-" +
        std::to_string(n) + "', '{\"n\":" + std::to_string(n) + "}', 'NEW', NOW(), NOW(), NOW())");
    ++written_;
    std::this_thread::sleep_for(gap);
  }
}

Bed::Bed(const std::string& name, const std::string& wakeup_mode, int brokers, bool own)
    : dir(ScratchDir(name)), broker(brokers), wakeup(wakeup_mode), own_users(own) {
  std::cout << "scenario " << name << ": logs in " << dir << std::endl;
  for (int i = 0; i < kServices; ++i) {
    databases.push_back(std::make_unique<TestDatabase>("fleet_" + Name(i)));
    REQUIRE(broker.CreateTopic("fleet." + Name(i), 2));
  }
  REQUIRE(broker.CreateTopic(kShardTopic, kShards));
}

Bed::~Bed() {
  relays.clear();
  for (const auto& u : users) {
    try {
      databases[0]->Exec("DROP USER IF EXISTS '" + u + "'@'%'");
    } catch (...) {
    }
  }
}

std::string Bed::ServiceYaml(int i, const std::string& user) const {
  return fleet::ServiceYaml(i, wakeup, user);
}

std::string ServiceYaml(int i, const std::string& wakeup, const std::string& user) {
  const bool shared = user == RelayMysql("").user;
  return "  - name: " + Name(i) +
         "\n    topic: \"fleet.{service}\"\n    mysql: {host: " + TestMysql("").host +
         ", port: " + std::to_string(TestMysql("").port) + ", user: " + user +
         (shared ? RelayPasswordYaml() : "") + ", database: fleet_" + Name(i) +
         ", tls: {mode: disabled}, connect_timeout_ms: 1000, read_timeout_ms: 5000}\n"
         "    batch_size: 50\n    poll_interval_ms: 50\n    lease_ms: 4000\n"
         "    gauge_interval_ms: 300\n    wakeup: " +
         wakeup + "\n";
}

RelaySpec Bed::Spec(const std::string& relay, int services) const {
  RelaySpec s;
  s.service = Name(0);
  s.mysql = RelayMysql("fleet_" + Name(0));
  if (own_users) {
    s.mysql.user = "fleet_" + relay;
    s.mysql.password.clear();
  }
  s.bootstrap = broker.bootstrap();
  s.wakeup = wakeup;
  s.batch_size = 50;
  s.topic = "fleet.{service}";
  s.top_yaml = std::string("fleet: {group_id: ") + kGroup + ", topic: " + kShardTopic +
               ", session_timeout_ms: " + std::to_string(kSessionMs) + "}\n";
  for (int i = 1; i < services; ++i) s.extra_services_yaml += ServiceYaml(i, s.mysql.user);
  return s;
}

RelayProcess& Bed::Add(const std::string& name) { return Add(name, Spec(name)); }

RelayProcess& Bed::Add(const std::string& name, RelaySpec spec) {
  if (own_users) {
    const std::string account = "'fleet_" + name + "'@'%'";
    databases[0]->Exec("CREATE USER IF NOT EXISTS " + account);
    users.push_back("fleet_" + name);
    for (int i = 0; i < kServices; ++i)
      databases[0]->Exec("GRANT SELECT, UPDATE ON `fleet_" + Name(i) + "`.`t_outbox` TO " +
                         account);
  }
  relays.push_back(std::make_unique<RelayProcess>(name, dir, std::move(spec)));
  REQUIRE(relays.back()->Start());
  return *relays.back();
}

std::map<std::string, std::vector<std::string>> Bed::Owners() {
  std::map<std::string, std::vector<std::string>> owners;
  for (auto& r : relays) {
    if (!r->running()) continue;
    for (const auto& m : ParseMetricSamples(r->Metrics())) {
      if (m.name != "outbox_service_owned" || m.value != 1) continue;
      const size_t q = m.labels.find('"');
      owners[m.labels.substr(q + 1, m.labels.rfind('"') - q - 1)].push_back(r->name());
    }
  }
  return owners;
}

bool Bed::OwnedOnce(int services) {
  const auto owners = Owners();
  for (int i = 0; i < services; ++i) {
    auto it = owners.find(Name(i));
    if (it == owners.end() || it->second.size() != 1) return false;
  }
  return true;
}

std::map<std::string, std::set<std::string>> Bed::ServedBy() {
  std::map<std::string, std::set<std::string>> out;
  SqlClient admin("mysql");
  for (int i = 0; i < kServices; ++i) {
    for (const auto& r : relays) {
      const int64_t n =
          admin.QueryInt("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE db = 'fleet_" +
                         Name(i) + "' AND user = 'fleet_" + r->name() + "'");
      if (n > 0) out[Name(i)].insert(r->name());
    }
  }
  return out;
}

bool Bed::ServedOnce(const std::set<std::string>& excluded) {
  const auto served = ServedBy();
  for (int i = 0; i < kServices; ++i) {
    auto it = served.find(Name(i));
    if (it == served.end() || it->second.size() != 1) return false;
    if (excluded.count(*it->second.begin())) return false;
  }
  return true;
}

double Bed::Rebalances() {
  double sum = 0;
  for (auto& r : relays)
    if (r->running()) sum += MetricSum(r->Metrics(), "outbox_fleet_rebalances_total");
  return sum;
}

void Bed::WaitSteady() {
  double last = Rebalances();
  auto since = std::chrono::steady_clock::now();
  REQUIRE(WaitFor(
      [&] {
        const double now = Rebalances();
        if (now != last) {
          last = now;
          since = std::chrono::steady_clock::now();
        }
        return std::chrono::steady_clock::now() - since >= std::chrono::milliseconds(kSessionMs);
      },
      kTakeover + kSlack, 200ms));
}

std::vector<std::string> Bed::OwnedBy(const std::string& relay) {
  std::vector<std::string> out;
  for (const auto& [service, who] : Owners())
    if (std::find(who.begin(), who.end(), relay) != who.end()) out.push_back(service);
  return out;
}

int64_t Bed::Unsent(int i) {
  return databases[i]->QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status IN ('NEW','SENDING')");
}

void Bed::InsertFresh(int i, const std::string& key, int64_t id) {
  databases[i]->Exec(
      "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, "
      "status, next_retry_at, created_at, updated_at) VALUES (" +
      std::to_string(id) + ", 'Fresh', 1, 'Fresh', '" + key +
      "', '{}', 'NEW', NOW(), NOW(), NOW())");
}

bool Bed::Sent(const std::vector<std::string>& services, const std::string& key) {
  for (const auto& s : services)
    if (databases[IndexOf(s)]->QueryInt("SELECT COUNT(*) FROM t_outbox WHERE event_key = '" + key +
                                        "' AND status = 'SENT'") != 1)
      return false;
  return true;
}

nlohmann::json Bed::Check(int i, const std::string& tag) {
  CheckResult c = RunCheck(
      RelayMysql("fleet_" + Name(i)), broker.bootstrap(),
      {"--topic", "fleet." + Name(i), "--service", Name(i), "--topic-template", "fleet.{service}"},
      dir, tag + "-" + Name(i));
  INFO(c.output);
  REQUIRE(c.report.is_object());
  CHECK(c.report["lost"] == 0);
  CHECK(c.report["order_violations"] == 0);
  return c.report;
}

int64_t FleetConnections(TestDatabase& any) {
  return any.QueryInt(
      "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE db LIKE 'fleet\\_svc%' AND "
      "user = '" +
      RelayMysql("").user + "' AND id <> CONNECTION_ID()");
}

std::map<std::string, int> Starts(RelayProcess& r) {
  std::map<std::string, int> out;
  const std::string log = ReadFile(r.log_path());
  for (int i = 0; i < kServices; ++i) {
    const std::string needle = "relaying service=" + Name(i) + " ";
    for (size_t p = log.find(needle); p != std::string::npos; p = log.find(needle, p + 1))
      ++out[Name(i)];
  }
  return out;
}

}  // namespace outbox::testing::fleet
