#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <concepts>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace outbox {

// Structured logging on top of spdlog's default logger. One event is one
// line; docs/LOGS.md lists the fields and their meaning.
//
//   LogWarn("publish failed", {{"service", name}, {"outbox_id", row.id},
//                              {"topic", topic}, {"reason", "broker_timeout"},
//                              {"error", status.message()}});
//
// prints, with log.format json,
//   {"ts":"...","level":"warn","msg":"publish failed","instance":"relay-1",
//    "service":"order","outbox_id":"42","topic":"...","reason":"broker_timeout",
//    "error":"..."}
// and with log.format text
//   2026-...Z warn  [relay-1] publish failed service=order outbox_id=42 ...
//
// Only this unit calls spdlog (scripts/lint "logs" rejects `spdlog::`
// elsewhere), and every message is a string literal: a variable goes in a
// field, never into `msg`, so that `msg` stays a constant to filter on.
//
// The message says what happened; every variable part goes in a field named
// in docs/LOGS.md: `service`, `outbox_id`, `aggregate_type`, `aggregate_id`,
// `topic`, `reason` (exactly the outbox_publish_failures_total reason label),
// `error` (a peer's or the database's text); a batch line gives `count`,
// `first_id`, `last_id`. A value no listed field fits gets a field of its
// own, added to docs/LOGS.md.
//
// Values: strings are written as given (any bytes: invalid UTF-8 becomes
// U+FFFD in JSON, control characters are escaped in text); integers are JSON
// numbers, except for keys that are `id` or end in `_id`, which are always
// strings of decimal digits (64-bit ids do not survive every JSON parser).
//
// Thread-safe, callable from any thread (librdkafka's too). The fields reach
// the formatter through a thread-local, so the default logger must stay
// synchronous (ConfigureLogging makes it so).

// A key and its value. The key is not copied: it must outlive the log call
// (a string literal always does).
class LogField {
 public:
  LogField(std::string_view key, std::string_view value) : key_(key), value_(value) {}
  LogField(std::string_view key, const std::string& value) : key_(key), value_(value) {}
  LogField(std::string_view key, const char* value) : key_(key), value_(value ? value : "") {}
  template <std::integral T>
  requires(!std::same_as<T, bool>) LogField(std::string_view key, T value)
      : key_(key), value_(std::to_string(value)), number_(!IsIdKey(key)) {}
  LogField(std::string_view key, bool value) : key_(key), value_(value ? "true" : "false") {}
  // A JSON number with at most 3 decimals (durations in ms).
  LogField(std::string_view key, double value);

  std::string_view key() const { return key_; }
  const std::string& value() const { return value_; }
  // True for an integer that JSON writes as a number.
  bool number() const { return number_; }

  static bool IsIdKey(std::string_view key) {
    return key == "id" || (key.size() > 3 && key.substr(key.size() - 3) == "_id");
  }

 private:
  std::string_view key_;
  std::string value_;
  bool number_ = false;
};

using LogFields = std::initializer_list<LogField>;

void Log(spdlog::level::level_enum level, std::string_view msg, LogFields fields = {});
inline void LogDebug(std::string_view msg, LogFields fields = {}) {
  Log(spdlog::level::debug, msg, fields);
}
inline void LogInfo(std::string_view msg, LogFields fields = {}) {
  Log(spdlog::level::info, msg, fields);
}
inline void LogWarn(std::string_view msg, LogFields fields = {}) {
  Log(spdlog::level::warn, msg, fields);
}
inline void LogError(std::string_view msg, LogFields fields = {}) {
  Log(spdlog::level::err, msg, fields);
}

// The same with fields chosen at run time, for a field only some lines have
// (trace_id, when the event has trace context).
void Log(spdlog::level::level_enum level, std::string_view msg,
         const std::vector<LogField>& fields);
