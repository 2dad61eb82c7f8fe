// Decimal text to Avro's decimal bytes (declared in avro_logical.h).
#include <cctype>

#include "schema/avro_logical.h"

namespace outbox {

namespace {

// Most digits an unscaled value may have here: 10^38 < 2^127.
constexpr size_t kMaxDigits = 38;

// A number's text as sign, digits and a power of ten: value = digits x 10^exponent.
struct DecimalText {
  bool negative = false;
  std::string digits;
  int64_t exponent = 0;
};

bool ReadExponent(std::string_view t, size_t pos, int64_t* exponent) {
  int sign = 1;
  if (pos < t.size() && (t[pos] == '+' || t[pos] == '-')) sign = t[pos++] == '-' ? -1 : 1;
  if (pos >= t.size() || t.size() - pos > 4) return false;
  int64_t e = 0;
  for (; pos < t.size(); ++pos) {
    if (!std::isdigit(static_cast<unsigned char>(t[pos]))) return false;
    e = e * 10 + (t[pos] - '0');
  }
  *exponent += sign * e;
  return true;
}

bool ParseDecimalText(std::string_view t, DecimalText* d) {
  size_t pos = 0;
  if (pos < t.size() && (t[pos] == '-' || t[pos] == '+')) d->negative = t[pos++] == '-';
  bool dot = false;
  for (; pos < t.size(); ++pos) {
    const char c = t[pos];
    if (c == '.' && !dot) {
      dot = true;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      d->digits.push_back(c);
      if (dot) --d->exponent;
    } else {
      break;
    }
  }
  if (d->digits.empty()) return false;
  if (pos == t.size()) return true;
  return (t[pos] == 'e' || t[pos] == 'E') && ReadExponent(t, pos + 1, &d->exponent);
}

// Scales d to `scale` fractional digits: the unscaled digits, without
// leading zeros. False when a nonzero digit would be cut.
bool Rescale(DecimalText* d, int scale, std::string* why) {
  const int64_t shift = d->exponent + scale;
  if (shift < 0) {
    const size_t cut = static_cast<size_t>(-shift);
    const size_t keep = cut >= d->digits.size() ? 0 : d->digits.size() - cut;
    if (d->digits.find_first_not_of('0', keep) != std::string::npos) {
      *why = "has more than " + std::to_string(scale) + " decimal places (the schema's scale)";
      return false;
    }
    d->digits.resize(keep);
  } else if (shift > static_cast<int64_t>(kMaxDigits)) {
    if (d->digits.find_first_not_of('0') != std::string::npos) {
      *why = "is too large for a decimal";
      return false;
    }
    d->digits.clear();
  } else {
    d->digits.append(static_cast<size_t>(shift), '0');
  }
  const size_t first = d->digits.find_first_not_of('0');
  d->digits.erase(0, first == std::string::npos ? d->digits.size() : first);
  return true;
}

// The 16 big-endian two's complement bytes of `v`.
std::string Int128Bytes(__int128 v) {
  std::string b(16, '\0');
  auto u = static_cast<unsigned __int128>(v);
  for (int i = 15; i >= 0; --i, u >>= 8) b[static_cast<size_t>(i)] = static_cast<char>(u & 0xff);
  return b;
}

// The bytes of `full` (16) in `size` bytes, or the fewest when size is 0;
// false when they do not fit.
bool Shorten(const std::string& full, int64_t size, std::string* out) {
  const char fill = (full[0] & 0x80) ? static_cast<char>(0xff) : '\0';
  size_t start = 0;
  // A leading byte can go while it only repeats the sign of the next one.
  while (start + 1 < full.size() && full[start] == fill &&
         ((full[start + 1] & 0x80) != 0) == (fill != '\0'))
    ++start;
  const size_t needed = full.size() - start;
  if (size == 0) {
    *out = full.substr(start);
    return true;
  }
  if (static_cast<size_t>(size) < needed) return false;
  *out = std::string(static_cast<size_t>(size) - needed, fill) + full.substr(start);
  return true;
}

}  // namespace

bool DecimalToBytes(std::string_view text, int precision, int scale, int64_t fixed_size,
                    std::string* out, std::string* why) {
  DecimalText d;
  if (!ParseDecimalText(text, &d)) {
    *why = "is not a decimal number";
    return false;
  }
  if (!Rescale(&d, scale, why)) return false;
  const size_t limit = precision > 0 ? static_cast<size_t>(precision) : kMaxDigits;
  if (d.digits.size() > limit || d.digits.size() > kMaxDigits) {
    *why = "has more than " + std::to_string(limit) + " digits (the schema's precision)";
    return false;
  }
  __int128 v = 0;
  for (char c : d.digits) v = v * 10 + (c - '0');
  if (d.negative) v = -v;
  if (!Shorten(Int128Bytes(v), fixed_size, out)) {
    *why = "does not fit in the schema's fixed of " + std::to_string(fixed_size) + " bytes";
    return false;
  }
  return true;
}

}  // namespace outbox

namespace outbox {

bool DecimalBytesToText(std::string_view bytes, int scale, std::string* out) {
  if (bytes.size() > 16) return false;
  // Sign-extended from the first byte; an empty value is 0.
  unsigned __int128 u =
      !bytes.empty() && (bytes[0] & 0x80) ? ~static_cast<unsigned __int128>(0) : 0;
  for (char c : bytes) u = (u << 8) | static_cast<unsigned char>(c);
  const auto v = static_cast<__int128>(u);
  const bool negative = v < 0;
  // The magnitude of the most negative value fits the unsigned type.
  unsigned __int128 magnitude = negative ? ~u + 1 : u;
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(magnitude % 10)));
    magnitude /= 10;
  } while (magnitude != 0);
  const auto places = static_cast<size_t>(scale > 0 ? scale : 0);
  if (digits.size() <= places) digits.insert(0, places + 1 - digits.size(), '0');
  // Characters appended, not a C string assigned or inserted: GCC 12 at -O3
  // warns (-Wrestrict) about the overlap checks those inline.
  const size_t whole = digits.size() - places;
  std::string text;
  if (negative) text.push_back('-');
  text.append(digits, 0, whole);
  if (places > 0) {
    text.push_back('.');
    text.append(digits, whole, places);
  }
  *out = std::move(text);
  return true;
}

}  // namespace outbox
