#include "subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

extern char** environ;

namespace outbox {

Subprocess::~Subprocess() { Kill(); }

Subprocess::Subprocess(Subprocess&& other) noexcept { *this = std::move(other); }

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    Kill();
    pid_ = other.pid_;
    status_ = other.status_;
    other.pid_ = -1;
  }
  return *this;
}

bool Subprocess::Start(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       const std::string& out_path, const std::string& err_path, Mode mode) {
  Kill();
  status_.reset();
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls.
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (mode == Mode::kTruncate ? O_TRUNC : O_APPEND);
  int out = ::open(out_path.c_str(), flags, 0644);
  int err = err_path.empty() ? -1 : ::open(err_path.c_str(), flags, 0644);
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = -1;
  if (out >= 0 && in >= 0 && (err_path.empty() || err >= 0)) pid = fork();
  if (pid == 0) {
    ::dup2(in, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err >= 0 ? err : out, STDERR_FILENO);
    ::execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  for (int fd : {out, err, in})
    if (fd >= 0) ::close(fd);
  if (pid < 0) return false;
  pid_ = pid;
  return true;
}

bool Subprocess::running() {
  if (pid_ <= 0) return false;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) {
    status_ = st;
    pid_ = -1;
    return false;
  }
  return true;
}

void Subprocess::Signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

std::optional<int> Subprocess::Wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

std::optional<int> Subprocess::Stop(std::chrono::milliseconds grace) {
  Signal(SIGTERM);
  if (!Wait(grace)) Kill();
  return status_;
}

void Subprocess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGKILL);
  int st = 0;
  if (::waitpid(pid_, &st, 0) == pid_) status_ = st;
  pid_ = -1;
}

std::vector<std::string> CurrentEnvironment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (!overrides.count(kv.substr(0, kv.find('=')))) env.push_back(std::move(kv));
  }
  for (const auto& [k, v] : overrides) env.push_back(k + "=" + v);
  return env;
}

int ExitCode(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

}  // namespace outbox
