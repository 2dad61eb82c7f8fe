#pragma once

// One relay in-process against the test MariaDB and a mock cluster, plus
// helpers for tests that write their own rows.

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "kafka/kafka_publisher.h"
#include "metrics/metrics.h"
#include "outbox_check.h"
#include "relay/relay.h"
#include "support/test_env.h"

namespace outbox::testing {

// Both claim paths, for a test that runs once per ordering.
inline constexpr Ordering kBothOrderings[] = {Ordering::kPerAggregate, Ordering::kNone};
// A database name for one ordering's run: `base` + "_agg" or "_none".
inline std::string OrderingDbName(const std::string& base, Ordering ordering) {
  return base + (ordering == Ordering::kNone ? "_none" : "_agg");
}

// One ordering's run of test `base`: its database (OrderingDbName) with
// InsertEvents(aggregates, per_aggregate), and the service on it and the
// broker at `bootstrap`, for the test to adjust before it makes the relay.
struct OrderingRun {
  OrderingRun(const std::string& base, Ordering ordering, const std::string& bootstrap,
              int aggregates, int per_aggregate)
      : db(OrderingDbName(base, ordering)) {
    db.InsertEvents(aggregates, per_aggregate);
    service = TestService(db, bootstrap, ordering);
  }
  TestDatabase db;
  ServiceConfig service;
};

// A Relay with the real MysqlStore and KafkaPublisher. Not started: call
// relay->Start(), or step the loops of steps() from the test thread (never
// both at once). The destructor stops it.
struct RelayHarness {
  // `wakeup`: what the claim loop waits on (null: a PollWakeupSource).
  explicit RelayHarness(ServiceConfig service, WakeupSourcePtr wakeup = nullptr);
  ~RelayHarness();

  // The current value of `sample` (e.g. `outbox_stale_transitions_total`)
  // for this service; NaN when absent. `labels` are extra labels after
  // service, e.g. `reason="routing"` (alphabetical order as exposed).
  double Metric(const std::string& name, const std::string& labels = "") const;

  // The same service's units without threads, made at the first call, for a
  // test that steps the loops by hand (ClaimLoop::ClaimOnce, ...).
  RelayUnits& steps();
  // The options of this service's relay (no wake-up source: a PollWakeupSource).
  RelayOptions Options();

  ServiceConfig config;
  Metrics metrics;
  std::shared_ptr<KafkaPublisher> publisher;
  std::unique_ptr<Relay> relay;
  std::unique_ptr<RelayUnits> units;
};

// A row for InsertRow; unset optional columns are left out of the INSERT.
struct RowSpec {
  int64_t id = 0;
  std::string aggregate_type = "Order";
  int64_t aggregate_id = 1;
  std::string event_type = "OrderCreated";
  std::string event_key;  // default: "k<id>"
  std::string payload = "{}";
  std::string status = "NEW";
  std::optional<std::string> topic;                 // needs a `topic` column
  std::optional<std::string> headers;               // needs a `headers` column
  std::optional<std::string> traceparent;           // needs a `traceparent` column
  std::optional<std::string> tracestate;            // needs a `tracestate` column
  std::optional<int64_t> aggregate_version;         // needs an `aggregate_version` column
  std::optional<int32_t> schema_id = std::nullopt;  // needs a `schema_id` column
};
void InsertRow(TestDatabase& db, const RowSpec& row);

// 'text' as a MariaDB string literal (quotes and backslashes escaped).
std::string SqlQuote(const std::string& text);

// A database user '<name>'@'127.0.0.1' with `password` and only `grants`
// (e.g. "SELECT, UPDATE") on the test table; `require` is a REQUIRE clause
// ("SSL"), if any. Dropped on destruction.
class ScopedDbUser {
 public:
  ScopedDbUser(TestDatabase& db, const std::string& name, const std::string& password,
               const std::string& grants, const std::string& require = "");
  ~ScopedDbUser();
  ScopedDbUser(const ScopedDbUser&) = delete;
  ScopedDbUser& operator=(const ScopedDbUser&) = delete;

 private:
  TestDatabase& db_;
  std::string name_;
};

// Kafka's Java murmur2 partitioner (the checker's): the partition the Java
// client picks for `key` among `partitions`.
using check::JavaPartition;

}  // namespace outbox::testing
