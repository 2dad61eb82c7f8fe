#include <catch2/catch.hpp>

#include "binlog/binlog_check.h"
#include "binlog/binlog_options.h"
#include "binlog/transaction_tracker.h"

using outbox::binlog::Commit;
using outbox::binlog::DeriveServerId;
using outbox::binlog::QualifiedNames;
using outbox::binlog::TransactionTracker;

namespace {
Commit::Table T(const char* db, const char* table) { return {db, table}; }
}  // namespace

TEST_CASE("binlog: a ROW transaction is handed out at its XID with every table it mapped",
          "[binlog-unit]") {
  TransactionTracker t;
  Commit c;
  t.OnGtid(false);
  t.OnTableMap(7, "order_db", "t_outbox");
  CHECK_FALSE(t.OnRows(7, true, true, &c));  // inside the transaction: not yet
  t.OnTableMap(8, "order_db", "orders");
  t.OnTableMap(7, "order_db", "t_outbox");
  CHECK_FALSE(t.OnRows(8, false, false, &c));
  CHECK_FALSE(t.OnRows(7, false, true, &c));
  REQUIRE(t.OnXid(&c));
  CHECK(c.tables == std::vector<Commit::Table>{T("order_db", "t_outbox"), T("order_db", "orders")});
  CHECK_FALSE(c.all);
  CHECK_FALSE(t.OnXid(&c));  // nothing pending after it
}

TEST_CASE(
    "binlog: a statement-format write names its default database and the databases it qualifies",
    "[binlog-unit]") {
  TransactionTracker t;
  Commit c;
  t.OnGtid(false);
  CHECK_FALSE(t.OnQuery("app", "INSERT INTO pay_db.t_outbox VALUES (1)", &c));
  REQUIRE(t.OnXid(&c));
  CHECK(c.tables == std::vector<Commit::Table>{T("app", ""), T("pay_db", "")});
}

TEST_CASE("binlog: a statement without a default database that qualifies nothing wakes everyone",
          "[binlog-unit]") {
  TransactionTracker t;
  Commit c;
  t.OnGtid(false);
  t.OnQuery("", "INSERT INTO t_outbox VALUES (1)", &c);
  REQUIRE(t.OnXid(&c));
  CHECK(c.all);
}

TEST_CASE("binlog: a MySQL transaction opened by BEGIN ends at COMMIT and a standalone DDL at once",
          "[binlog-unit]") {
  TransactionTracker t;
  Commit c;
  t.OnGtid(true);
  CHECK_FALSE(t.OnQuery("db", "BEGIN", &c));
  t.OnTableMap(0, "db", "t_outbox");
  CHECK_FALSE(t.OnRows(0, true, true, &c));
  REQUIRE(t.OnQuery("db", "COMMIT", &c));  // a non-transactional engine's end marker
  CHECK(c.tables == std::vector<Commit::Table>{T("db", "t_outbox")});
  t.OnGtid(true);
  REQUIRE(t.OnQuery("db", "CREATE TABLE x (id INT)", &c));
  CHECK(c.tables == std::vector<Commit::Table>{T("db", "")});
}

TEST_CASE("binlog: rows outside a transaction end at their statement end flag", "[binlog-unit]") {
  TransactionTracker t;
  Commit c;
  t.OnGtid(true);
  t.OnTableMap(0, "db", "myisam_t");
  CHECK_FALSE(t.OnRows(0, true, false, &c));
  REQUIRE(t.OnRows(0, true, true, &c));
  CHECK(c.tables == std::vector<Commit::Table>{T("db", "myisam_t")});
}

TEST_CASE("binlog: savepoints do not end a transaction and XA COMMIT wakes everyone",
          "[binlog-unit]") {
  TransactionTracker t;
  Commit c;
  t.OnGtid(false);
  CHECK_FALSE(t.OnQuery("db", "SAVEPOINT `a`", &c));
  CHECK_FALSE(t.OnQuery("db", "ROLLBACK TO `a`", &c));
  t.OnTableMap(0, "db", "t_outbox");
  t.OnRows(0, true, true, &c);
  REQUIRE(t.OnXid(&c));
  CHECK(c.tables.size() == 1);
  t.OnGtid(true);
  REQUIRE(t.OnQuery("", "XA COMMIT X'31',X'',1", &c));
  CHECK(c.all);
}

TEST_CASE("binlog: an unreadable event wakes everyone at the end of its transaction",
          "[binlog-unit]") {
  TransactionTracker t;
  Commit c;
  t.OnGtid(false);
  t.OnUnknown();
  REQUIRE(t.OnXid(&c));
  CHECK(c.all);
}

TEST_CASE("binlog: a stream that breaks mid-transaction flushes what it had", "[binlog-unit]") {
  TransactionTracker t;
  Commit c;
  t.OnGtid(false);
  t.OnTableMap(0, "db", "t_outbox");
  t.OnRows(0, true, false, &c);
  REQUIRE(t.Flush(&c));
  CHECK(c.tables == std::vector<Commit::Table>{T("db", "t_outbox")});
  CHECK_FALSE(t.Flush(&c));
}

