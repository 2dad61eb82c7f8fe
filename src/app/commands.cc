#include "app/commands.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <iostream>

#include "app/app.h"
#include "common/log.h"
#include "kafka/kafka_publisher.h"
#include "outbox/mysql_connection.h"

namespace outbox {

std::string VersionText() {
  return std::string("outbox-relay ") + OUTBOX_VERSION + "\nlibrdkafka " + LibrdkafkaVersion() +
         "\nMySQL " + MysqlClientVersions() + "\n";
}

int RunCli(int argc, char** argv) {
  CLI::App app{"outbox-relay: publishes MySQL outbox rows to Kafka"};
  app.require_subcommand(0, 1);
  std::string config_path;
  app.add_option("--config", config_path, "config file (runs the daemon when no command is given)");

  auto* run = app.add_subcommand("run", "run the daemon");
  run->add_option("--config", config_path, "config file")->required();

  bool connect = false;
  auto* check = app.add_subcommand(
      "check", "validate the config file; --connect also reaches every database and broker");
  check->add_option("--config", config_path, "config file")->required();
  check->add_flag("--connect", connect,
                  "reach every database and broker, verify table, columns and index");

  auto* dead = app.add_subcommand("dead", "list or replay DEAD rows");
  dead->require_subcommand(1);
  std::string service;
  int limit = 100;
  bool json = false;
  auto* list = dead->add_subcommand("list", "list DEAD rows");
  list->add_option("--config", config_path, "config file")->required();
  list->add_option("--service", service, "service name")->required();
  list->add_option("--limit", limit, "at most this many rows")->check(CLI::Range(1, 1000000));
  list->add_flag("--json", json, "JSON output");

  // An id that does not fit the column's BIGINT would be clamped to its
  // limit and then reported as "not DEAD": refuse it as a usage error.
  auto RowId = [] {
    return CLI::Validator(
        [](std::string& s) -> std::string {
          int64_t v = 0;
          auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
          if (ec != std::errc() || end != s.data() + s.size())
            return "not a row id (a BIGINT): " + s;
          return "";
        },
        "ID");
  };
  std::vector<int64_t> ids;
  bool all = false, dry_run = false;
  std::string event_type;
  auto* replay =
      dead->add_subcommand("replay", "DEAD -> NEW with retry_count=0, next_retry_at=NOW()");
  replay->add_option("--config", config_path, "config file")->required();
  replay->add_option("--service", service, "service name")->required();
  auto* id_opt = replay->add_option("--id", ids, "row id(s)")->check(RowId());
  auto* all_opt = replay->add_flag("--all", all, "every DEAD row");
  auto* et_opt =
      replay->add_option("--event-type", event_type, "every DEAD row of this event type");
  replay->add_flag("--dry-run", dry_run, "show what would change, change nothing");
  replay->add_flag("--json", json, "JSON output");
  id_opt->excludes(all_opt)->excludes(et_opt);
  all_opt->excludes(et_opt);

  auto* version = app.add_subcommand("version", "print versions");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }

  if (version->parsed()) {
    std::cout << VersionText();
    return kExitOk;
  }
  if (replay->parsed() && ids.empty() && !all && event_type.empty()) {
    std::cerr << "dead replay: give --id ID..., --all or --event-type TYPE\n";
    return kExitUsage;
  }
  if (config_path.empty()) {
    std::cerr << app.help();
    return kExitUsage;
  }

  LoadedConfig loaded;
  try {
    loaded = LoadConfigFile(config_path);
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  }
  const Config& c = loaded.config;
  ConfigureLogging(c.log_level, c.log_format, c.instance_id);

  if (check->parsed()) return RunCheck(loaded, connect);
  if (dead->parsed()) {
    const ServiceConfig* svc = nullptr;
    for (const auto& s : c.services)
      if (s.name == service) svc = &s;
    if (!svc) {
      std::string names;
      for (const auto& s : c.services) names += (names.empty() ? "" : ", ") + s.name;
      std::cerr << config_path << ": no service named \"" << service << "\" (services: " << names
                << ")\n";
      return kExitUsage;
    }
    if (list->parsed()) return RunDeadList(*svc, limit, json);
    std::optional<std::string> et;
    if (!event_type.empty()) et = event_type;
    return RunDeadReplay(*svc, ids, all, et, dry_run, json);
  }
  return RunDaemon(loaded);
}

}  // namespace outbox
