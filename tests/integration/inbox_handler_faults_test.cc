// What a handler can do to its own transaction, against the real MariaDB
// (outbox/inbox/handler.h, transaction.h): a handler that swallows a
// deadlock it provoked (a second connection holds the row it wants) and
// returns Ok does not lose the event: the library finds the transaction
// rolled back before COMMIT and tries the event again, counted and logged
// with its key; a handler that puts values in its SQL text keeps at most
// mysql.statement_cache statements prepared, and a server out of
// prepared statements (error 1461) does not stop the events.
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "outbox/inbox/consumer.h"
#include "outbox/inbox/testing.h"
#include "support/consumer_harness.h"
#include "support/inbox_rig.h"
#include "support/wait.h"

using namespace outbox::testing;
using namespace std::chrono_literals;
namespace inbox = outbox::inbox;

namespace {

// t_lock's rows 1 and 2 (the ones the deadlock is about) and t_done, the
// effect's last part, for the consumer user; t_heavy for the other side.
void CreateDeadlockTables(ConsumerDatabase& db) {
  db.Exec("CREATE TABLE t_lock (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB");
  db.Exec("INSERT INTO t_lock VALUES (1, 0), (2, 0)");
  db.Exec("CREATE TABLE t_done (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB");
  db.Exec("INSERT INTO t_done VALUES (1, 0)");
  db.Exec("CREATE TABLE t_heavy (id INT AUTO_INCREMENT PRIMARY KEY, pad INT) ENGINE=InnoDB");
  for (const char* t : {"t_lock", "t_done"})
    db.Exec(std::string("GRANT SELECT, UPDATE ON `") + db.name() + "`.`" + t + "` TO " +
            ConsumerDatabase::kUser);
}

// Row 1 of t_lock, then (the first time) row 2 while a second connection
// that holds row 2 and has written much more waits for row 1: InnoDB
// rolls back the lighter transaction, the handler's, with its inbox row.
// The handler catches the deadlock, finishes its effect (t_done, now in a
// new transaction) and returns Ok.
class DeadlockSwallower : public inbox::Handler {
 public:
  explicit DeadlockSwallower(std::string database) : database_(std::move(database)) {}
  inbox::Status Apply(inbox::Transaction& tx, const inbox::Event&) override {
    tx.Prepare("UPDATE t_lock SET n = n + 1 WHERE id = 1").executeUpdate();
    if (provoke_.exchange(false)) {
      ProvokeDeadlock(tx);
    } else {
      tx.Prepare("UPDATE t_lock SET n = n + 1 WHERE id = 2").executeUpdate();
    }
    tx.Prepare("UPDATE t_done SET n = n + 1 WHERE id = 1").executeUpdate();
    return inbox::Status::Ok();
  }
  std::atomic<int> deadlocks{0};

 private:
  void ProvokeDeadlock(inbox::Transaction& tx) {
    SqlClient other(database_), watcher(database_);
    other.Exec("BEGIN");
    other.Exec(
        "INSERT INTO t_heavy (pad) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
        "FROM s WHERE i < 500) SELECT i FROM s");
    other.Exec("UPDATE t_lock SET n = n + 1 WHERE id = 2");
    std::thread waits([&] {
      try {
        other.Exec("UPDATE t_lock SET n = n + 1 WHERE id = 1");  // waits for the handler's row
        other.Exec("COMMIT");
      } catch (const sql::SQLException&) {
        other.Exec("ROLLBACK");
      }
    });
    WaitFor(
        [&] {
          return watcher.QueryInt(
                     "SELECT COUNT(*) FROM information_schema.INNODB_TRX "
                     "WHERE trx_state = 'LOCK WAIT'") > 0;
        },
        10s);
    try {
      tx.Prepare("UPDATE t_lock SET n = n + 1 WHERE id = 2").executeUpdate();
    } catch (const sql::SQLException& e) {
      if (e.getErrorCode() == 1213) ++deadlocks;  // swallowed: the bug under test
    }
    waits.join();
  }

  std::string database_;
  std::atomic<bool> provoke_{true};
};

int64_t InboxRows(ConsumerDatabase& db) { return db.QueryInt("SELECT COUNT(*) FROM t_inbox"); }

}  // namespace

