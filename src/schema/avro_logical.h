#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace outbox {

// The text forms a JSON payload gives Avro's logical types in, and their
// Avro values. Pure functions; thread-safe.

// An RFC 3339 date-time ("2024-05-01T12:30:00Z", "2024-05-01T14:30:00.123+02:00";
// 'T' or ' ' between date and time; up to 9 fractional digits, cut to
// microseconds) as microseconds since the Unix epoch. False if it is not one.
bool ParseTimestampMicros(std::string_view text, int64_t* micros);

// A date "2024-05-01" as days since the Unix epoch. False if it is not one.
bool ParseDateDays(std::string_view text, int32_t* days);

// True for a UUID in its text form, 8-4-4-4-12 hexadecimal digits.
bool IsUuidText(std::string_view text);

// A decimal number's text ("-12.34", "1e3") as Avro's decimal: the unscaled
// value (the number times 10^scale) in big-endian two's complement, in the
// fewest bytes (fixed_size 0, for bytes) or in exactly fixed_size bytes (a
// fixed). False with *why when it has more fractional digits than `scale`,
// more digits than `precision`, or is not a number.
bool DecimalToBytes(std::string_view text, int precision, int scale, int64_t fixed_size,
                    std::string* out, std::string* why);

// Avro's decimal (the unscaled value in big-endian two's complement, as
// DecimalToBytes writes it) as text with `scale` decimal places: "-12.30"
// for the bytes of -1230 at scale 2. False when they are more than 16
// bytes (beyond any precision a decimal here can have).
bool DecimalBytesToText(std::string_view bytes, int scale, std::string* out);

}  // namespace outbox
