// The inbox's tables in one step (outbox/inbox/schema.h): the
// inbox_schema.sql the build makes and installs holds the four table files
// of sql/ in the order they apply, splits on its semicolons into exactly
// those statements, and is the text CreateTables runs; CreateTables makes
// an empty database ready for a consumer and changes nothing the second
// time. Real MariaDB.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "counter_handler.h"
#include "outbox/inbox/schema.h"
#include "outbox/inbox/testing.h"
#include "support/consumer_harness.h"
#include "support/inbox_rig.h"
#include "support/process.h"  // ReadFile

using namespace outbox::testing;
namespace inbox = outbox::inbox;

namespace {

std::string ReadSource(const std::string& path) {
  return ReadFile(std::string(OUTBOX_SOURCE_DIR) + "/" + path);
}

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \n"), b = s.find_last_not_of(" \n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// The statements of `text` split on every semicolon, as a naive migration
// tool does, comment lines left out.
std::vector<std::string> SplitNaively(const std::string& text) {
  std::vector<std::string> out;
  std::string code;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("--", 0) != 0) code += line + "\n";
  std::istringstream parts(code);
  for (std::string part; std::getline(parts, part, ';');)
    if (!Trim(part).empty()) out.push_back(Trim(part));
  return out;
}

inbox::ConsumerConfig RootConfig(const std::string& database) {
  inbox::ConsumerConfig c;
  c.consumer = "payments";
  c.mysql = outbox::testing::RootInboxDb(database);
  return c;
}

}  // namespace

TEST_CASE("the built schema file is the four table files in order and splits on its semicolons",
          "[inbox-schema]") {
  const std::string schema = ReadFile(OUTBOX_INBOX_SCHEMA_FILE);
  REQUIRE_FALSE(schema.empty());
  CHECK(schema == inbox::InboxSchemaSql());  // the library runs the installed text
  std::vector<std::string> expected;
  for (const char* f : {"sql/t_inbox.sql", "sql/t_inbox_retention_index.sql",
                        "sql/t_inbox_aggregate.sql", "sql/t_inbox_parked.sql"}) {
    const std::string one = ReadSource(f);
    INFO(f);
    REQUIRE(SplitNaively(one).size() == 1);  // no semicolon in any comment of it
    expected.push_back(SplitNaively(one)[0]);
  }
  CHECK(SplitNaively(schema) == expected);
}

TEST_CASE("CreateTables makes an empty database ready for a consumer and twice changes nothing",
          "[inbox-schema]") {
  const std::string name = "inbox_create_tables";
  SqlClient admin("mysql");
  admin.Exec("DROP DATABASE IF EXISTS " + name);
  admin.Exec("CREATE DATABASE " + name);
  const inbox::ConsumerConfig config = RootConfig(name);
  CHECK(inbox::CreateTables(config) == "");
  CHECK(inbox::CreateTables(config) == "");  // existing tables, existing index: nothing to do
  SqlClient db(name);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '" + name +
                    "' AND TABLE_NAME LIKE 't\\_inbox%'") == 3);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = '" +
                    name + "' AND INDEX_NAME = 'idx_consumer_processed_at'") == 2);
  db.Exec(SplitNaively(ReadSource("sql/t_aggregate_effect.sql"))[0]);  // the handler's own table
  example::CounterHandler handler;
  inbox::testing::InboxRunner runner(config.mysql, config.consumer, handler);
  inbox::testing::TestEvent paid("Order", 7, 1);
  CHECK(runner.Apply(paid) == inbox::testing::Outcome::kApplied);
  CHECK(runner.Apply(paid) == inbox::testing::Outcome::kDuplicate);
  admin.Exec("DROP DATABASE " + name);
}

TEST_CASE("CreateTables without the CREATE grant says which table and why", "[inbox-schema]") {
  ConsumerDatabase db("inbox_create_tables_denied", false);
  inbox::ConsumerConfig config = RootConfig(db.name());
  config.mysql.user = ConsumerDatabase::kUser;
  config.mysql.password = ConsumerDatabase::kPassword;
  const std::string error = inbox::CreateTables(config);
  INFO(error);
  CHECK(error.rfind("t_inbox: MySQL error 1142", 0) == 0);
}
