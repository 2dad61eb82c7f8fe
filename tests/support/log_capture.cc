#include "support/log_capture.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "common/log.h"
#include "support/process.h"

namespace outbox::testing {

std::string CapturedLog(const std::string& format, const std::string& instance,
                        const std::function<void()>& log, const std::string& level,
                        const std::string& journal_stream) {
  TempDir dir;
  std::string path = dir.path() + "/stderr";
  std::fflush(stderr);
  int saved = ::dup(2);
  FILE* f = std::fopen(path.c_str(), "w");
  ::dup2(::fileno(f), 2);
  struct stat st {};
  ::fstat(2, &st);
  if (journal_stream == "self")
    ::setenv("JOURNAL_STREAM",
             (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)).c_str(), 1);
  if (journal_stream == "other")
    ::setenv("JOURNAL_STREAM",
             (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1)).c_str(), 1);
  ConfigureLogging(level, format, instance);
  ::unsetenv("JOURNAL_STREAM");
  log();
  spdlog::default_logger()->flush();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::fclose(f);
  ConfigureLogging("info", "text", "test");
  return ReadFile(path);
}

}  // namespace outbox::testing