TEST_CASE(
    "a handler that swallows a deadlock and returns Ok has its event tried again and counted and "
    "logged with its key",
    "[inbox-handler-faults]") {
  ConsumerRig rig("inbox_swallowed_deadlock", {{kOrderTopic, 1}, {kOrderTopic + ".dlq", 1}});
  CreateDeadlockTables(rig.db);
  const inbox::ConsumerConfig config = InboxConfig(rig);
  const std::vector<TestEvent> events = MakeEvents(1, 1);
  rig.producer.Send(kOrderTopic, events);
  outbox::Mutex mu;
  std::string log;
  inbox::ConsumerOptions options;
  options.log = [&](inbox::LogLevel level, std::string_view line) {
    outbox::MutexLock lock(&mu);
    if (level == inbox::LogLevel::kWarn || line.rfind("stopped: ", 0) == 0)
      log.append(line).append("\n");
  };
  DeadlockSwallower handler(rig.db.name());
  inbox::Consumer consumer(config, handler, options);
  bool applied = false;
  (void)RunUntil(
      consumer, [&] { return InboxRows(rig.db) == 1; }, &applied);
  outbox::MutexLock lock(&mu);
  INFO(log);
  REQUIRE(handler.deadlocks == 1);  // the handler's transaction was the deadlock's victim
  CHECK(applied);
  // Once: the handler's rows 1 and 2 once each (row 1 also by the other
  // connection), t_done once, one inbox row.
  CHECK(rig.db.QueryInt("SELECT n FROM t_lock WHERE id = 1") == 2);
  CHECK(rig.db.QueryInt("SELECT n FROM t_lock WHERE id = 2") == 2);
  CHECK(rig.db.QueryInt("SELECT n FROM t_done WHERE id = 1") == 1);
  CHECK(log.find("handler: event " + events[0].Key() +
                 " returned Ok after its transaction was rolled back under it") !=
        std::string::npos);
  CHECK(log.find("1 transaction(s) lost under the handler") != std::string::npos);
}

TEST_CASE("the test kit says lost_transaction for a handler that swallows a deadlock",
          "[inbox-handler-faults]") {
  ConsumerDatabase db("inbox_kit_swallowed_deadlock");
  CreateDeadlockTables(db);
  DeadlockSwallower handler(db.name());
  inbox::testing::InboxRunner runner(InboxDb(db), "payments", handler);
  inbox::testing::TestEvent paid("Order", 7, 1);
  std::string error;
  CHECK(runner.Apply(paid, &error) == inbox::testing::Outcome::kLostTransaction);
  CHECK(error.find("its inbox row is gone") != std::string::npos);
  CHECK(handler.deadlocks == 1);
  CHECK(runner.Apply(paid) == inbox::testing::Outcome::kApplied);
  CHECK(db.QueryInt("SELECT n FROM t_done WHERE id = 1") == 1);
}

namespace {

// Statements whose text carries the event's values: a new statement per
// event, `per_event` of them, all prepared before any runs (so an
// eviction of one the Apply holds would show).
class ValuesInText : public inbox::Handler {
 public:
  explicit ValuesInText(int per_event) : per_event_(per_event) {}
  inbox::Status Apply(inbox::Transaction& tx, const inbox::Event& e) override {
    std::vector<sql::PreparedStatement*> held;
    for (int i = 0; i < per_event_; ++i)
      held.push_back(&tx.Prepare("SELECT " + std::to_string(e.outbox_id * 100 + i)));
    for (auto* st : held) std::unique_ptr<sql::ResultSet>(st->executeQuery());
    return inbox::Status::Ok();
  }

 private:
  int per_event_;
};

int64_t PreparedOnServer(ConsumerDatabase& db) {
  return db.QueryInt(
      "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
      "WHERE VARIABLE_NAME = 'PREPARED_STMT_COUNT'");
}

}  // namespace

TEST_CASE(
    "a handler's statements stay prepared up to mysql.statement_cache with the least recently "
    "used out",
    "[inbox-handler-faults]") {
  ConsumerDatabase db("inbox_statement_cache");
  inbox::DbConfig mysql = InboxDb(db);
  mysql.statement_cache = 4;
  ValuesInText handler(6);  // more than the cache in one Apply: those six stay until it returns
  inbox::testing::InboxRunner runner(mysql, "payments", handler);
  const int64_t before = PreparedOnServer(db);
  for (int64_t id = 1; id <= 30; ++id) {
    inbox::testing::TestEvent e("Order", 1, id);
    REQUIRE(runner.Apply(e) == inbox::testing::Outcome::kApplied);
  }
  // The library's own statements of the connection (9) and the last Apply's six.
  CHECK(PreparedOnServer(db) - before <= 9 + 6);
}

TEST_CASE("a server out of prepared statements (error 1461) shrinks the cache and the events go on",
          "[inbox-handler-faults]") {
  ConsumerDatabase db("inbox_statement_limit");
  const int64_t old_max = db.QueryInt("SELECT @@GLOBAL.max_prepared_stmt_count");
  ValuesInText handler(1);
  {
    inbox::testing::InboxRunner runner(InboxDb(db), "payments", handler);
    inbox::testing::TestEvent first("Order", 1, 1);
    REQUIRE(runner.Apply(first) == inbox::testing::Outcome::kApplied);  // connected
    // Room for two more statements on the whole server.
    db.Exec("SET GLOBAL max_prepared_stmt_count = " + std::to_string(PreparedOnServer(db) + 2));
    std::vector<std::string> outcomes;
    for (int64_t id = 2; id <= 12; ++id) {
      inbox::testing::TestEvent e("Order", 1, id);
      outcomes.push_back(inbox::testing::OutcomeName(runner.Apply(e)));
    }
    db.Exec("SET GLOBAL max_prepared_stmt_count = " + std::to_string(old_max));
    CHECK(outcomes == std::vector<std::string>(11, "applied"));
  }
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_inbox") == 12);
}
