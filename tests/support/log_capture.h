#pragma once

#include <functional>
#include <string>

namespace outbox::testing {

// What `log` writes to stderr through the relay's logging (ConfigureLogging
// with `format` and `level`, instance `instance`), captured in a file.
// `journal_stream`: point JOURNAL_STREAM at the capture file ("self"), at
// another file ("other"), or leave it unset (""). Logging is text at info
// level for "test" again afterwards. Not thread-safe: other threads' lines
// land in the capture too.
std::string CapturedLog(const std::string& format, const std::string& instance,
                        const std::function<void()>& log, const std::string& level = "info",
                        const std::string& journal_stream = "");

}  // namespace outbox::testing
