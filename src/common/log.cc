#include "common/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

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
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","instance":")" + JsonEscape(instance_id) +
        R"(","msg":"%*"})");
  } else {
    formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %-5l [" + instance_id + "] %v");
  }
  spdlog::set_formatter(std::move(formatter));
}

}  // namespace outbox
