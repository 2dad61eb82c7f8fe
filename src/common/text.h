#pragma once

#include <string>
#include <string_view>

namespace outbox {

// `text` on one printable line, escaped as the log escapes a field's value
// (src/common/log.cc): \n, \r, \t and the other control characters as \xNN.
// For messages and terminal output built from text anyone could write (a
// row's columns, a configuration value): a newline cannot start a forged
// line, an escape sequence cannot reach the terminal. Thread-safe.
std::string OneLine(std::string_view text);

}  // namespace outbox