inline void LogWarn(std::string_view msg, const std::vector<LogField>& fields) {
  Log(spdlog::level::warn, msg, fields);
}
inline void LogError(std::string_view msg, const std::vector<LogField>& fields) {
  Log(spdlog::level::err, msg, fields);
}

// Fields added to every line logged on this thread while it lives, after the
// line's own fields, whether the line comes through Log() or straight from
// spdlog (the inbox consumer's lines): what every line about one event
// carries, such as its trace_id, wherever it is logged from. An inner scope's
// fields replace the outer's until it ends. Lives on one thread's stack.
class ScopedLogFields {
 public:
  explicit ScopedLogFields(std::vector<LogField> fields);
  ~ScopedLogFields();
  ScopedLogFields(const ScopedLogFields&) = delete;
  ScopedLogFields& operator=(const ScopedLogFields&) = delete;

 private:
  std::vector<LogField> fields_;
  const std::vector<LogField>* previous_;
};

// Every line logged on this thread while it lives, at `min_level` or above
// (debug|info|warn|error, as log.level), goes to `sink` with its level's
// name (LevelName) instead of the default logger: the message, then its
// fields (and this thread's ScopedLogFields') as ` key=value` pairs, as
// log.format text writes them after the instance. For a library whose host
// logs its own way (the inbox consumer's ConsumerOptions::log). An inner
// scope's sink replaces the outer's until it ends. Lives on one thread's
// stack; `sink` is called on that thread.
using LogSink = std::function<void(std::string_view level, std::string_view line)>;
class ScopedLogSink {
 public:
  ScopedLogSink(LogSink sink, const std::string& min_level);
  ~ScopedLogSink();
  ScopedLogSink(const ScopedLogSink&) = delete;
  ScopedLogSink& operator=(const ScopedLogSink&) = delete;

  void Write(spdlog::level::level_enum level, std::string_view msg,
             std::span<const LogField> fields) const;

 private:
  LogSink sink_;
  spdlog::level::level_enum min_level_;
  const ScopedLogSink* previous_;
};

// For libraries that report a syslog severity (librdkafka): 0-3 error, 4
// warn, 5-7 debug (their notices are routine).
void LogAtSyslogLevel(int severity, std::string_view msg, LogFields fields = {});

// Builds the logging registry, which happens on first use otherwise. Call it
// before starting threads that log: a first use racing another thread's is
// invisible to ThreadSanitizer's view of libspdlog's (uninstrumented) static
// initialisation.
void PrepareLoggingForThreads();

// Logs at info even when log.level is warn or error (the audit lines of
// `dead replay`: the level is chosen for the daemon's verbosity, not to hide
// who changed rows), then flushes.
void LogAudit(std::string_view msg, const std::vector<LogField>& fields);

// Configures the default spdlog logger: level (debug|info|warn|error) and
// format (json|text), on stderr (stdout stays free for command output). With
// JOURNAL_STREAM naming stderr (systemd), every line starts with its syslog
// priority. Safe to call again; the last call wins.
void ConfigureLogging(const std::string& level, const std::string& format,
                      const std::string& instance_id);

// --- The pieces, exposed for tests and the fuzzer ---

enum class LogFormat { kText, kJson };

struct LogLineOptions {
  LogFormat format = LogFormat::kText;
  std::string instance;
  // Start the line with "<N>", N the syslog priority (3 error .. 7 debug).
  bool journal_prefix = false;
};

// One complete line, ending in '\n'. Never throws; always one line; with
// kJson always one valid JSON object whatever bytes msg and fields hold.
std::string FormatLogLine(const LogLineOptions& options, spdlog::level::level_enum level,
                          std::chrono::system_clock::time_point time, std::string_view msg,
                          std::span<const LogField> fields);

// "debug", "info", "warn", "error" (critical counts as error, trace as debug).
std::string_view LevelName(spdlog::level::level_enum level);

// True when $JOURNAL_STREAM ("device:inode") names the file open on fd 2.
bool StderrIsJournal();

}  // namespace outbox
