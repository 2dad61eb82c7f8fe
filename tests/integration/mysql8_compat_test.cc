// MySQL 8 differences that touch the store (docs/MYSQL8.md), checked where
// MariaDB can stand in.

#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>

#include <catch2/catch.hpp>
#include <memory>

#include "outbox/mysql_connection.h"
#include "outbox/mysql_store.h"
#include "outbox/mysql_store_sql.h"
#include "outbox/table_schema.h"
#include "support/test_env.h"

using namespace outbox;
using namespace outbox::testing;

TEST_CASE("a JSON column is read through a cast that MariaDB returns byte for byte",
          "[store][mysql8]") {
  CHECK(mysql_sql::JsonAsText("payload", false) == "payload");
  CHECK(mysql_sql::JsonAsText("payload", true) == "CAST(payload AS CHAR CHARACTER SET utf8mb4)");

  TestDatabase db("store_json_cast", ", headers JSON NULL");
  // Spacing, key order and characters outside the BMP that MySQL 8's binary
  // JSON would rewrite; MariaDB keeps the text.
  const std::string payload = "{ \"b\" : 1,\"a\":[1, 2] ,\"s\":\"\xc3\xa9\xf0\x9f\x98\x80\"}";
  const std::string headers = "{\"trace\":  \"x\"}";
  db.Exec(
      "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key,"
      " payload, headers, status, next_retry_at, created_at, updated_at) VALUES"
      " (1, 'Order', 1, 'E', 'k1', '" +
      payload + "', '" + headers + "', 'NEW', NOW(), NOW(), NOW())");

  MysqlConnection conn(db.mysql());
  REQUIRE(conn.Connect().ok());
  // MariaDB's JSON is LONGTEXT: the store reads the column itself there.
  TableSchema schema;
  REQUIRE(InspectTable(conn, &schema).ok());
  CHECK_FALSE(schema.payload_is_json);
  CHECK_FALSE(schema.headers_is_json);
  // The cast MySQL 8 gets, through a prepared statement as a claim runs it.
  auto* ps = conn.Prepare("SELECT " + mysql_sql::JsonAsText("payload", true) + ", " +
                          mysql_sql::JsonAsText("headers", true) + " FROM " +
                          conn.QualifiedTable() + " WHERE id = ?");
  ps->setInt64(1, 1);
  std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
  REQUIRE(rs->next());
  CHECK(std::string(rs->getString(1)) == payload);
  CHECK(std::string(rs->getString(2)) == headers);

  // And the store's claim returns the same bytes.
  MysqlStore store(db.mysql());
  ClaimedBatch batch;
  REQUIRE(store.ClaimDue(10, 30000, false, &batch, {}).ok());
  REQUIRE(batch.rows.size() == 1);
  CHECK(batch.rows[0].payload == payload);
  REQUIRE(batch.rows[0].headers);
  CHECK(*batch.rows[0].headers == headers);
}

TEST_CASE(
    "a relay session tells the server to end it after a minute idle so that one the relay "
    "gave up on cannot keep its row locks for hours",
    "[store]") {
  TestDatabase db("session_wait_timeout");
  MysqlConnection conn(db.mysql());
  REQUIRE(conn.Connect().ok());
  auto* ps = conn.Prepare("SELECT @@SESSION.wait_timeout, @@GLOBAL.wait_timeout");
  std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
  REQUIRE(rs->next());
  CHECK(rs->getInt(1) == kSessionWaitTimeoutS);
  CHECK(rs->getInt(2) > kSessionWaitTimeoutS);  // the server's own default is left alone
}
