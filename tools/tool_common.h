#pragma once

// What outbox-check and outbox-load share: the MySQL options on their command
// lines, the connection built from them, and how a command line error becomes
// exit code 2. Plain functions, no state.

#include <cppconn/connection.h>

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace outbox::tools {

struct MysqlArgs {
  std::string host = "127.0.0.1";
  int port = 3306;
  std::string user = "root";
  std::string password;  // empty: PasswordFromEnv may fill it
  std::string database;
  std::string table = "t_outbox";
};

// Adds --host, --port, --user, --password, --database (required, described
// by `database_help`) and --table, writing into `*args`; `password_env` is
// named in --password's help. `*args` must outlive `app`'s parse.
void AddMysqlOptions(CLI::App* app, MysqlArgs* args, const std::string& password_env,
                     const std::string& database_help);

// Without --password, the password comes from the environment variable
// `password_env` when it is set (so that it stays out of `ps`).
void PasswordFromEnv(MysqlArgs* args, const char* password_env);

// hostName, port, userName, password and a 10 s connect timeout; callers add
// their own (schema, read timeout).
sql::ConnectOptionsMap ConnectOptions(const MysqlArgs& args);

// `name` as a MySQL quoted identifier (backticks doubled).
std::string QuoteIdent(const std::string& name);
// `database`.`table`
std::string QualifiedTable(const MysqlArgs& args);

// Parses the command line. Returns the exit code when the program is to stop
// here (0 after --help, 2 on a usage error, the message printed), nullopt to
// go on.
std::optional<int> ParseCommandLine(CLI::App* app, int argc, char** argv);

}  // namespace outbox::tools
