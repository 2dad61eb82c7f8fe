#pragma once

// The soak's world: the servers, the proxy, the broker, the relay and the
// writers, and the operations on them (faults, samples). Not thread-safe:
// the soak's one thread drives it.

#include <chrono>
#include <memory>
#include <string>

#include "soak/soak.h"
#include "support/mariadb_pair.h"
#include "support/scenario.h"
#include "support/tcp_proxy.h"
#include "support/test_broker.h"

namespace outbox::soak {

using testing::LoggedProcess;
using testing::MariadbPair;
using testing::MariadbServer;
using testing::RelayProcess;
using testing::RelaySpec;
using testing::TcpProxy;
using testing::TestBroker;

// One service: its database, its aggregate types (and so its topics) and
// its wake-up mode.
struct Service {
  std::string name;
  std::string database;
  std::string types;  // outbox-load --aggregate-types
  std::string topic_regex;
  std::string wakeup;
};

extern const Service kServices[2];

// Partitions per topic: enough that the mock cluster keeps every message of
// the run (it deletes the oldest beyond a few MB a partition).
int Partitions(const Options& o);

class World {
 public:
  World(const Options& options, const std::string& dir);
  bool ok() const { return ok_; }

  // Writers: one outbox-load per service against the current primary, in
  // segments of `seconds`. StartWriters does nothing while one runs.
  void StartWriters(double seconds);
  bool WritersRunning();
  // Waits for the current segment (if any) to end.
  void WaitWriters();
  int64_t written() const { return written_; }

  // Backlog (NEW and SENDING) of both services on the current primary.
  int64_t Backlog();
  int64_t MaxId(int service);
  Sample TakeSample(double t);

  // The faults. Each returns when the fault is over (the thing is back).
  void Kill9();
  void DbRestart();
  void DbFreeze(std::chrono::seconds how_long);
  void BrokerDown(std::chrono::seconds how_long);
  void Failover();
  void Blackhole(std::chrono::seconds how_long);

  // Stops the writers, waits for the backlog to drain, stops the relay.
  bool Drain(std::chrono::seconds timeout);
  // outbox-check of one service on the current primary.
  testing::CheckResult Check(int service, const std::string& tag);

  RelayProcess& relay() { return *relay_; }
  MariadbPair& pair() { return pair_; }
  const std::string& dir() const { return dir_; }

 private:
  RelaySpec Spec() const;
  void CollectWriters();

  const Options options_;
  const std::string dir_;
  MariadbPair pair_;
  TcpProxy proxy_;
  TestBroker cluster_;
  std::unique_ptr<RelayProcess> relay_;
  LoggedProcess writers_[2];
  std::string writer_json_[2];
  bool writing_ = false;
  int segment_ = 0;
  int64_t next_aggregate_ = 1;
  int64_t written_ = 0;
  bool ok_ = false;
};

}  // namespace outbox::soak
