#include "common/log.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <vector>

#include "support/log_capture.h"
#include "support/process.h"

using namespace outbox;

namespace {

// What `log` writes to stderr with the given settings (testing::CapturedLog).
std::string Captured(const std::string& format, const std::string& instance,
                     const std::function<void()>& log, const std::string& level = "info",
                     const std::string& journal_stream = "") {
  return testing::CapturedLog(format, instance, log, level, journal_stream);
}

std::string Captured(const std::string& format, const std::string& instance,
                     const std::string& message) {
  return Captured(format, instance, [&] { spdlog::info("{}", message); });
}

size_t Lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

std::string JsonLineOf(std::string_view msg, std::span<const LogField> fields,
                       spdlog::level::level_enum level = spdlog::level::info) {
  LogLineOptions o;
  o.format = LogFormat::kJson;
  o.instance = "relay-1";
  return FormatLogLine(o, level, std::chrono::system_clock::time_point(std::chrono::seconds(0)),
                       msg, fields);
}

std::string RandomBytes(std::mt19937& rng, size_t max_len) {
  std::uniform_int_distribution<size_t> len(0, max_len);
  std::uniform_int_distribution<int> byte(0, 255);
  std::string s(len(rng), '\0');
  for (auto& c : s) c = static_cast<char>(byte(rng));
  return s;
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

TEST_CASE("a json log line carries ts level msg instance and each field as its own key", "[log]") {
  const std::string out = Captured("json", "relay-1", [] {
    LogWarn("publish failed", {{"service", "order"},
                               {"outbox_id", int64_t{9007199254740993}},
                               {"aggregate_type", "Order"},
                               {"aggregate_id", 42},
                               {"topic", "order.paid"},
                               {"reason", "broker_timeout"},
                               {"error", "Local: Message timed out"},
                               {"count", size_t{3}}});
  });
  REQUIRE(Lines(out) == 1);
  const auto j = nlohmann::json::parse(out);
  CHECK(j.at("level") == "warn");
  CHECK(j.at("msg") == "publish failed");
  CHECK(j.at("instance") == "relay-1");
  CHECK(j.at("ts").get<std::string>().size() == 24);  // 2026-12-01T10:00:00.000Z
  CHECK(j.at("service") == "order");
  // Ids are strings of decimal digits: 2^53 + 1 does not survive a double.
  CHECK(j.at("outbox_id") == "9007199254740993");
  CHECK(j.at("aggregate_id") == "42");
  CHECK(j.at("reason") == "broker_timeout");
  CHECK(j.at("count") == 3);
  // The fixed keys come first, then the fields in call order.
  CHECK(out.rfind(R"({"ts":)", 0) == 0);
  CHECK(out.find(R"("instance":"relay-1","service":"order","outbox_id":)") != std::string::npos);
}

TEST_CASE("levels print as debug info warn and error in both formats", "[log]") {
  const auto all = [] {
    LogDebug("d");
    LogInfo("i");
    LogWarn("w");
    LogError("e");
    spdlog::warn("plain");
    spdlog::critical("crit");
  };
  std::string json = Captured("json", "r", all, "debug");
  std::vector<std::string> levels;
  size_t start = 0;
  while (start < json.size()) {
    size_t end = json.find('\n', start);
    levels.push_back(nlohmann::json::parse(json.substr(start, end - start)).at("level"));
    start = end + 1;
  }
  CHECK(levels == std::vector<std::string>{"debug", "info", "warn", "error", "warn", "error"});
  std::string text = Captured("text", "r", all, "warn");
  CHECK(Lines(text) == 4);
  CHECK(text.find(" warn  [r] w\n") != std::string::npos);
  CHECK(text.find("warning") == std::string::npos);
}

TEST_CASE("a text log line shows fields as key=value and quotes values with spaces", "[log]") {
  const std::string out = Captured("text", "relay-1", [] {
    LogError("row is DEAD", {{"service", "order"},
                             {"outbox_id", 7},
                             {"error", "Broker: Message size too large"},
                             {"event_type", "a=b\n\"c\""},
                             {"topic", ""}});
  });
  CHECK(Lines(out) == 1);
  CHECK(out.find(" error [relay-1] row is DEAD service=order outbox_id=7 "
                 "error=\"Broker: Message size too large\" event_type=\"a=b\\n\\\"c\\\"\" "
                 "topic=\"\"\n") != std::string::npos);
}

TEST_CASE("plain spdlog calls still log their formatted message without fields", "[log]") {
  const std::string out = Captured("json", "relay-1", [] { spdlog::info("x={} y={}", 1, "two"); });
  const auto j = nlohmann::json::parse(out);
  CHECK(j.at("msg") == "x=1 y=two");
  CHECK(j.size() == 4);
  // LogInfo does not format: braces in a message are written as given.
  const std::string braces = Captured("json", "r", [] { LogInfo("a {} b {:>9}", {{"k", "{}"}}); });
  CHECK(nlohmann::json::parse(braces).at("msg") == "a {} b {:>9}");
}

TEST_CASE("a field named like a fixed key does not replace it", "[log]") {
  const LogField fields[] = {{"msg", "evil"}, {"level", "debug"}};
  const auto j = nlohmann::json::parse(JsonLineOf("real", fields));
  CHECK(j.at("msg") == "real");
  CHECK(j.at("level") == "info");
  CHECK(j.at("field_msg") == "evil");
  CHECK(j.at("field_level") == "debug");
}

TEST_CASE("arbitrary bytes in msg and field values always give one valid json line",
          "[log][fuzz]") {
  std::mt19937 rng(20261201);
  for (int i = 0; i < 3000; ++i) {
    const std::string msg = RandomBytes(rng, 64);
    const std::string v1 = RandomBytes(rng, 32), v2 = RandomBytes(rng, 32);
    const std::string key = RandomBytes(rng, 8);
    const LogField fields[] = {{"error", v1}, {"aggregate_type", v2}, {key, v1}, {"outbox_id", i}};
    const std::string line = JsonLineOf(msg, fields, static_cast<spdlog::level::level_enum>(i % 7));
    INFO(i);
    REQUIRE(line.back() == '\n');
    REQUIRE(line.find('\n') == line.size() - 1);
    nlohmann::json j;
    REQUIRE_NOTHROW(j = nlohmann::json::parse(line.substr(0, line.size() - 1)));
    REQUIRE(j.is_object());
    CHECK(j.at("outbox_id") == std::to_string(i));
  }
  // Invalid UTF-8 becomes U+FFFD; valid multi-byte text stays as written.
  const auto j = nlohmann::json::parse(JsonLineOf("caf\xc3\xa9 \xff\xfe", {}));
  CHECK(j.at("msg") == "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd");
}

TEST_CASE("under journald every line starts with its syslog priority", "[log]") {
  const auto both = [] {
    LogError("e");
    LogWarn("w");
    LogInfo("i");
    LogDebug("d");
  };
  CHECK(Captured("text", "r", both, "debug", "self").substr(0, 3) == "<3>");
  const std::string json = Captured("json", "r", both, "debug", "self");
  CHECK(json.rfind("<3>{", 0) == 0);
  CHECK(json.find("\n<4>{") != std::string::npos);
  CHECK(json.find("\n<6>{") != std::string::npos);
  CHECK(json.find("\n<7>{") != std::string::npos);
  // JOURNAL_STREAM inherited by a process whose stderr was redirected: no prefix.
  CHECK(Captured("json", "r", both, "debug", "other").rfind("{", 0) == 0);
  CHECK(Captured("json", "r", both, "debug", "").rfind("{", 0) == 0);
}

TEST_CASE("audit lines are written at info even when log.level is error", "[log]") {
  const std::string out = Captured(
      "text", "r",
      [] {
        LogInfo("hidden");
        LogAudit("audit: dead replay", {{"service", "order"}, {"outbox_id", 5}});
        LogInfo("hidden too");
      },
      "error");
  CHECK(Lines(out) == 1);
  CHECK(out.find("info  [r] audit: dead replay service=order outbox_id=5\n") != std::string::npos);
}

TEST_CASE("a double field is a JSON number with at most three decimals", "[log]") {
  const std::vector<LogField> fields = {{"duration_ms", 12.5}, {"scan_ms", 0.1234}, {"x", 3.0}};
  const std::string line =
      FormatLogLine({LogFormat::kJson, "i", false}, spdlog::level::debug,
                    std::chrono::system_clock::time_point{}, "claim pass ended", fields);
  const auto j = nlohmann::json::parse(line);
  CHECK(j.at("duration_ms") == 12.5);
  CHECK(j.at("scan_ms") == 0.123);
  CHECK(j.at("x") == 3);
}

TEST_CASE("a scoped log sink takes this thread's lines from its level up with their fields",
          "[log]") {
  std::vector<std::pair<std::string, std::string>> lines;
  std::string outside;
  {
    ScopedLogSink sink(
        [&](std::string_view level, std::string_view line) {
          lines.emplace_back(std::string(level), std::string(line));
        },
        "info");
    ScopedLogFields scoped(std::vector<LogField>{{"trace_id", "abc"}});
    LogDebug("not at this level");
    LogWarn("publish failed", {{"topic", "order paid"}, {"count", 3}});
    // Another thread's lines are its own.
    std::thread([&] {
      outside = Captured("text", "relay-1", [] { LogInfo("from another thread"); });
    }).join();
  }
  const std::string after = Captured("text", "relay-1", [] { LogInfo("after the scope"); });
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].first == "warn");
  CHECK(lines[0].second == "publish failed topic=\"order paid\" count=3 trace_id=abc");
  CHECK(outside.find("from another thread") != std::string::npos);
  CHECK(after.find("after the scope") != std::string::npos);
}
