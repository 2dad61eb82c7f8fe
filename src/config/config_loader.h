#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/env_expand.h"

namespace outbox {

// A configuration error: one or more problems, each formatted as
// "file:line:col: key.path: what is wrong"; what() is all of them, one per
// line (the first 20 of a file, then how many more). Thrown only by the
// loader; the command line turns it into exit code 2 in one place.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& problem)
      : std::runtime_error(problem), problems_{problem} {}
  ConfigError(const std::string& text, std::vector<std::string> problems)
      : std::runtime_error(text), problems_(std::move(problems)) {}
  // Each problem on its own (at most 20, without the "more" line).
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

struct FileInfo {
  std::string contents;
  bool group_or_other_readable = false;
};

// A file named by the config (password_file, tls.ca/cert/key): its contents,
// or why it could not be read ("No such file or directory", "not a regular
// file", ...).
struct FileRead {
  std::optional<FileInfo> info;
  std::string error;
};

struct LoadOptions {
  EnvLookup env = ProcessEnv();
  // Reads a file named by the config. Default (empty): the filesystem.
  std::function<FileRead(const std::string&)> read_file;
};

struct LoadedConfig {
  Config config;
  std::vector<std::string> warnings;  // e.g. a password file readable by others
};

// Parses and validates a config file. Throws ConfigError.
LoadedConfig LoadConfigFile(const std::string& path, const LoadOptions& options = {});
// Same, from text; `name` stands for the file in messages.
LoadedConfig LoadConfigText(const std::string& text, const std::string& name,
                            const LoadOptions& options = {});

// The text of a config file (at most 4 MiB, not a directory). Throws
// ConfigError.
std::string ReadConfigFile(const std::string& path);

// Only http.listen of the file (the default when the file sets none), for
// `health`: a probe must work where the rest cannot (secrets not at hand, a
// variable the probe's environment lacks, a value `check` would refuse).
// Nothing else is read or validated. Throws ConfigError (the file cannot be
// read, its YAML is broken, http.listen is not host:port).
std::string LoadHttpListen(const std::string& path, const EnvLookup& env = ProcessEnv());

// Levenshtein distance, for "did you mean" suggestions.
size_t EditDistance(const std::string& a, const std::string& b);

}  // namespace outbox
