// The test kit as a service's own tests use it (outbox/inbox/testing.h,
// docs/CONSUMERS.md "Testing a handler"): const events, copies of events
// built in one expression, and the handler's rows set up and read back on
// the runner's own connection, with nothing but the kit and a DbConfig.
// Real MariaDB.
#include <cppconn/prepared_statement.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "outbox/inbox/schema.h"
#include "outbox/inbox/testing.h"
#include "support/inbox_rig.h"
#include "support/test_env.h"

namespace inbox = outbox::inbox;
using inbox::testing::Outcome;

namespace {

// The ledger of the issue's user: a non-idempotent `cents = cents + ?`.
class Ledger : public inbox::Handler {
 public:
  inbox::Status Apply(inbox::Transaction& tx, const inbox::Event& e) override {
    sql::PreparedStatement& st = tx.Prepare("UPDATE ledger SET cents = cents + ? WHERE id = ?");
    st.setInt64(1, std::stoll(std::string(e.payload)));
    st.setInt64(2, e.aggregate_id);
    st.executeUpdate();
    return inbox::Status::Ok();
  }
};

// A fresh database `name` with the inbox's tables, and the config of the
// consumer "ledger" on it, filled in as a service's own test would; dropped
// when the test ends.
struct FreshInboxDatabase {
  explicit FreshInboxDatabase(const std::string& database) : name(database) {
    admin.Exec("DROP DATABASE IF EXISTS " + name);
    admin.Exec("CREATE DATABASE " + name);
    config.consumer = "ledger";
    config.mysql = outbox::testing::RootInboxDb(name);
    REQUIRE(inbox::CreateTables(config) == "");
  }
  ~FreshInboxDatabase() {
    try {
      admin.Exec("DROP DATABASE " + name);
    } catch (...) {  // the next run drops it first
    }
  }
  const std::string name;
  outbox::testing::SqlClient admin{"mysql"};
  inbox::ConsumerConfig config;
};

}  // namespace

TEST_CASE("the test kit applies const events and reads back what the handler committed",
          "[inbox-kit]") {
  const FreshInboxDatabase db("inbox_test_kit");
  Ledger handler;
  inbox::testing::InboxRunner runner(db.config.mysql, db.config.consumer, handler);
  runner.Execute("CREATE TABLE ledger (id BIGINT PRIMARY KEY, cents BIGINT NOT NULL)");
  runner.Execute("INSERT INTO ledger VALUES (7, 100)");
  const auto paid = inbox::testing::TestEvent("Account", 7, 1).Type("Paid").Payload("250");
  const inbox::testing::TestEvent again = paid;  // a copy is the same event
  CHECK(runner.Apply(paid) == Outcome::kApplied);
  CHECK(runner.Apply(again) == Outcome::kDuplicate);
  CHECK(runner.QueryInt("SELECT cents FROM ledger WHERE id = 7") == 350);
  CHECK(runner.QueryString("SELECT event_key FROM t_inbox") == "Paid-7-1");
  CHECK(runner.QueryInt("SELECT cents FROM ledger WHERE id = 8") == 0);  // no row
}

namespace {

// What the handler was given, per outbox_id.
class Recorder : public inbox::Handler {
 public:
  inbox::Status Apply(inbox::Transaction&, const inbox::Event& e) override {
    std::string mine;
    for (const auto& [name, value] : e.headers)
      if (name == "x-mine") mine = value;
    seen[e.outbox_id] = {std::to_string(e.source.offset), e.traceparent, mine, std::string(e.key)};
    return inbox::Status::Ok();
  }
  std::map<int64_t, std::vector<std::string>> seen;
};

}  // namespace

TEST_CASE("a parked version applied when its gap fills carries its own headers and source",
          "[inbox-kit]") {
  const FreshInboxDatabase db("inbox_test_kit_parked");
  Recorder handler;
  inbox::testing::InboxRunner runner(db.config.mysql, db.config.consumer, handler,
                                     inbox::VersionCheck::kStrict);
  const std::string tp2 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  const auto second = inbox::testing::TestEvent("Account", 7, 12)
                          .Version(2)
                          .Header("traceparent", tp2)
                          .Header("x-mine", "two")
                          .From("outbox.event.Account", 0, 41);
  const auto first = inbox::testing::TestEvent("Account", 7, 11)
                         .Version(1)
                         .Header("x-mine", "one")
                         .From("outbox.event.Account", 0, 42);
  CHECK(runner.Apply(second) == Outcome::kParked);
  CHECK(runner.Apply(first) == Outcome::kApplied);  // and the parked version after it
  CHECK(handler.seen[11] == std::vector<std::string>{"42", "", "one", "7"});
  CHECK(handler.seen[12] == std::vector<std::string>{"41", tp2, "two", "7"});
}

namespace {

// Keeps what the handler was given of the last event's value.
class ValueRecorder : public inbox::Handler {
 public:
  inbox::Status Apply(inbox::Transaction&, const inbox::Event& e) override {
    schema_id = e.schema_id;
    body = std::string(e.body);
    json = e.json;
    schema_type = e.schema_type;
    return inbox::Status::Ok();
  }
  int32_t schema_id = -1;
  std::string body, json, schema_type;
};

}  // namespace

TEST_CASE("the test kit gives a handler the schema id and body of a payload with the wire header",
          "[inbox-kit]") {
  const FreshInboxDatabase db("inbox_test_kit_values");
  ValueRecorder handler;
  inbox::testing::InboxRunner runner(db.config.mysql, db.config.consumer, handler);
  const std::string header("\0\0\0\0\x07", 5);  // magic byte 0, schema id 7
  const auto avro = inbox::testing::TestEvent("Order", 1, 1)
                        .Payload(header + "\x54")
                        .Decoded(R"({"order_id":42})");
  const inbox::testing::TestEvent copy = avro;
  REQUIRE(runner.Apply(copy) == Outcome::kApplied);
  CHECK(handler.schema_id == 7);
  CHECK(handler.body == "\x54");
  CHECK(handler.json == R"({"order_id":42})");
  CHECK(handler.schema_type == "AVRO");
  REQUIRE(runner.Apply(inbox::testing::TestEvent("Order", 1, 2).Payload("{}")) ==
          Outcome::kApplied);
  CHECK(handler.schema_id == 0);
  CHECK(handler.body == "{}");
  CHECK(handler.json.empty());
}
