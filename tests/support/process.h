#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "subprocess.h"

namespace outbox::testing {

// The tests' child processes, over tools/subprocess.h (the one fork/exec):
// ChildProcess and RunProcess for a program run once with exactly the
// environment given (ChildEnv) and its output read back; LoggedProcess and
// RunToCompletion for programs that restart and append to one log (the fault
// scenarios' relays and tools).

// A child process (the real outbox-relay binary) with its stdout and stderr
// captured in files. The destructor kills (SIGKILL) and reaps it if it is
// still running. Not thread-safe.
class ChildProcess {
 public:
  // Starts argv[0] with exactly `env` ("NAME=value") as its environment.
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return proc_.pid(); }
  void Signal(int sig) { proc_.Signal(sig); }
  // Waits up to `deadline` for the exit; returns the exit code, 128+signal if
  // killed by one, or -1 if still running at the deadline.
  int Wait(std::chrono::milliseconds deadline);
  bool running() { return proc_.running(); }
  // Everything written so far.
  std::string out() const;
  std::string err() const;

 private:
  std::string out_path_, err_path_;
  Subprocess proc_;
};

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs a command to completion (killed after `deadline`).
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         std::chrono::milliseconds deadline = std::chrono::seconds(60));

// A fresh private directory under $TMPDIR (or /tmp), removed with its
// contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `contents` to path()/name with `mode`; returns the full path.
  std::string Write(const std::string& name, const std::string& contents, int mode = 0600) const;

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path);

// A restartable child process: this process's environment plus `env`, its
// stdout and stderr appended to `log_path`. Not thread-safe.
class LoggedProcess : public Subprocess {
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

// Runs a program to completion (up to `timeout`) as a LoggedProcess; returns
// its exit code, or -1 if it timed out (it is then killed) or died of a
// signal.
int RunToCompletion(const std::vector<std::string>& argv, const std::string& log_path,
                    std::chrono::milliseconds timeout,
                    const std::map<std::string, std::string>& env = {});

}  // namespace outbox::testing

namespace outbox::testing {

// The environment a test passes to a child: PATH, TMPDIR and the sanitizer
// options of this process (so sanitizer builds stay configured), plus `extra`.
std::vector<std::string> ChildEnv(const std::vector<std::string>& extra = {});

}  // namespace outbox::testing
