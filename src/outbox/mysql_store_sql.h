#pragma once

// SQL text and parameter helpers shared by the mysql_store*.cc files; not
// part of the store's interface.

#include <cppconn/prepared_statement.h>

#include <cstdint>
#include <string>
#include <vector>

namespace outbox::mysql_sql {

// A deadline `ms` from now on the database clock, as next_retry_at holds it
// (whole seconds): NOW(6) + ms rounded *up* to a whole second, so it is never
// sooner than `ms`, at most a second later. Bind CeilMicros(ms) to its `?`.
// Truncating would cut up to a second off every deadline: a lease would lose
// more than the margin the publish budget keeps (half the lease minus a
// second to start chain messages, half for the last one to time out), and a
// backoff under a second would be none at all.
inline constexpr const char* kDeadlineSql =
    "DATE_FORMAT(NOW(6) + INTERVAL ? MICROSECOND, '%Y-%m-%d %H:%i:%s')";
inline int64_t CeilMicros(int64_t ms) { return ms * 1000 + 999999; }

// How a claim reads a text column: `column` itself, or, for a column of
// MySQL 8's JSON type (`is_json`), "CAST(column AS CHAR CHARACTER SET
// utf8mb4)". Debian 12's Connector/C++ 1.1.12 was built against MariaDB
// Connector/C, whose headers lack LIBMYSQL_VERSION_ID, so its prepared
// statements have no case for MYSQL_TYPE_JSON (245): binding such a result
// column throws "allocate_buffer_for_field: invalid rbind data type", and
// every claim on a MySQL 8 table with `payload JSON` would fail. The cast
// makes the server send LONGTEXT. MySQL stores JSON in a binary form, so the
// text is its normalised rendering (docs/MYSQL8.md), not the bytes inserted.
std::string JsonAsText(const std::string& column, bool is_json);

// "?,?,?" with n marks.
std::string Placeholders(size_t n);
// A few fixed IN-list sizes keep the prepared-statement cache small: n
// rounded up to a power of two (up to 1024), then to a multiple of 1024.
size_t Bucket(size_t n);
// Binds `ids` (padded to Bucket(ids.size()) by repeating the last) from
// parameter index `first`; returns the next free index.
// REQUIRES: !ids.empty().
unsigned BindIds(sql::PreparedStatement* ps, unsigned first, const std::vector<int64_t>& ids);
// At most `max_chars` characters of `s`, cut at a character boundary, invalid
// UTF-8 bytes replaced by '?'.
std::string Utf8Prefix(const std::string& s, size_t max_chars);

}  // namespace outbox::mysql_sql
