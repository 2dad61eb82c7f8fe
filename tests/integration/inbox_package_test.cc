// What a user does on day one (tests/package/check_inbox_package.sh): the
// program of an outside project (tests/package/inbox_user/), built against
// the installed OutboxInbox package, consumes the events the real relay
// publishes from t_outbox, each applied exactly once by the user's own
// handler to the user's own table; and its handler passes through the test
// kit. Hidden ([.]): only the package script runs it, with the program's
// path in INBOX_USER_BINARY. The verdict is SQL against both databases.
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

std::string UserBinary() {
  const char* path = std::getenv("INBOX_USER_BINARY");
  return path ? path : "";
}

// The user's table, which its handler writes, and the consumer user's grant on it.
void CreateUserTable(ConsumerDatabase& db) {
  db.Exec(
      "CREATE TABLE t_user_payment (event_key varchar(128) NOT NULL, order_id bigint NOT NULL, "
      "outbox_id bigint NOT NULL)");
  db.Exec(std::string("GRANT SELECT, INSERT ON `") + db.name() + "`.t_user_payment TO '" +
          ConsumerDatabase::kUser + "'@'%'");
}

}  // namespace

TEST_CASE(
    "an outside project's handler built against the installed package applies every event the "
    "relay publishes exactly once",
    "[.][package]") {
  const std::string user = UserBinary();
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
  const bool applied =
      WaitFor([&] { return inbox.QueryInt("SELECT COUNT(*) FROM t_user_payment") >= 100; }, 120s);
  CHECK(WaitFor([&] { return Unsent(outbox) == 0; }, 30s));
  CHECK(consumer.Stop() == 0);
  relay.Signal(SIGTERM);
  CHECK(relay.Wait(30s) == 0);
  INFO(consumer.Log());
  REQUIRE(applied);
  CHECK(inbox.QueryInt("SELECT COUNT(*) FROM t_user_payment") == 100);
  CHECK(inbox.QueryInt("SELECT COUNT(DISTINCT event_key) FROM t_user_payment") == 100);
  CHECK(inbox.QueryInt("SELECT COUNT(*) FROM t_inbox WHERE consumer = 'payments'") == 100);
  // The version check (newer) kept its state in the library's own table.
  CHECK(inbox.QueryInt("SELECT COUNT(*) FROM t_inbox_aggregate WHERE consumer = 'payments' "
                       "AND last_outbox_id > 0") == 20);
  // Each outbox row once, under its own event_key.
  for (int64_t id = 1; id <= 100; ++id) {
    const std::string key =
        outbox.QueryString("SELECT event_key FROM t_outbox WHERE id = " + std::to_string(id));
    CAPTURE(id, key);
    CHECK(inbox.QueryInt("SELECT COUNT(*) FROM t_user_payment WHERE outbox_id = " +
                         std::to_string(id) + " AND event_key = '" + key + "'") == 1);
  }
  // The user's log callback took the library's lines.
  CHECK(consumer.Count("inbox-user: consumer payments started") == 1);
}

TEST_CASE("an outside project tests its handler with the installed test kit without a broker",
          "[.][package]") {
  const std::string user = UserBinary();
  REQUIRE_FALSE(user.empty());
  ConsumerDatabase db("inbox_package_kit", /*example_effect=*/false);
  CreateUserTable(db);
  TempDir dir;
  ConsumerSpec spec;
  spec.consumer = "payments";
  spec.log_section = false;
  ConsumerProcess kit(dir.path(), "kit", "127.0.0.1:9", db.name(), spec);
  REQUIRE(kit.Start({}, {user, "--test-kit"}));
  CHECK(kit.Wait(60s) == 0);
  INFO(kit.Log());
  CHECK(kit.Count("applied duplicate") == 1);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_user_payment") == 1);
}
