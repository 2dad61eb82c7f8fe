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
  if (!proc_.Start(argv, env, out_path_, err_path_, Subprocess::Mode::kTruncate))
    throw std::runtime_error("cannot start " + argv.at(0));
}

ChildProcess::~ChildProcess() {
  proc_.Kill();
  ::unlink(out_path_.c_str());
  ::unlink(err_path_.c_str());
}

int ChildProcess::Wait(std::chrono::milliseconds deadline) {
  auto st = proc_.Wait(deadline);
  return st ? ExitCode(*st) : -1;
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

int RunToCompletion(const std::vector<std::string>& argv, const std::string& log_path,
                    std::chrono::milliseconds timeout,
                    const std::map<std::string, std::string>& env) {
  LoggedProcess p;
  if (!p.Start(argv, log_path, env)) return -1;
  auto st = p.Wait(timeout);
  if (!st) {
    p.Kill();
    return -1;
  }
  return WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
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
