#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace outbox {

// A child process of the test and benchmark tools (relays, brokers, loaders),
// started with fork/exec: stdin from /dev/null, stdout and stderr to files.
// Only ever signals its own pid. The destructor kills it (SIGCONT, then
// SIGKILL) and reaps it if it still runs, so a failing test leaves nothing
// behind. Restartable and movable; not thread-safe.
class Subprocess {
 public:
  Subprocess() = default;
  ~Subprocess();
  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  enum class Mode { kAppend, kTruncate };
  // Starts argv[0] with argv and exactly `env` ("NAME=value") as its
  // environment, stdout to `out_path` and stderr to `err_path` (to
  // `out_path` too if empty), killing whatever this object ran before.
  // Returns false if the files cannot be opened or fork fails; a program
  // that cannot be executed exits with 127.
  bool Start(const std::vector<std::string>& argv, const std::vector<std::string>& env,
             const std::string& out_path, const std::string& err_path = "",
             Mode mode = Mode::kAppend);

  pid_t pid() const { return pid_; }
  bool running();  // reaps the child if it exited
  void Signal(int sig);
  // Waits up to `timeout` for the exit; the raw wait status, or nullopt if it
  // still runs.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // SIGTERM, then SIGKILL if it has not exited within `grace`; the raw wait
  // status, or nullopt if it was never started.
  std::optional<int> Stop(std::chrono::milliseconds grace);
  void Kill();  // SIGCONT + SIGKILL + reap
  // The raw wait status once it exited.
  std::optional<int> status() const { return status_; }

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// This process's environment with `overrides` added or replaced.
std::vector<std::string> CurrentEnvironment(
    const std::map<std::string, std::string>& overrides = {});

// The exit code of a raw wait status, or 128 + the signal that ended it.
int ExitCode(int wait_status);

}  // namespace outbox
