#include "common/log.h"

#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/text.h"

namespace outbox {
namespace {

// The fields of the Log() call in progress on this thread. The default logger
// is synchronous, so its formatter runs inside that call, on this thread.
thread_local std::span<const LogField> tls_fields;
// The innermost ScopedLogFields' fields on this thread, or null.
thread_local const std::vector<LogField>* tls_scoped = nullptr;
// The innermost ScopedLogSink on this thread, or null.
thread_local const ScopedLogSink* tls_sink = nullptr;

int SyslogPriority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return 7;
    case spdlog::level::info:
      return 6;
    case spdlog::level::warn:
      return 4;
    default:
      return 3;
  }
}

std::string Timestamp(std::chrono::system_clock::time_point time) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[40];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

// Control characters as \n, \r, \t, \xNN: a row's content (an event_type with
// a newline, say) cannot start a forged line or reach a terminal.
void AppendEscapedText(std::string_view in, bool quote, std::string* out) {
  for (char ch : in) {
    const auto c = static_cast<unsigned char>(ch);
    if (quote && (c == '"' || c == '\\')) {
      out->push_back('\\');
      out->push_back(ch);
    } else if (c >= 0x20 && c != 0x7f) {
      out->push_back(ch);
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\r') {
      out->append("\\r");
    } else if (c == '\t') {
      out->append("\\t");
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out->append(buf);
    }
  }
}

// key=value, with the value quoted when it is empty or holds a space, a quote
// or '=' (so that the line still splits into pairs).
void AppendTextField(const LogField& f, std::string* out) {
  out->push_back(' ');
  AppendEscapedText(f.key(), false, out);
  out->push_back('=');
  const std::string& v = f.value();
  const bool quote = v.empty() || v.find_first_of(" \"=\\") != std::string::npos;
  if (quote) out->push_back('"');
  AppendEscapedText(v, quote, out);
  if (quote) out->push_back('"');
}

std::string TextLine(const LogLineOptions& o, spdlog::level::level_enum level,
                     std::chrono::system_clock::time_point time, std::string_view msg,
                     std::span<const LogField> fields) {
  std::string line = Timestamp(time);
  line += ' ';
  std::string_view name = LevelName(level);
  line.append(name);
  line.append(name.size() < 5 ? 5 - name.size() : 0, ' ');
  line += " [";
  AppendEscapedText(o.instance, false, &line);
  line += "] ";
  AppendEscapedText(msg, false, &line);
  for (const auto& f : fields) AppendTextField(f, &line);
  return line;
}

bool Reserved(std::string_view key) {
  return key == "ts" || key == "level" || key == "msg" || key == "instance";
}

std::string JsonLine(const LogLineOptions& o, spdlog::level::level_enum level,
                     std::chrono::system_clock::time_point time, std::string_view msg,
                     std::span<const LogField> fields) {
  // ordered_json: the fixed keys first, then the fields in call order.
  nlohmann::ordered_json j;
  j["ts"] = Timestamp(time);
  j["level"] = LevelName(level);
  j["msg"] = msg;
  j["instance"] = o.instance;
  for (const auto& f : fields) {
    // A field may not replace a fixed key; it is kept beside it.
    // Appended, not inserted at 0: see common/text.h on GCC bug 105329.
    std::string key = Reserved(f.key()) ? "field_" : "";
    key += f.key();
    if (f.number())
      j[key] = nlohmann::ordered_json::parse(f.value(), nullptr, false);
    else
      j[key] = f.value();
  }
  // replace: bytes that are not UTF-8 (a VARBINARY column, a peer's error
  // text) become U+FFFD instead of an exception; the line stays valid JSON.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

class LineFormatter : public spdlog::formatter {
 public:
  explicit LineFormatter(LogLineOptions options) : options_(std::move(options)) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::vector<LogField> joined;
    std::span<const LogField> fields = tls_fields;
    if (tls_scoped != nullptr && !tls_scoped->empty()) {
      joined.assign(tls_fields.begin(), tls_fields.end());
      joined.insert(joined.end(), tls_scoped->begin(), tls_scoped->end());
      fields = joined;
    }
    std::string line =
        FormatLogLine(options_, msg.level, msg.time,
                      std::string_view(msg.payload.data(), msg.payload.size()), fields);
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<LineFormatter>(options_);
  }

 private:
  const LogLineOptions options_;
};

void LogTo(spdlog::logger& logger, spdlog::level::level_enum level, std::string_view msg,
           std::span<const LogField> fields) {
  if (tls_sink) return tls_sink->Write(level, msg, fields);
  if (!logger.should_log(level)) return;
  tls_fields = fields;
  logger.log(level, spdlog::string_view_t(msg.data(), msg.size()));
  tls_fields = {};
}

}  // namespace

