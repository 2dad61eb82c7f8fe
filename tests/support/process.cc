#include "support/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace outbox::testing {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/outbox-test.XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Write(const std::string& name, const std::string& contents, int mode) const {
  std::string p = path_ + "/" + name;
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << contents;
  }
  ::chmod(p.c_str(), static_cast<mode_t>(mode));
  return p;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::vector<std::string>& env) {
  static int counter = 0;
  const char* tmp = std::getenv("TMPDIR");
  std::string base = std::string(tmp && *tmp ? tmp : "/tmp") + "/outbox-child-" +
                     std::to_string(getpid()) + "-" + std::to_string(++counter);
  out_path_ = base + ".out";
  err_path_ = base + ".err";
  // Everything the child needs is prepared before fork: only async-signal-safe
  // calls happen in between fork and exec.
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (out < 0 || err < 0 || in < 0) throw std::runtime_error("cannot open capture files");
  pid_ = fork();
  if (pid_ == 0) {
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  ::close(out);
  ::close(err);
  ::close(in);
  if (pid_ < 0) throw std::runtime_error("fork failed");
}

ChildProcess::~ChildProcess() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    Wait(std::chrono::seconds(10));
  }
  ::unlink(out_path_.c_str());
  ::unlink(err_path_.c_str());
}

void ChildProcess::Signal(int sig) {
  if (status_ < 0 && pid_ > 0) ::kill(pid_, sig);
}

bool ChildProcess::running() { return Wait(std::chrono::milliseconds(0)) < 0; }

int ChildProcess::Wait(std::chrono::milliseconds deadline) {
  if (status_ >= 0) return status_;
  auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      return status_;
    }
    if (std::chrono::steady_clock::now() >= end) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string ChildProcess::out() const { return ReadFile(out_path_); }
std::string ChildProcess::err() const { return ReadFile(err_path_); }

ProcessResult RunProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         std::chrono::milliseconds deadline) {
  ChildProcess p(argv, env);
  ProcessResult r;
  r.exit_code = p.Wait(deadline);
  if (r.exit_code < 0) {
    p.Signal(SIGKILL);
    p.Wait(std::chrono::seconds(10));
  }
  r.out = p.out();
  r.err = p.err();
  return r;
}

}  // namespace outbox::testing

namespace outbox::testing {

std::vector<std::string> ChildEnv(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (const char* name :
       {"PATH", "TMPDIR", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"}) {
    if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

}  // namespace outbox::testing
