#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "config/config_loader.h"

namespace outbox {

// Exit codes (README.md "Commands").
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// The config file when --config/-c is not given.
constexpr const char* kDefaultConfigPath = "/etc/outbox-relay/config.yaml";

// The whole command line: parses, loads the config (turning ConfigError into
// exit code 2 in this one place) and runs the command.
int RunCli(int argc, char** argv);

// --config if given, else $OUTBOX_RELAY_CONFIG if set and not empty, else
// kDefaultConfigPath.
std::string ResolveConfigPath(const std::string& flag);

int RunCheck(const LoadedConfig& loaded, bool connect);
// check --connect for a service's value formats (src/app/check_schemas.cc):
// every subject known without a row resolved, with its id and version, one
// line each; returns the number of problems.
int CheckSchemas(const ServiceConfig& s);
int RunDeadList(const ServiceConfig& service, int limit, bool json);
int RunDeadReplay(const ServiceConfig& service, std::vector<int64_t> ids, bool all,
                  const std::optional<std::string>& event_type, bool dry_run, bool json);
// GET `url` (http://host:port/healthz); prints the status and body on
// stdout; 0 on 200, 1 otherwise (a bad URL, an error, a timeout or another
// status).
int RunHealth(const std::string& url, std::chrono::milliseconds timeout);
// The version, the source revision, librdkafka's and the MySQL client
// library's versions, one per line.
std::string VersionText();

}  // namespace outbox
