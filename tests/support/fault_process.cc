#include "support/fault_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace outbox::testing {

Process::~Process() { Kill(); }

Process::Process(Process&& other) noexcept { *this = std::move(other); }

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    Kill();
    pid_ = other.pid_;
    status_ = other.status_;
    log_path_ = std::move(other.log_path_);
    other.pid_ = -1;
  }
  return *this;
}

bool Process::Start(const std::vector<std::string>& argv, const std::string& log_path,
                    const std::map<std::string, std::string>& env) {
  Kill();
  status_.reset();
  log_path_ = log_path;
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    if (!env.count(key)) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  pid_t pid = fork();
  if (pid < 0) {
    if (fd >= 0) close(fd);
    return false;
  }
  if (pid == 0) {
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  if (fd >= 0) close(fd);
  pid_ = pid;
  return true;
}

bool Process::running() {
  if (pid_ <= 0) return false;
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = st;
    pid_ = -1;
    return false;
  }
  return true;
}

void Process::Signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

std::optional<int> Process::Wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status_;
}

void Process::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGCONT);
  kill(pid_, SIGKILL);
  int st = 0;
  if (waitpid(pid_, &st, 0) == pid_) status_ = st;
  pid_ = -1;
}

int RunToCompletion(const std::vector<std::string>& argv, const std::string& log_path,
                    std::chrono::milliseconds timeout,
                    const std::map<std::string, std::string>& env) {
  Process p;
  if (!p.Start(argv, log_path, env)) return -1;
  auto st = p.Wait(timeout);
  if (!st) {
    p.Kill();
    return -1;
  }
  return WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
}

}  // namespace outbox::testing
