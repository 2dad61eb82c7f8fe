#include "schema/avro_logical.h"

#include <cctype>

namespace outbox {

namespace {

// Reads exactly `n` digits at *pos into *value.
bool Digits(std::string_view t, size_t* pos, int n, int* value) {
  if (*pos + static_cast<size_t>(n) > t.size()) return false;
  int v = 0;
  for (int i = 0; i < n; ++i) {
    const char c = t[(*pos)++];
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *value = v;
  return true;
}

bool Expect(std::string_view t, size_t* pos, char c) {
  if (*pos >= t.size() || t[*pos] != c) return false;
  ++*pos;
  return true;
}

// Howard Hinnant's days_from_civil: days since 1970-01-01 of a proleptic
// Gregorian date.
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool ReadDate(std::string_view t, size_t* pos, int64_t* days) {
  int y = 0, m = 0, d = 0;
  if (!Digits(t, pos, 4, &y) || !Expect(t, pos, '-') || !Digits(t, pos, 2, &m) ||
      !Expect(t, pos, '-') || !Digits(t, pos, 2, &d))
    return false;
  if (m < 1 || m > 12 || d < 1 || d > 31) return false;
  *days = DaysFromCivil(y, m, d);
  return true;
}

// "hh:mm:ss" as seconds into the day (a leap second's 60 allowed).
bool ReadClock(std::string_view t, size_t* pos, int64_t* seconds) {
  int h = 0, m = 0, s = 0;
  if (!Digits(t, pos, 2, &h) || !Expect(t, pos, ':') || !Digits(t, pos, 2, &m) ||
      !Expect(t, pos, ':') || !Digits(t, pos, 2, &s))
    return false;
  *seconds = h * 3600 + m * 60 + s;
  return h <= 23 && m <= 59 && s <= 60;
}

// The fraction after a '.' (at least one digit) as microseconds.
bool ReadFraction(std::string_view t, size_t* pos, int64_t* micros) {
  int digits = 0;
  int64_t value = 0;
  while (*pos < t.size() && std::isdigit(static_cast<unsigned char>(t[*pos]))) {
    if (digits < 6) value = value * 10 + (t[*pos] - '0');
    ++digits;
    ++*pos;
  }
  for (int i = digits; i < 6; ++i) value *= 10;
  *micros = value;
  return digits > 0 && digits <= 9;
}

// "Z", "z" or "+hh:mm" / "-hh:mm" as seconds east of UTC.
bool ReadOffset(std::string_view t, size_t* pos, int64_t* seconds) {
  if (*pos < t.size() && (t[*pos] == 'Z' || t[*pos] == 'z')) {
    ++*pos;
    *seconds = 0;
    return true;
  }
  if (*pos >= t.size() || (t[*pos] != '+' && t[*pos] != '-')) return false;
  const int sign = t[(*pos)++] == '-' ? -1 : 1;
  int h = 0, m = 0;
  if (!Digits(t, pos, 2, &h) || !Expect(t, pos, ':') || !Digits(t, pos, 2, &m)) return false;
  *seconds = static_cast<int64_t>(sign) * (h * 3600 + m * 60);
  return h < 24 && m < 60;
}

}  // namespace

bool ParseTimestampMicros(std::string_view t, int64_t* micros) {
  size_t pos = 0;
  int64_t days = 0, seconds = 0, frac = 0, offset = 0;
  if (!ReadDate(t, &pos, &days)) return false;
  if (pos >= t.size() || (t[pos] != 'T' && t[pos] != 't' && t[pos] != ' ')) return false;
  ++pos;
  if (!ReadClock(t, &pos, &seconds)) return false;
  if (pos < t.size() && t[pos] == '.' && !ReadFraction(t, &(++pos), &frac)) return false;
  if (!ReadOffset(t, &pos, &offset) || pos != t.size()) return false;
  *micros = (days * 86400 + seconds - offset) * 1000000 + frac;
  return true;
}

bool ParseDateDays(std::string_view t, int32_t* days) {
  size_t pos = 0;
  int64_t d = 0;
  if (!ReadDate(t, &pos, &d) || pos != t.size()) return false;
  *days = static_cast<int32_t>(d);
  return true;
}

bool IsUuidText(std::string_view t) {
  if (t.size() != 36) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? t[i] != '-' : !std::isxdigit(static_cast<unsigned char>(t[i]))) return false;
  }
  return true;
}

}  // namespace outbox
