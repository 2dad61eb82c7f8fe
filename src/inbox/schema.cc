#include "outbox/inbox/schema.h"

#include <cppconn/exception.h>
#include <cppconn/statement.h>
#include <mysql_driver.h>

#include <memory>
#include <vector>

#include "common/mysql_error.h"
#include "inbox/inbox_store.h"  // ConnectOptions, DescribeSqlError

namespace outbox::inbox {

// The installed inbox_schema.sql, compiled in (inbox_schema.cc.in).
const char* InboxSchemaText();

namespace {

// The schema's statements: each ends with ";" at the end of a line (the
// file's promise, checked by tests/integration/inbox_schema_test.cc).
std::vector<std::string> Statements(const std::string& text) {
  std::vector<std::string> out;
  size_t from = 0;
  for (size_t at = text.find(";\n"); at != std::string::npos; at = text.find(";\n", from)) {
    out.push_back(text.substr(from, at - from));
    from = at + 2;
  }
  return out;
}

// "create table t (" -> "create table if not exists t (": only the missing
// tables are created.
std::string IfNotExists(std::string statement) {
  const std::string create = "create table ";
  if (size_t at = statement.find(create); at != std::string::npos)
    statement.insert(at + create.size(), "if not exists ");
  return statement;
}

// The table a statement is about, for the error message.
std::string TableOf(const std::string& statement) {
  for (const std::string verb : {"create table ", "alter table "}) {
    const size_t at = statement.find(verb);
    if (at == std::string::npos) continue;
    const size_t from = at + verb.size();
    return statement.substr(from, statement.find_first_of(" (\n", from) - from);
  }
  return "schema";
}

}  // namespace

const std::string& InboxSchemaSql() {
  static const std::string text = InboxSchemaText();
  return text;
}

std::string CreateTables(const ConsumerConfig& config) {
  const DbConfig& db = config.mysql;
  std::unique_ptr<sql::Connection> conn;
  sql::ConnectOptionsMap options = ConnectOptions(db);
  try {
    conn.reset(sql::mysql::get_mysql_driver_instance()->connect(options));
  } catch (const sql::SQLException& e) {
    return "cannot connect to " + db.user + "@" + db.host + ":" + std::to_string(db.port) + "/" +
           db.database + ": " + DescribeSqlError(e);
  }
  for (const std::string& statement : Statements(InboxSchemaSql())) {
    try {
      std::unique_ptr<sql::Statement> st(conn->createStatement());
      st->execute(IfNotExists(statement));
    } catch (const sql::SQLException& e) {
      if (IsMysqlError(e.getErrorCode(), MysqlError::kDupKeyName)) continue;  // the index is there
      return TableOf(statement) + ": " + DescribeSqlError(e);
    }
  }
  return "";
}

}  // namespace outbox::inbox
