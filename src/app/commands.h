#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config_loader.h"

namespace outbox {

// Exit codes (README "Commands").
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// The whole command line: parses, loads the config (turning ConfigError into
// exit code 2 in this one place) and runs the command.
int RunCli(int argc, char** argv);

int RunCheck(const LoadedConfig& loaded, bool connect);
int RunDeadList(const ServiceConfig& service, int limit, bool json);
int RunDeadReplay(const ServiceConfig& service, std::vector<int64_t> ids, bool all,
                  const std::optional<std::string>& event_type, bool dry_run, bool json);
std::string VersionText();

}  // namespace outbox
