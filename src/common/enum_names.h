#pragma once

#include <cstddef>

namespace outbox {

// The names of an enum's values 0, 1, ... (no gaps), in the enum's order: a
// table that NameOf reads instead of a switch returning a string per case.

// True when a table of N names has one name for each value up to `last`. A
// static_assert of it beside the table stands where the switch's -Wswitch
// did: a table that misses a value does not compile. A new value goes at
// the end of its enum, its name at the end of the table, and into `last`.
template <typename E, size_t N>
constexpr bool NamesEveryValue(const char* const (&)[N], E last) {
  return N == static_cast<size_t>(last) + 1;
}

// The name of `value`; `other` for a value outside the table (an integer
// cast to the enum).
template <typename E, size_t N>
constexpr const char* NameOf(const char* const (&names)[N], E value, const char* other) {
  const auto i = static_cast<size_t>(value);
  return i < N ? names[i] : other;
}

}  // namespace outbox