LogField::LogField(std::string_view key, double value) : key_(key), number_(true) {
  char buf[40];
  // Not NaN or infinite: JSON has no word for them.
  if (!(value == value) || value > 1e300 || value < -1e300) value = 0;
  std::snprintf(buf, sizeof buf, "%.3f", value);
  value_ = buf;
  while (value_.back() == '0') value_.pop_back();
  if (value_.back() == '.') value_.pop_back();
}

std::string OneLine(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendEscapedText(text, false, &out);
  return out;
}

std::string_view LevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warn";
    default:
      return "error";
  }
}

std::string FormatLogLine(const LogLineOptions& options, spdlog::level::level_enum level,
                          std::chrono::system_clock::time_point time, std::string_view msg,
                          std::span<const LogField> fields) {
  std::string line;
  if (options.journal_prefix) line.append("<").append(std::to_string(SyslogPriority(level))) += '>';
  line += options.format == LogFormat::kJson ? JsonLine(options, level, time, msg, fields)
                                             : TextLine(options, level, time, msg, fields);
  line += '\n';
  return line;
}

bool StderrIsJournal() {
  // systemd sets JOURNAL_STREAM=<device>:<inode> of the stream it connected to
  // stderr; a child whose stderr was redirected inherits the variable but not
  // the stream, hence the comparison.
  const char* env = std::getenv("JOURNAL_STREAM");
  if (!env || !*env) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  if (::fstat(2, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

void Log(spdlog::level::level_enum level, std::string_view msg, LogFields fields) {
  LogTo(*spdlog::default_logger_raw(), level, msg,
        std::span<const LogField>(fields.begin(), fields.size()));
}

void Log(spdlog::level::level_enum level, std::string_view msg,
         const std::vector<LogField>& fields) {
  LogTo(*spdlog::default_logger_raw(), level, msg, fields);
}

void LogAtSyslogLevel(int severity, std::string_view msg, LogFields fields) {
  const auto level = severity <= 3   ? spdlog::level::err
                     : severity == 4 ? spdlog::level::warn
                                     : spdlog::level::debug;
  Log(level, msg, fields);
}

ScopedLogFields::ScopedLogFields(std::vector<LogField> fields)
    : fields_(std::move(fields)), previous_(tls_scoped) {
  tls_scoped = &fields_;
}

ScopedLogFields::~ScopedLogFields() { tls_scoped = previous_; }

ScopedLogSink::ScopedLogSink(LogSink sink, const std::string& min_level)
    : sink_(std::move(sink)),
      min_level_(min_level == "warn" ? spdlog::level::warn : spdlog::level::from_str(min_level)),
      previous_(tls_sink) {
  tls_sink = this;
}

ScopedLogSink::~ScopedLogSink() { tls_sink = previous_; }

void ScopedLogSink::Write(spdlog::level::level_enum level, std::string_view msg,
                          std::span<const LogField> fields) const {
  if (level < min_level_) return;
  std::string line;
  AppendEscapedText(msg, false, &line);
  for (const auto& f : fields) AppendTextField(f, &line);
  if (tls_scoped)
    for (const auto& f : *tls_scoped) AppendTextField(f, &line);
  sink_(LevelName(level), line);
}

void PrepareLoggingForThreads() { (void)spdlog::default_logger_raw(); }

void LogAudit(std::string_view msg, const std::vector<LogField>& fields) {
  spdlog::logger& logger = *spdlog::default_logger_raw();
  const spdlog::level::level_enum level = logger.level();
  if (level > spdlog::level::info) logger.set_level(spdlog::level::info);
  LogTo(logger, spdlog::level::info, msg, fields);
  logger.flush();
  logger.set_level(level);
}

void ConfigureLogging(const std::string& level, const std::string& format,
                      const std::string& instance_id) {
  // Logs go to stderr: stdout stays free for command output (check, dead list).
  spdlog::drop("outbox");
  auto logger = spdlog::stderr_logger_mt("outbox");
  spdlog::set_default_logger(logger);
  spdlog::set_level(level == "warn" ? spdlog::level::warn : spdlog::level::from_str(level));
  LogLineOptions options;
  options.format = format == "json" ? LogFormat::kJson : LogFormat::kText;
  options.instance = instance_id;
  options.journal_prefix = StderrIsJournal();
  spdlog::set_formatter(std::make_unique<LineFormatter>(std::move(options)));
}

}  // namespace outbox
