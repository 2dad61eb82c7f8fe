#pragma once

// Helpers for the example consumer's tests (tests/integration/inbox_consumer_test.cc):
// a database with the inbox's tables (sql/) and the example's counter, a user
// with only the grants docs/CONSUMERS.md lists, a producer that writes
// messages the way the relay does (or broken on purpose), and
// build/outbox-inbox-consumer as a child process that can be SIGKILLed.

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "subprocess.h"
#include "support/kafka_reader.h"  // GroupLag, ConsumeAll
#include "support/process.h"       // TempDir
#include "support/test_broker.h"
#include "support/test_env.h"

namespace outbox::testing {

// The relay's topic of Order events, which the consumer tests read.
inline const std::string kOrderTopic = "outbox.event.Order";

// The group timing of every test consumer, in a process (ConsumerProcess)
// or in this one (InboxConfig, support/inbox_rig.h): Kafka properties. A
// rebalance waits on the session timeout, and librdkafka's default (45 s)
// would be most of a test's deadline:
// - the mock cluster holds the JoinGroup answers of a rebalance (but the
//   group's first) for session.timeout.ms less 1 s;
// - it ends a SyncGroup round when the leader's assignments arrive and
//   answers a member whose SyncGroup comes later "Invalid request" (a real
//   broker hands it its assignment); that member joins again, another such
//   wait. On a busy machine this happens to any two members at any
//   rebalance, and may happen again at the next;
// - a SIGKILLed member leaves the group when its session times out.
// 6 s keeps each of these a few seconds; heartbeats every 500 ms keep a
// live member's session on a busy machine.
inline const std::map<std::string, std::string> kGroupTiming = {{"session.timeout.ms", "6000"},
                                                                {"heartbeat.interval.ms", "500"}};

// One event as the relay publishes it.
struct TestEvent {
  int64_t outbox_id = 0;
  int64_t aggregate_id = 0;
  std::string event_type = "OrderPaid";
  std::string aggregate_type = "Order";
  std::string event_key;  // default: "{event_type}-{aggregate_id}-{outbox_id}"
  int64_t version = 0;    // the aggregate_version header; 0: none
  std::string Key() const;
};

// `aggregates` x `per_aggregate` events, interleaved, outbox ids from `first_id`.
std::vector<TestEvent> MakeEvents(int aggregates, int per_aggregate, int64_t first_id = 1);

// A raw message, for poison cases: headers as given (nullopt: left out).
struct RawMessage {
  std::string key;
  std::string value = "{}";
  std::map<std::string, std::optional<std::string>> headers;
};
RawMessage ToMessage(const TestEvent& e);

class TestProducer {
 public:
  // `max_bytes`: the producer's message.max.bytes (librdkafka's default 1000000).
  explicit TestProducer(const std::string& bootstrap, int max_bytes = 1000000);
  ~TestProducer();
  // Produces and waits for the acknowledgement; throws on failure.
  void Send(const std::string& topic, const RawMessage& m);
  void Send(const std::string& topic, const std::vector<TestEvent>& events);

 private:
  rd_kafka_t* rk_ = nullptr;
};

// A fresh database with the consumer's tables as sql/ ships them and the
// consumer user (SELECT, INSERT, UPDATE, DELETE on them, nothing else).
class ConsumerDatabase {
 public:
  // The library's tables (t_inbox and its retention index,
  // t_inbox_aggregate, t_inbox_parked) and, with `example_effect`, the
  // counter handler's t_aggregate_effect.
  explicit ConsumerDatabase(const std::string& name, bool example_effect = true);
  ~ConsumerDatabase();
  const std::string& name() const { return name_; }
  // Reconnects once if the server went away (the outage test restarts it).
  int64_t QueryInt(const std::string& q);
  // Every event of `events` (distinct by event_key) applied exactly once:
  // t_inbox has one row per event, t_aggregate_effect.applied counts them per
  // aggregate and last_outbox_id is their maximum. "" when so, else what differs.
  std::string CheckExactlyOnce(const std::vector<TestEvent>& events);
  // Events applied below their aggregate's last_outbox_id: 0 when each
  // aggregate's events took effect in outbox_id order.
  int64_t OutOfOrder() {
    return QueryInt("SELECT COALESCE(SUM(out_of_order), 0) FROM t_aggregate_effect");
  }
  int64_t Applied() { return QueryInt("SELECT COALESCE(SUM(applied), 0) FROM t_aggregate_effect"); }
  // Rows of t_inbox_parked with this reason (version_gap | undeliverable).
  int64_t Parked(const std::string& reason) {
    return QueryInt("SELECT COUNT(*) FROM t_inbox_parked WHERE reason = '" + reason + "'");
  }
  // Replaces the consumer user's privileges on its tables (e.g. "SELECT":
  // the database refuses every write, an outage that is not a network one).
  void SetConsumerGrants(const std::string& privileges);
  void Exec(const std::string& q) { sql_->Exec(q); }

  static constexpr const char* kUser = "inbox_consumer";
  static constexpr const char* kPassword = "inbox-consumer-pw";

 private:
  std::string name_;
  std::vector<std::string> tables_;  // the consumer user's grants
  std::unique_ptr<SqlClient> sql_;
};

struct ConsumerSpec {
  std::string consumer = "fulfillment";
  std::string group = "fulfillment";
  std::string topics_yaml = "topics: [outbox.event.Order]";
  int max_attempts = 3;
  std::string properties_yaml;  // extra kafka.properties entries, "key: value" per line
  std::string extra_yaml;       // extra top-level keys (version_check: strict, http: ...)
  // The example binary's log section; a service's own binary (the package
  // test's) is refused one by the public loader.
  bool log_section = true;
};

// build/outbox-inbox-consumer --config FILE, its log in `dir`.
class ConsumerProcess {
 public:
  ConsumerProcess(std::string dir, std::string name, const std::string& bootstrap,
                  const std::string& database, ConsumerSpec spec = {});
  // `command`: the program and its first arguments, "--config FILE" after
  // them (default: build/outbox-inbox-consumer).
  bool Start(const std::map<std::string, std::string>& env = {},
             std::vector<std::string> command = {INBOX_CONSUMER_BINARY});
  // SIGTERM and wait; the exit code (128 + signal if killed), -1 on timeout.
  int Stop(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  void Kill() { proc_.Kill(); }
  // Exit code once exited (waits up to `timeout`), -1 if still running.
  int Wait(std::chrono::milliseconds timeout);
  bool running() { return proc_.running(); }
  std::string Log() const;
  // Number of lines of the log containing `text`.
  int Count(const std::string& text) const;
  const std::string& config_path() const { return config_path_; }

 private:
  std::string config_path_, log_path_;
  Subprocess proc_;
};

// What every consumer scenario starts from: a broker with `topics` (name,
// partitions), a scratch directory, a consumer database and a producer
// (`producer_max_bytes`: its message.max.bytes).
struct ConsumerRig {
  ConsumerRig(const std::string& db_name, const std::vector<std::pair<std::string, int>>& topics,
              int producer_max_bytes = 1000000);
  ConsumerProcess Consumer(const std::string& name, ConsumerSpec spec = {}) {
    return ConsumerProcess(dir.path(), name, cluster.bootstrap(), db.name(), std::move(spec));
  }
  TestBroker cluster;
  TempDir dir;
  ConsumerDatabase db;
  TestProducer producer;
};

std::string ReadSourceFile(const std::string& relative);

}  // namespace outbox::testing
