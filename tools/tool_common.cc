#include "tool_common.h"

#include <cstdlib>

#include "common/mysql_options.h"

namespace outbox::tools {

void AddMysqlOptions(CLI::App* app, MysqlArgs* args, const std::string& password_env,
                     const std::string& database_help) {
  app->add_option("--host", args->host, "MySQL host")->capture_default_str();
  app->add_option("--port", args->port, "MySQL port")->capture_default_str();
  app->add_option("--user", args->user, "MySQL user")->capture_default_str();
  app->add_option("--password", args->password,
                  "MySQL password (prefer the env " + password_env + ")");
  app->add_option("--database", args->database, database_help)->required();
  app->add_option("--table", args->table, "outbox table")->capture_default_str();
}

void PasswordFromEnv(MysqlArgs* args, const char* password_env) {
  if (!args->password.empty()) return;
  if (const char* p = std::getenv(password_env)) args->password = p;
}

sql::ConnectOptionsMap ConnectOptions(const MysqlArgs& args) {
  sql::ConnectOptionsMap opts;
  SetLoginOptions(args, &opts);
  opts["OPT_CONNECT_TIMEOUT"] = 10;
  return opts;
}

std::string QuoteIdent(const std::string& name) {
  std::string out = "`";
  for (char c : name) out += c == '`' ? std::string("``") : std::string(1, c);
  return out + "`";
}

std::string QualifiedTable(const MysqlArgs& args) {
  return QuoteIdent(args.database) + "." + QuoteIdent(args.table);
}

std::optional<int> ParseCommandLine(CLI::App* app, int argc, char** argv) {
  try {
    app->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the help or the error; any error is a usage error (2).
    return app->exit(e) == 0 ? 0 : 2;
  }
  return std::nullopt;
}

}  // namespace outbox::tools
