#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace outbox {

// Confluent's wire format, which every Schema Registry serializer and
// deserializer (Confluent's, Karapace's, Apicurio's in its Confluent mode)
// reads: one magic byte 0, the schema id as a 4-byte big-endian integer, then
// the encoded value (Avro binary, or JSON for JSON Schema).
inline constexpr char kWireMagic = 0;
inline constexpr size_t kWireHeaderSize = 5;

// The 5 header bytes for `schema_id`.
std::string WireHeader(int32_t schema_id);

// `body` after the header of `schema_id`.
std::string WithWireHeader(int32_t schema_id, std::string_view body);

// Reads the header of `value`: false when it is shorter than the header or
// its first byte is not the magic byte; else *schema_id and *body (a view
// into `value`) are set.
bool ParseWireHeader(std::string_view value, int32_t* schema_id, std::string_view* body);

}  // namespace outbox
