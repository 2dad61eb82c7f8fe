// What a user does on day one (tests/package/check_inbox_package.sh): the
// installed example service (examples/payments/), built as a project of
// its own against the installed OutboxInbox package, consumes the events
// the real relay publishes from t_outbox, each applied exactly once by its
// handler to its own table; and its test passes through the test kit.
// Hidden ([.]): only the package script runs it, with the example's build
// directory in PAYMENTS_EXAMPLE_BUILD. The verdict is SQL against both
// databases.
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdlib>
#include <string>

#include "support/consumer_harness.h"
#include "support/process.h"
#include "support/test_broker.h"
#include "support/wait.h"

using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

// One of the example's programs (payments-consumer, payments-test).
std::string ExampleBinary(const std::string& name) {
  const char* dir = std::getenv("PAYMENTS_EXAMPLE_BUILD");
  return dir ? std::string(dir) + "/" + name : "";
}

// The example's table (its payments.sql), which its handler writes, and the
// consumer user's grants on it as the file says.
void CreateUserTable(ConsumerDatabase& db) {
  db.Exec(ReadSourceFile("examples/payments/payments.sql"));
  db.Exec(std::string("GRANT SELECT, INSERT, DELETE ON `") + db.name() + "`.t_payment TO '" +
          ConsumerDatabase::kUser + "'@'%'");
}

}  // namespace

TEST_CASE(
    "the installed example service built against the installed package records every payment the "
    "relay publishes exactly once",
    "[.][package]") {
  const std::string user = ExampleBinary("payments-consumer");
  REQUIRE_FALSE(user.empty());  // set by tests/package/check_inbox_package.sh
  TestBroker cluster;
  cluster.CreateTopic(kOrderTopic, 4);
  cluster.CreateTopic(kOrderTopic + ".dlq", 1);
  TestDatabase outbox("inbox_package_outbox");
  outbox.InsertEvents(20, 5);  // 100 events, interleaved aggregates
  // The library's tables only: the user's handler writes its own.
  ConsumerDatabase inbox("inbox_package_consumer", /*example_effect=*/false);
  CreateUserTable(inbox);
  TempDir dir;
  ChildProcess relay(
      {OUTBOX_BINARY, "run", "--config",
       dir.Write("relay.yaml", RelayConfigYaml(outbox, "orders", cluster.bootstrap()))},
      ChildEnv(RelayChildEnv()));
  ConsumerSpec spec;
  spec.consumer = spec.group = "payments";
  spec.log_section = false;
  ConsumerProcess consumer(dir.path(), "payments", cluster.bootstrap(), inbox.name(), spec);
  REQUIRE(consumer.Start({}, {user}));
  const bool applied = WaitFor(
      [&] {
        return inbox.QueryInt("SELECT COUNT(*) FROM t_inbox WHERE consumer = 'payments'") >= 100;
      },
      120s);
  CHECK(WaitFor([&] { return Unsent(outbox) == 0; }, 30s));
  CHECK(consumer.Stop() == 0);
  relay.Signal(SIGTERM);
  CHECK(relay.Wait(30s) == 0);
  INFO(consumer.Log());
  REQUIRE(applied);
  // Every event in the inbox; the OrderPaid ones (one per aggregate) in t_payment.
  CHECK(inbox.QueryInt("SELECT COUNT(*) FROM t_inbox WHERE consumer = 'payments'") == 100);
  CHECK(outbox.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE event_type = 'OrderPaid'") == 20);
  CHECK(inbox.QueryInt("SELECT COUNT(*) FROM t_payment") == 20);
  CHECK(inbox.QueryInt("SELECT COUNT(DISTINCT event_key) FROM t_payment") == 20);
  // The version check (newer) kept its state in the library's own table.
  CHECK(inbox.QueryInt("SELECT COUNT(*) FROM t_inbox_aggregate WHERE consumer = 'payments' "
                       "AND last_outbox_id > 0") == 20);
  // Each OrderPaid outbox row once, under its own event_key and order.
  for (int64_t id = 1; id <= 100; ++id) {
    const std::string where = " FROM t_outbox WHERE id = " + std::to_string(id);
    const std::string key = outbox.QueryString("SELECT event_key" + where);
    const bool paid = outbox.QueryString("SELECT event_type" + where) == "OrderPaid";
    CAPTURE(id, key, paid);
    CHECK(inbox.QueryInt("SELECT COUNT(*) FROM t_payment WHERE outbox_id = " + std::to_string(id) +
                         " AND event_key = '" + key + "' AND order_id = " +
                         outbox.QueryString("SELECT aggregate_id" + where)) == (paid ? 1 : 0));
  }
  // The user's log callback took the library's lines.
  CHECK(consumer.Count("payments-consumer: info: consumer payments started") == 1);
}

TEST_CASE("the installed example service tests its handler with the test kit without a broker",
          "[.][package]") {
  const std::string test = ExampleBinary("payments-test");
  REQUIRE_FALSE(test.empty());
  ConsumerDatabase db("inbox_package_kit", /*example_effect=*/false);
  CreateUserTable(db);
  TempDir dir;
  ConsumerSpec spec;
  spec.consumer = "payments";
  spec.log_section = false;
  ConsumerProcess kit(dir.path(), "kit", "127.0.0.1:9", db.name(), spec);
  REQUIRE(kit.Start({}, {test}));
  CHECK(kit.Wait(60s) == 0);
  INFO(kit.Log());
  CHECK(kit.Count("applied duplicate") == 1);
  CHECK(kit.Count("payments-test: ok") == 1);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_payment") == 1);
}
