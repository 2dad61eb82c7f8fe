#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/process.h"  // ReadFile

namespace outbox::testing {

// A restartable child process for the fault scenarios, started with fork/exec, its stdout and
// stderr appended to `log_path`. The destructor kills it (SIGCONT, then SIGKILL) and reaps it if it
// is still running, so a failing test never leaves processes behind. Not thread-safe.
class Process {
 public:
  Process() = default;
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;

  // Starts argv[0] with argv; `env` entries are added to (or replace) the
  // environment. Returns false if fork fails.
  bool Start(const std::vector<std::string>& argv, const std::string& log_path,
             const std::map<std::string, std::string>& env = {});
  pid_t pid() const { return pid_; }
  bool running();  // reaps the child if it exited
  void Signal(int sig);
  // Waits up to `timeout` for the exit; returns the raw wait status, or
  // nullopt if it is still running.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // The wait status once exited (valid after Wait returned a value).
  std::optional<int> status() const { return status_; }
  const std::string& log_path() const { return log_path_; }
  void Kill();  // SIGCONT + SIGKILL + reap

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string log_path_;
};

// Runs a program to completion (up to `timeout`); returns its exit code, or
// -1 if it timed out (it is then killed) or died of a signal.
int RunToCompletion(const std::vector<std::string>& argv, const std::string& log_path,
                    std::chrono::milliseconds timeout,
                    const std::map<std::string, std::string>& env = {});

}  // namespace outbox::testing
