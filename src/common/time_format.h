#pragma once

#include <cstdint>
#include <string>

namespace outbox {

// Formats unix seconds as RFC 3339 in UTC, e.g. 2026-11-29T15:04:05Z.
std::string FormatRfc3339Utc(int64_t unix_seconds);

}  // namespace outbox
