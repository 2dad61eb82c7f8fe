#pragma once

// password_env and password_file of a mysql block: how the relay
// (services[].mysql, docs/CONFIG.md) and the inbox consumer library (mysql,
// docs/CONSUMERS.md) read a database password, with the same rules and the
// same messages.

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "config/config_loader.h"

namespace outbox {

// A problem at one key, for the caller's parser to report as
// "file:line:col: path: what".
struct ConfigProblem {
  YAML::Mark mark;
  std::string path;
  std::string what;
};

struct Password {
  std::string value;            // never logged
  std::string source = "none";  // "env:NAME", "file:/path" or "none", for logs
};

// Reads password_env (the name of an environment variable, taken literally)
// or password_file (a file holding the password; trailing newlines cut) of
// the mapping `n` at `path` (e.g. "services[0].mysql"); with neither, no
// password. A file readable by group or others adds a warning. Throws
// ConfigProblem on the first problem. `example_variable` is the variable
// name the hint for a ${...} mistake suggests.
Password ReadPassword(const YAML::Node& n, const std::string& path, const LoadOptions& options,
                      const std::string& example_variable, std::vector<std::string>* warnings);

}  // namespace outbox
