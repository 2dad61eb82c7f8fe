#include "outbox/mysql_store_sql.h"

#include <algorithm>

namespace outbox {
namespace mysql_sql {

std::string JsonAsText(const std::string& column, bool is_json) {
  if (!is_json) return column;
  std::string s = "CAST(";
  s += column;
  s += " AS CHAR CHARACTER SET utf8mb4)";
  return s;
}

std::string Placeholders(size_t n) {
  std::string s;
  s.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) s += i ? ",?" : "?";
  return s;
}

size_t Bucket(size_t n) {
  size_t b = 1;
  while (b < n && b < 1024) b *= 2;
  if (b >= n) return b;
  return (n + 1023) / 1024 * 1024;
}

unsigned BindIds(sql::PreparedStatement* ps, unsigned first, const std::vector<int64_t>& ids) {
  size_t n = Bucket(ids.size());
  for (size_t i = 0; i < n; ++i) ps->setInt64(first + i, ids[std::min(i, ids.size() - 1)]);
  return first + static_cast<unsigned>(n);
}

// The column's length is in characters, and a strict server refuses a split
// character: a settle it refuses would be retried forever.
std::string Utf8Prefix(const std::string& s, size_t max_chars) {
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < s.size() && chars < max_chars; ++chars) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

}  // namespace mysql_sql
}  // namespace outbox
