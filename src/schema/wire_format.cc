#include "schema/wire_format.h"

namespace outbox {

std::string WireHeader(int32_t schema_id) {
  const auto id = static_cast<uint32_t>(schema_id);
  std::string header(kWireHeaderSize, kWireMagic);
  for (int i = 0; i < 4; ++i) header[1 + i] = static_cast<char>((id >> (24 - 8 * i)) & 0xff);
  return header;
}

std::string WithWireHeader(int32_t schema_id, std::string_view body) {
  std::string value = WireHeader(schema_id);
  value.append(body);
  return value;
}

bool ParseWireHeader(std::string_view value, int32_t* schema_id, std::string_view* body) {
  if (value.size() < kWireHeaderSize || value[0] != kWireMagic) return false;
  uint32_t id = 0;
  for (int i = 1; i <= 4; ++i) id = (id << 8) | static_cast<unsigned char>(value[i]);
  *schema_id = static_cast<int32_t>(id);
  *body = value.substr(kWireHeaderSize);
  return true;
}

}  // namespace outbox
