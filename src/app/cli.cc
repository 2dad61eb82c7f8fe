#include <cstdlib>
#include <iostream>

#include "app/app.h"
#include "app/cli_definition.h"
#include "app/commands.h"
#include "common/log.h"
#include "http/http_client.h"

namespace outbox {

namespace {

// `health` reads only http.listen: it must work where the secrets are not at
// hand (a shell on a systemd host without /etc/outbox-relay/env, a probe run
// as another user). Unset variables read as empty and the files the config
// names (password_file, tls.*) are not opened.
LoadOptions SecretlessLoadOptions() {
  LoadOptions o;
  o.env = [env = ProcessEnv()](const std::string& name) -> std::optional<std::string> {
    return env(name).value_or("");
  };
  o.read_file = [](const std::string&) {
    FileRead r;
    r.info = FileInfo{"not read by health", false};
    return r;
  };
  return o;
}

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

// The commands that need the config file.
int RunWithConfig(const CliCommands& cmd, const CliArgs& a) {
  LoadedConfig loaded;
  const LoadOptions options = cmd.health->parsed() ? SecretlessLoadOptions() : LoadOptions{};
  if (!Load(ResolveConfigPath(a.config_path), !a.config_path.empty(), options, &loaded))
    return kExitUsage;
  const Config& c = loaded.config;
  if (cmd.health->parsed())
    return RunHealth(LocalUrlForListen(c.http_listen, "/healthz"),
                     std::chrono::milliseconds(a.timeout_ms));
  ConfigureLogging(c.log_level, c.log_format, c.instance_id);
  if (cmd.check->parsed()) return RunCheck(loaded, a.connect);
  if (cmd.dead->parsed()) return RunDead(cmd, a, loaded);
  return RunDaemon(loaded);
}

}  // namespace

std::string ResolveConfigPath(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("OUTBOX_RELAY_CONFIG");
  if (env && *env) return env;
  return kDefaultConfigPath;
}

int RunCli(int argc, char** argv) {
  CLI::App app{"outbox-relay: publishes MySQL outbox rows to Kafka"};
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
    return kExitUsage;
  }
  if (a.version || cmd.version->parsed()) {
    std::cout << VersionText();
    return kExitOk;
  }
  if (cmd.health->parsed() && !a.url.empty())
    return RunHealth(a.url, std::chrono::milliseconds(a.timeout_ms));
  if (cmd.dead_replay->parsed() && a.ids.empty() && !a.all && a.event_type.empty()) {
    std::cerr << "dead replay: give --id ID..., --all or --event-type TYPE\n";
    return kExitUsage;
  }
  return RunWithConfig(cmd, a);
}

}  // namespace outbox
