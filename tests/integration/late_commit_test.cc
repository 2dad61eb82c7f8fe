// Services commit out of id order: a transaction that took id 1001 may commit
// after one that took id 3000. A per_aggregate pass reads the unsent rows page
// by page; a row that commits below the pass cursor after its page was read
// must not let a later event of its aggregate go out first.
#include <catch2/catch.hpp>
#include <functional>

#include "fakes/fake_store.h"
#include "kafka/kafka_config.h"
#include "kafka/kafka_publisher.h"
#include "metrics/metrics.h"
#include "outbox/mysql_store.h"
#include "relay/relay.h"
#include "support/kafka_reader.h"
#include "support/test_broker.h"
#include "support/test_env.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

// Forwards to a MysqlStore and runs `before_scan(n)` before the n-th
// ScanWindow call (1-based), to commit rows between two pages of a pass.
class ScanHookStore : public OutboxStoreWrapper {
 public:
  ScanHookStore(MysqlConfig mysql, std::function<void(int)> before_scan)
      : OutboxStoreWrapper(std::make_unique<MysqlStore>(std::move(mysql))),
        before_scan_(std::move(before_scan)) {}
  Status ScanWindow(int64_t from_id, int limit, std::vector<WindowRow>* out) override {
    before_scan_(++scans_);
    return OutboxStoreWrapper::ScanWindow(from_id, limit, out);
  }

 private:
  std::function<void(int)> before_scan_;
  int scans_ = 0;
};

std::string StatusOf(TestDatabase& db, int64_t id) {
  return db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id = " + std::to_string(id) +
                     " AND status = 'SENDING'") == 1
             ? "SENDING"
             : "other";
}

}  // namespace

TEST_CASE(
    "a row committed below the pass cursor is not overtaken by a later event of its "
    "aggregate",
    "[e2e][ordering]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("e2e_late_commit");
  // A full first page (1,000 rows), all but row 1 held by another live relay:
  // the pass reads it, claims row 1 alone, and moves its cursor past id 1998.
  std::string values;
  for (int i = 1; i <= 1000; ++i) {
    values += std::string(values.empty() ? "" : ",") + "(" + std::to_string(2 * i) + ",'Order'," +
              std::to_string(i) + ",'OrderCreated','held-" + std::to_string(i) +
              "','{}','SENDING',NOW() + INTERVAL 1 HOUR,NOW(),NOW())";
  }
  // Row 1, of another aggregate, is due: the relay's idle head read finds work
  // and a pass starts (the held rows alone are not claimable).
  values += ",(1,'Order',9999,'OrderCreated','due-1','{}','NEW',NOW(),NOW(),NOW())";
  db.Exec(
      "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, "
      "status, next_retry_at, created_at, updated_at) VALUES " +
      values);
  auto insert = [&](int64_t id, int version) {
    db.Exec(
        "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, "
        "status, next_retry_at, created_at, updated_at) VALUES (" +
        std::to_string(id) + ", 'Order', 5000, 'OrderPaid', 'late-" + std::to_string(version) +
        "', '{}', 'NEW', NOW(), NOW(), NOW())");
  };

  ServiceConfig s = TestService(db, cluster.bootstrap());
  s.batch_size = 10;  // pages of 1,000 rows
  std::vector<std::string> warnings;
  std::string err;
  auto publisher = KafkaPublisher::Create(
      ProducerProperties(s.kafka, "late-commit", s.lease_ms, &warnings), &err);
  REQUIRE(publisher);
  Metrics metrics;
  RelayOptions o;
  o.config = s;
  MysqlConfig mysql = s.mysql;
  o.store_factory = [mysql, &insert]() -> OutboxStorePtr {
    return std::make_unique<ScanHookStore>(mysql, [&insert](int scan) {
      if (scan == 2) {
        // Between the first and the second page: the aggregate's first event
        // (id 1001, below the cursor) commits, then its second (id 3000).
        insert(1001, 1);
        insert(3000, 2);
      }
    });
  };
  o.publisher = publisher;
  o.metrics = &metrics.ForService(s.name);
  RelayUnits relay(std::move(o));

  relay.claim.ClaimOnce();
  // Claiming 3000 alone would publish the aggregate's second event first.
  CHECK_FALSE((StatusOf(db, 3000) == "SENDING" && StatusOf(db, 1001) != "SENDING"));
  // The next pass sees both and claims them together, in order.
  for (int i = 0; i < 3 && StatusOf(db, 1001) != "SENDING"; ++i) relay.claim.ClaimOnce();
  CHECK(StatusOf(db, 1001) == "SENDING");
  CHECK(StatusOf(db, 3000) == "SENDING");
  while (relay.queue->inflight() > 0 && relay.settle.SettleOrGroup(5000ms).count > 0) {
  }
  CHECK(db.QueryInt(
            "SELECT COUNT(*) FROM t_outbox WHERE aggregate_id = 5000 AND status = 'SENT'") == 2);
  auto msgs = ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"});
  std::vector<std::string> order;
  for (const auto& m : msgs)
    if (m.headers.at("outbox_id") != "1") order.push_back(m.headers.at("outbox_id"));
  CHECK(order == std::vector<std::string>{"1001", "3000"});
}
