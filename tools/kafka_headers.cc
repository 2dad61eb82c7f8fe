#include "kafka_headers.h"

namespace outbox::tools {

std::vector<std::pair<std::string, std::string>> MessageHeaders(const rd_kafka_message_t* message) {
  std::vector<std::pair<std::string, std::string>> out;
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(message, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return out;
  const char* name = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  for (size_t i = 0;
       rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
       ++i) {
    out.emplace_back(name, value ? std::string(static_cast<const char*>(value), size) : "");
  }
  return out;
}

}  // namespace outbox::tools