TEST_CASE("binlog: qualified names are read from plain and backquoted identifiers",
          "[binlog-unit]") {
  CHECK(QualifiedNames("insert into d1.t values (1)") == std::vector<std::string>{"d1"});
  CHECK(QualifiedNames("UPDATE `my db`.`t` SET x = 1") == std::vector<std::string>{"my db"});
  CHECK(QualifiedNames("UPDATE `a``b`.t SET x = 1") == std::vector<std::string>{"a`b"});
  CHECK(QualifiedNames("insert into a.t select * from b.u, a.v") ==
        std::vector<std::string>{"a", "b"});
  CHECK(QualifiedNames("insert into t values (1.5)") == std::vector<std::string>{"1"});
  CHECK(QualifiedNames(".x").empty());
  CHECK(QualifiedNames("`.x").empty());
}

TEST_CASE("binlog: the derived server_id is stable and high and differs by instance host and port",
          "[binlog-unit]") {
  const uint32_t id = DeriveServerId("relay-1", "db.example", 3306);
  CHECK(id == DeriveServerId("relay-1", "db.example", 3306));
  CHECK(id >= 0x80000000u);
  CHECK(id != DeriveServerId("relay-2", "db.example", 3306));
  CHECK(id != DeriveServerId("relay-1", "db2.example", 3306));
  CHECK(id != DeriveServerId("relay-1", "db.example", 3307));
  // The documented formula (docs/BINLOG.md), by a known value.
  CHECK(DeriveServerId("", "", 0) == (0x80000000u | (0x3617a6d4u & 0x7FFFFFFFu)));
}

TEST_CASE("binlog: a statement that names no database wakes everyone even after one that did",
          "[binlog-unit]") {
  TransactionTracker t;
  Commit c;
  t.OnGtid(false);
  t.OnQuery("", "UPDATE d1.t SET x = 1", &c);
  t.OnQuery("", "INSERT INTO t_outbox VALUES (1)", &c);
  REQUIRE(t.OnXid(&c));
  CHECK(c.all);
}

TEST_CASE("binlog: a database that binlog_do_db or binlog_ignore_db leaves out is reported",
          "[binlog-unit]") {
  outbox::binlog::BinlogServerInfo info;
  info.log_bin = true;
  std::vector<std::string> problems;
  outbox::binlog::CheckDatabaseFilters(info, {"order_db"}, "db:3306", &problems);
  CHECK(problems.empty());
  info.do_db = "pay_db,user_db";
  outbox::binlog::CheckDatabaseFilters(info, {"order_db", "pay_db"}, "db:3306", &problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("order_db is not in binlog_do_db") != std::string::npos);
  problems.clear();
  info.do_db.clear();
  info.ignore_db = "order_db";
  outbox::binlog::CheckDatabaseFilters(info, {"order_db"}, "db:3306", &problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("binlog_ignore_db") != std::string::npos);
}

TEST_CASE("binlog: a commit says whether it may have inserted rows or only updated them",
          "[binlog-unit]") {
  TransactionTracker t;
  Commit c;
  t.OnGtid(false);
  t.OnTableMap(3, "db", "t_outbox");
  t.OnRows(3, false, true, &c);  // the relay's own claim or settle: an UPDATE
  REQUIRE(t.OnXid(&c));
  REQUIRE(c.tables.size() == 1);
  CHECK_FALSE(c.tables[0].insert);
  t.OnGtid(false);
  t.OnTableMap(3, "db", "t_outbox");
  t.OnRows(3, false, false, &c);
  t.OnRows(3, true, true, &c);  // and an INSERT in the same transaction
  REQUIRE(t.OnXid(&c));
  CHECK(c.tables[0].insert);
  t.OnGtid(false);
  t.OnQuery("db", "UPDATE t_outbox SET status = 'SENT' WHERE id = 1", &c);
  REQUIRE(t.OnXid(&c));
  CHECK_FALSE(c.tables[0].insert);
  t.OnGtid(false);
  t.OnQuery("db", "INSERT INTO t_outbox VALUES (1)", &c);
  REQUIRE(t.OnXid(&c));
  CHECK(c.tables[0].insert);
}

TEST_CASE("binlog: rows of a table that was never mapped wake everyone", "[binlog-unit]") {
  TransactionTracker t;
  Commit c;
  t.OnGtid(false);
  t.OnRows(42, true, true, &c);
  REQUIRE(t.OnXid(&c));
  CHECK(c.all);
}

TEST_CASE("binlog: a dump thread from another client host under this instance_id is told apart",
          "[binlog-unit]") {
  CHECK(outbox::binlog::ClientHost("10.0.0.5:51234") == "10.0.0.5");
  CHECK(outbox::binlog::ClientHost("[::1]:51234") == "::1");
  CHECK(outbox::binlog::ClientHost("localhost") == "localhost");
  CHECK(outbox::binlog::ClientHost("db-client.example") == "db-client.example");
  // This host's own relay: the same client host as the check's session.
  CHECK(outbox::binlog::OtherClientHost("10.0.0.5", {"10.0.0.5"}).empty());
  CHECK(outbox::binlog::OtherClientHost("10.0.0.5", {}).empty());
  // Another host with the same instance_id, hence the same server_id.
  CHECK(outbox::binlog::OtherClientHost("10.0.0.5", {"10.0.0.5", "10.0.0.6"}) == "10.0.0.6");
}
