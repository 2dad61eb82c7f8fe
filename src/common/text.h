#pragma once

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace outbox {

// `text` on one printable line, escaped as the log escapes a field's value
// (src/common/log.cc): \n, \r, \t and the other control characters as \xNN.
// For messages and terminal output built from text anyone could write (a
// row's columns, a configuration value): a newline cannot start a forged
// line, an escape sequence cannot reach the terminal. Thread-safe.
std::string OneLine(std::string_view text);

// `s` with ASCII letters in lower case (host, database and table names, which
// MySQL compares without regard to case).
inline std::string AsciiLower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// `items` joined with ",", or `none` when there are none (a log field's
// list of services or keys).
inline std::string JoinNames(const std::vector<std::string>& items,
                             std::string_view none = "none") {
  std::string out;
  for (const auto& i : items) {
    if (!out.empty()) out += ',';
    out += i;
  }
  return out.empty() ? std::string(none) : out;
}

// `numbers` (shards, partitions) joined with ",", or "none" when there are
// none. Appended, not `"," + std::to_string(n)`: see below.
inline std::string JoinNumbers(const std::set<int>& numbers) {
  std::string out;
  for (int n : numbers) {
    if (!out.empty()) out += ',';
    out += std::to_string(n);
  }
  return out.empty() ? "none" : out;
}

// Building strings: append (`out += ...`, `out.append(...)`), never prepend
// (`"x" + std::move(s)`, `"x" + s.substr(...)`, `s.insert(0, ...)`). Prepending
// goes through std::string::insert, which GCC 12 at -O3 flags with a bogus
// -Wrestrict ("accessing 9223372036854775810 or more bytes ... may overlap",
// GCC bug 105329); with OUTBOX_WERROR that fails the Release build
// (scripts/build-matrix catches it, the everyday -O2 builds do not).

}  // namespace outbox
