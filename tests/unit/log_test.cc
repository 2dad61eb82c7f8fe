#include "common/log.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "support/process.h"

using namespace outbox;

namespace {

// What one log call writes to stderr with the given settings.
std::string Captured(const std::string& format, const std::string& instance,
                     const std::string& message) {
  testing::TempDir dir;
  std::string path = dir.path() + "/stderr";
  std::fflush(stderr);
  int saved = ::dup(2);
  FILE* f = std::fopen(path.c_str(), "w");
  ::dup2(::fileno(f), 2);
  ConfigureLogging("info", format, instance);
  spdlog::info("{}", message);
  spdlog::default_logger()->flush();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::fclose(f);
  ConfigureLogging("info", "text", "test");
  return testing::ReadFile(path);
}

size_t Lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST_CASE("a message with newlines or control characters stays one log line in both formats",
          "[log]") {
  const std::string forged =
      "row 7 is DEAD\n2026-01-01T00:00:00.000Z info  [relay-1] all good\x1b[0m";
  std::string text = Captured("text", "relay-1", forged);
  CHECK(Lines(text) == 1);
  CHECK(text.find("row 7 is DEAD\\n2026-01-01T00:00:00.000Z info  [relay-1] all good\\x1b[0m") !=
        std::string::npos);
  std::string json = Captured("json", "relay-1", forged);
  CHECK(Lines(json) == 1);
  CHECK(json.find(R"("msg":"row 7 is DEAD\n2026)") != std::string::npos);
}

TEST_CASE("an instance_id with percent signs is printed as written", "[log]") {
  CHECK(Captured("text", "relay-%v-%n", "hello").find("[relay-%v-%n] hello") != std::string::npos);
  CHECK(Captured("json", "relay-%v", "hello").find(R"("instance":"relay-%v")") !=
        std::string::npos);
}
