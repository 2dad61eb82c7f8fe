#include "value_printer.h"

#include <spdlog/spdlog.h>

namespace example {

std::string Printable(std::string_view bytes, size_t max) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (bytes.size() > max) out += "... (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

std::string DescribeValue(const outbox::inbox::Event& event) {
  const std::string head = "event " + event.event_key + ": ";
  if (event.schema_id == 0)
    return head + "no schema id, payload " + Printable(event.payload, ValuePrinter::kMaxShown);
  const std::string id = "schema id " + std::to_string(event.schema_id) +
                         (event.schema_type.empty() ? "" : " (" + event.schema_type + ")");
  if (!event.json.empty())
    return head + id + ", JSON " + Printable(event.json, ValuePrinter::kMaxShown);
  return head + id + ", " + std::to_string(event.body.size()) +
         " bytes: " + Printable(event.body, ValuePrinter::kMaxShown);
}

outbox::inbox::Status ValuePrinter::Apply(outbox::inbox::Transaction& tx,
                                          const outbox::inbox::Event& event) {
  spdlog::info("{}", DescribeValue(event));
  return next_.Apply(tx, event);
}

}  // namespace example
