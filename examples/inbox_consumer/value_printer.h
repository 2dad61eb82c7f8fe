#pragma once

#include <string>
#include <string_view>

#include "outbox/inbox/handler.h"

namespace example {

// Prints what the library read of each event's value (docs/CONSUMERS.md
// "Values with a schema"), then hands the event to `next`: one log line
// per event with its schema id and the decoded JSON (values.decode: json),
// or the bytes after the wire header (decode: raw), or the payload of a
// value without the header. Long values are cut at kMaxShown bytes.
// *next must outlive the printer; thread-safe when `next` is.
class ValuePrinter : public outbox::inbox::Handler {
 public:
  static constexpr size_t kMaxShown = 200;
  explicit ValuePrinter(outbox::inbox::Handler& next) : next_(next) {}
  outbox::inbox::Status Apply(outbox::inbox::Transaction& tx,
                              const outbox::inbox::Event& event) override;

 private:
  outbox::inbox::Handler& next_;
};

// The line ValuePrinter logs for `event`.
std::string DescribeValue(const outbox::inbox::Event& event);

// `bytes` with every byte outside printable ASCII as \xNN, cut at `max`
// bytes ("... (N bytes)" after).
std::string Printable(std::string_view bytes, size_t max);

}  // namespace example
