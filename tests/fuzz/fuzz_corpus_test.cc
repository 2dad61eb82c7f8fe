// Replays the fuzzers' seed corpus and every input a fuzzer ever failed on
// (tests/fuzz/regressions/) through the same code the fuzz targets run, on
// every build: a fixed crash or hang cannot come back unnoticed, with or
// without clang and libFuzzer.

#include <catch2/catch.hpp>
#include <filesystem>

#include "fuzz/fuzz_inputs.h"
#include "support/process.h"

using namespace outbox;

namespace {

// Runs `input` on every file of tests/fuzz/{corpus,regressions}/<target>/.
int Replay(const std::string& target, void (*input)(const uint8_t*, size_t)) {
  int files = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    std::filesystem::path dir = std::filesystem::path(OUTBOX_FUZZ_DIR) / kind / target;
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::string data = testing::ReadFile(entry.path().string());
      INFO(entry.path().string());
      input(reinterpret_cast<const uint8_t*>(data.data()), data.size());
      ++files;
    }
  }
  return files;
}

}  // namespace

TEST_CASE("every fuzz corpus and regression input of the config loader loads or fails cleanly",
          "[fuzz]") {
  CHECK(Replay("config_loader", fuzz::ConfigLoaderInput) >= 10);
}

TEST_CASE("every fuzz corpus and regression input of the topic template keeps its invariants",
          "[fuzz]") {
  CHECK(Replay("topic_template", fuzz::TopicTemplateInput) >= 5);
}

TEST_CASE("every fuzz corpus and regression row is routed or refused without a crash", "[fuzz]") {
  CHECK(Replay("router", fuzz::RouterInput) >= 5);
}

TEST_CASE("every fuzz corpus and regression input gives one valid log line in each format",
          "[fuzz][log]") {
  CHECK(Replay("log_line", fuzz::LogLineInput) >= 4);
}

TEST_CASE("every fuzz corpus and regression traceparent gets the W3C verdict", "[fuzz][trace]") {
  CHECK(Replay("trace_context", fuzz::TraceparentInput) >= 8);
}
