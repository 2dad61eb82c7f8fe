#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace outbox {

// Everything the command line can set; filled by CLI11 during parse.
struct CliArgs {
  std::string config_path;  // empty: ResolveConfigPath picks the default
  bool version = false;
  bool connect = false;
  std::string service;
  int limit = 100;
  bool json = false;
  std::vector<int64_t> ids;
  bool all = false;
  bool dry_run = false;
  std::string event_type;
  std::string url;
  int timeout_ms = 5000;
  std::vector<std::string> help_path;  // help [COMMAND...]
};

// The subcommands, to ask which one was parsed. Owned by the CLI::App.
struct CliCommands {
  CLI::App* run = nullptr;
  CLI::App* check = nullptr;
  CLI::App* dead = nullptr;
  CLI::App* dead_list = nullptr;
  CLI::App* dead_replay = nullptr;
  CLI::App* health = nullptr;
  CLI::App* version = nullptr;
  CLI::App* help = nullptr;
};

// Defines every option and subcommand of `app`, bound to `args`. `-c` /
// `--config` is defined once, on `app`, and accepted before or after any
// subcommand (the subcommands fall through to it); each subcommand's help
// lists it among the options it accepts.
// REQUIRES: `args` outlives `app`'s parse.
CliCommands DefineCli(CLI::App& app, CliArgs& args);

}  // namespace outbox
