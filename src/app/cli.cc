#include <cstdlib>
#include <iostream>

#include "app/app.h"
#include "app/cli_definition.h"
#include "app/commands.h"
#include "common/log.h"
#include "http/http_client.h"

namespace outbox {

namespace {

// Loads the file; a ConfigError becomes exit code 2 here, in one place.
bool Load(const std::string& path, bool path_given, const LoadOptions& options,
          LoadedConfig* loaded) {
  try {
    *loaded = LoadConfigFile(path, options);
    return true;
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    if (!path_given)
      std::cerr << "(no --config given: the file is $OUTBOX_RELAY_CONFIG, else "
                << kDefaultConfigPath << ")\n";
    return false;
  }
}

int RunDead(const CliCommands& cmd, const CliArgs& a, const LoadedConfig& loaded) {
  const Config& c = loaded.config;
  const ServiceConfig* svc = nullptr;
  for (const auto& s : c.services)
    if (s.name == a.service) svc = &s;
  if (!svc) {
    std::string names;
    for (const auto& s : c.services) names += (names.empty() ? "" : ", ") + s.name;
    std::cerr << c.path << ": no service named \"" << a.service << "\" (services: " << names
              << ")\n";
    return kExitUsage;
  }
  if (cmd.dead_list->parsed()) return RunDeadList(*svc, a.limit, a.json);
  std::optional<std::string> et;
  if (!a.event_type.empty()) et = a.event_type;
  return RunDeadReplay(*svc, a.ids, a.all, et, a.dry_run, a.json);
}

// `health`: 0 healthy, 1 anything else, never 2 (Docker reserves it in
// HEALTHCHECK), so a config it cannot read is 1 too.
int RunHealthCommand(const CliArgs& a) {
  const std::chrono::milliseconds timeout(a.timeout_ms);
  if (!a.url.empty()) return RunHealth(a.url, timeout);
  std::string listen;
  try {
    listen = LoadHttpListen(ResolveConfigPath(a.config_path));
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    if (a.config_path.empty())
      std::cerr << "(no --config given: the file is $OUTBOX_RELAY_CONFIG, else "
                << kDefaultConfigPath << ")\n";
    return kExitFailure;
  }
  return RunHealth(LocalUrlForListen(listen, "/healthz"), timeout);
}

// The commands that need the config file.
int RunWithConfig(const CliCommands& cmd, const CliArgs& a) {
  LoadedConfig loaded;
  if (!Load(ResolveConfigPath(a.config_path), !a.config_path.empty(), LoadOptions{}, &loaded))
    return kExitUsage;
  const Config& c = loaded.config;
  ConfigureLogging(c.log_level, c.log_format, c.instance_id);
  if (cmd.check->parsed()) return RunCheck(loaded, a.connect);
  if (cmd.dead->parsed()) return RunDead(cmd, a, loaded);
  return RunDaemon(loaded);
}

// `help [COMMAND...]`: the help of the program or of a (sub)command, on
// stdout.
int RunHelp(const CLI::App& app, const std::vector<std::string>& path) {
  const CLI::App* at = &app;
  std::string name = app.get_name();
  for (const auto& word : path) {
    const CLI::App* sub = nullptr;
    for (const CLI::App* s : at->get_subcommands([](const CLI::App*) { return true; }))
      if (s->get_name() == word) sub = s;
    if (sub == nullptr || word == "help") {
      std::cerr << "help: no command \"" << word << "\" (run outbox-relay help)\n";
      return kExitUsage;
    }
    name += " " + word;
    at = sub;
  }
  // The formatter, not App::help(): that one shows the parsed subcommand's
  // help, which is `help` itself.
  std::cout << at->get_formatter()->make_help(at, name, CLI::AppFormatMode::Normal);
  return kExitOk;
}

}  // namespace

std::string ResolveConfigPath(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("OUTBOX_RELAY_CONFIG");
  if (env && *env) return env;
  return kDefaultConfigPath;
}

int RunCli(int argc, char** argv) {
  CLI::App app{"outbox-relay: publishes MySQL outbox rows to Kafka", "outbox-relay"};
  CliArgs a;
  const CliCommands cmd = DefineCli(app, a);
  if (argc <= 1) {
    std::cerr << app.help();
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return cmd.health->parsed() ? kExitFailure : kExitUsage;
  }
  if (cmd.help->parsed()) return RunHelp(app, a.help_path);
  if (a.version || cmd.version->parsed()) {
    std::cout << VersionText();
    return kExitOk;
  }
  if (cmd.health->parsed()) return RunHealthCommand(a);
  if (cmd.dead_replay->parsed() && a.ids.empty() && !a.all && a.event_type.empty()) {
    std::cerr << "dead replay: give --id ID..., --all or --event-type TYPE\n";
    return kExitUsage;
  }
  return RunWithConfig(cmd, a);
}

}  // namespace outbox
