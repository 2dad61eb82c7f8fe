#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "subprocess.h"
#include "support/process.h"  // ReadFile

namespace outbox::testing {

// A restartable child process for the fault scenarios: this process's
// environment plus `env`, its stdout and stderr appended to `log_path`.
class Process : public Subprocess {
 public:
  // Returns false if the log cannot be opened or fork fails.
  bool Start(const std::vector<std::string>& argv, const std::string& log_path,
             const std::map<std::string, std::string>& env = {}) {
    log_path_ = log_path;
    return Subprocess::Start(argv, CurrentEnvironment(env), log_path);
  }
  const std::string& log_path() const { return log_path_; }

 private:
  std::string log_path_;
};

// Runs a program to completion (up to `timeout`); returns its exit code, or
// -1 if it timed out (it is then killed) or died of a signal.
int RunToCompletion(const std::vector<std::string>& argv, const std::string& log_path,
                    std::chrono::milliseconds timeout,
                    const std::map<std::string, std::string>& env = {});

}  // namespace outbox::testing
