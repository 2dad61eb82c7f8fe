#include "support/fault_process.h"

#include <sys/wait.h>

namespace outbox::testing {

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
