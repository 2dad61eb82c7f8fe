#include "common/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdio>
#include <string_view>

namespace outbox {
namespace {

// %* : the log message, escaped for a JSON string, so that a row's content or
// a server's error text cannot break the JSON log line.
class JsonMessageFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string escaped = JsonEscape(std::string(msg.payload.data(), msg.payload.size()));
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

// %* in text format: the message with control characters escaped, so that
// a row's content (an event_type with a newline, say) cannot start a forged
// log line.
class TextMessageFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    for (char ch : std::string_view(msg.payload.data(), msg.payload.size())) {
      auto c = static_cast<unsigned char>(ch);
      if (c >= 0x20 && c != 0x7f) {
        dest.push_back(ch);
        continue;
      }
      char buf[8];
      int n = c == '\n'   ? std::snprintf(buf, sizeof(buf), "\\n")
              : c == '\r' ? std::snprintf(buf, sizeof(buf), "\\r")
              : c == '\t' ? std::snprintf(buf, sizeof(buf), "\\t")
                          : std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      dest.append(buf, buf + n);
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<TextMessageFlag>();
  }
};

// Literal text inside a spdlog pattern: '%' starts a flag.
std::string PatternLiteral(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '%') out += '%';
    out += c;
  }
  return out;
}

}  // namespace

std::string JsonEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

void ConfigureLogging(const std::string& level, const std::string& format,
                      const std::string& instance_id) {
  // Logs go to stderr: stdout stays free for command output (check, dead list).
  spdlog::drop("outbox");
  auto logger = spdlog::stderr_logger_mt("outbox");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level == "warn" ? "warning" : level));
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (format == "json") {
    formatter->add_flag<JsonMessageFlag>('*').set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","instance":")" +
        PatternLiteral(JsonEscape(instance_id)) + R"(","msg":"%*"})");
  } else {
    formatter->add_flag<TextMessageFlag>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %-5l [" +
                                                          PatternLiteral(instance_id) + "] %*");
  }
  spdlog::set_formatter(std::move(formatter));
}

}  // namespace outbox
