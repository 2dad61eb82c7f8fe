#pragma once

// The library's log lines go through common/log.h, the one logging unit,
// so that they reach a host's ConsumerOptions::log (outbox::ScopedLogSink)
// or else spdlog's default logger as the example binary configures it.
// Unlike the relay's, their messages are formatted text, with the values
// in the sentence rather than in fields.

#include <fmt/format.h>

#include <utility>

#include "common/enum_names.h"
#include "common/log.h"
#include "outbox/inbox/log.h"

namespace outbox::inbox {

// ConsumerOptions::log as the sink of a thread's log lines
// (outbox::ScopedLogSink).
inline outbox::LogSink HostLogSink(const LogCallback& log) {
  return [log](std::string_view level, std::string_view line) {
    log(level == "error"  ? LogLevel::kError
        : level == "warn" ? LogLevel::kWarn
        : level == "info" ? LogLevel::kInfo
                          : LogLevel::kDebug,
        line);
  };
}

// ConsumerOptions::log_level as the logging unit names it.
inline constexpr const char* const kLevelNames[] = {"debug", "info", "warn", "error"};
static_assert(NamesEveryValue(kLevelNames, LogLevel::kError));

inline const char* LevelName(LogLevel level) { return NameOf(kLevelNames, level, "info"); }

}  // namespace outbox::inbox

namespace outbox::inbox::log {

template <typename... A>
void Debug(fmt::format_string<A...> f, A&&... a) {
  outbox::LogDebug(fmt::format(f, std::forward<A>(a)...));
}
template <typename... A>
void Info(fmt::format_string<A...> f, A&&... a) {
  outbox::LogInfo(fmt::format(f, std::forward<A>(a)...));
}
template <typename... A>
void Warn(fmt::format_string<A...> f, A&&... a) {
  outbox::LogWarn(fmt::format(f, std::forward<A>(a)...));
}
template <typename... A>
void Error(fmt::format_string<A...> f, A&&... a) {
  outbox::LogError(fmt::format(f, std::forward<A>(a)...));
}

}  // namespace outbox::inbox::log
