#pragma once

// A fleet of `outbox-relay run` processes sharing thirty outbox databases
// through Kafka's group protocol (docs/DEPLOY.md "A fleet"), for the fleet's
// scenarios (tests/integration/fleet_*_test.cc): one mock cluster, the
// databases fleet_svc00..29, a steady writer, and what each relay serves,
// read from its metrics and, with own_users, from the server's process list
// (each relay its own database account fleet_<relay>).

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/scenario.h"
#include "support/test_broker.h"
#include "support/test_env.h"

namespace outbox::testing::fleet {

constexpr int kServices = 30;
constexpr int kShards = 12;
constexpr int kSessionMs = 6000;
constexpr const char* kGroup = "relay-fleet";
constexpr const char* kShardTopic = "relay-shards";
// A loaded CI machine's allowance beyond the product's bound, for the
// waits; the measured times are printed as figures.
constexpr auto kSlack = std::chrono::seconds(15);
// The product's bound after a member dies or the coordinator returns: the
// 2.0.2 mock elects a leader a session timeout after a membership change.
constexpr auto kTakeover = std::chrono::milliseconds(2 * kSessionMs) + std::chrono::seconds(5);

std::string Name(int i);  // "svc07"
int IndexOf(const std::string& service);
double Seconds(std::chrono::steady_clock::time_point since);

// One services[] entry: database fleet_svcNN, topic fleet.svcNN, as `user`
// (the shared relay account takes its password from the environment).
std::string ServiceYaml(int i, const std::string& wakeup, const std::string& user);

// A steady writer: one event at a time, round-robin over the databases,
// about `per_second` in all; aggregates 1..20 of each database.
class Writer {
 public:
  Writer(int databases, int per_second);
  ~Writer() { Stop(); }
  void Stop();
  int64_t written() const { return written_; }

 private:
  void Run();
  const int databases_;
  const int per_second_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> written_{0};
  std::thread thread_;
};

struct Bed {
  // `own_users`: each relay added connects as fleet_<relay> (no password),
  // granted on every database, so the process list tells who serves what.
  Bed(const std::string& name, const std::string& wakeup_mode, int brokers = 1,
      bool own_users = false);
  ~Bed();

  // One services[] entry of the file: database fleet_svcNN, topic fleet.svcNN.
  std::string ServiceYaml(int i, const std::string& user) const;
  RelaySpec Spec(const std::string& relay, int services = kServices) const;
  RelayProcess& Add(const std::string& name);
  RelayProcess& Add(const std::string& name, RelaySpec spec);

  // service -> the running relays that export outbox_service_owned 1 for it.
  std::map<std::string, std::vector<std::string>> Owners();
  // True when each of the first `services` services has exactly one owner.
  bool OwnedOnce(int services = kServices);
  // Database -> the relays (by account) with a session on it now.
  std::map<std::string, std::set<std::string>> ServedBy();
  // True when each database is served by exactly one relay, none of
  // `excluded`.
  bool ServedOnce(const std::set<std::string>& excluded = {});
  // The assignment changes the running relays have counted, all kinds.
  double Rebalances();
  // Waits until no relay has counted an assignment change for a session
  // timeout (three heartbeats): the group is steady.
  void WaitSteady();
  std::vector<std::string> OwnedBy(const std::string& relay);
  int64_t Unsent(int i);
  // Inserts one event keyed `key` into database i (its id far above the writer's).
  void InsertFresh(int i, const std::string& key, int64_t id);
  // True when the event keyed `key` is SENT in each of `services`.
  bool Sent(const std::vector<std::string>& services, const std::string& key);
  // outbox-check of one service's database against its topic: nothing lost,
  // nothing out of order.
  nlohmann::json Check(int i, const std::string& tag);

  std::string dir;
  TestBroker broker;
  std::string wakeup;
  bool own_users;
  std::vector<std::unique_ptr<TestDatabase>> databases;
  std::vector<std::unique_ptr<RelayProcess>> relays;
  std::vector<std::string> users;  // created accounts, dropped at the end
};

// Sessions of the relays' shared account on the fleet's databases.
int64_t FleetConnections(TestDatabase& any);
// How often each service started on a relay: its log's "relaying" lines.
std::map<std::string, int> Starts(RelayProcess& r);

}  // namespace outbox::testing::fleet
