#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace outbox {

// A topic template such as "outbox.event.{aggregate_type}". Placeholders:
// {aggregate_type}, {event_type}, {service}. Immutable after Parse; thread-safe.
class TopicTemplate {
 public:
  // Parses `text`; on error returns false and sets *error (e.g. an unknown
  // placeholder, naming the placeholders that exist, or fixed text with a
  // character no Kafka topic name may contain).
  static bool Parse(const std::string& text, TopicTemplate* out, std::string* error);

  std::string Render(std::string_view aggregate_type, std::string_view event_type,
                     std::string_view service) const;
  const std::string& text() const { return text_; }
  // True if {aggregate_type} or {event_type} appear: the topic depends on the
  // row. Otherwise the service name alone decides it, at load time.
  bool uses_row_fields() const { return uses_row_fields_; }

 private:
  enum class Kind { kLiteral, kAggregateType, kEventType, kService };
  struct Part {
    Kind kind;
    std::string literal;
  };
  std::string text_;
  std::vector<Part> parts_;
  bool uses_row_fields_ = false;
};

// Kafka's rule for topic names: 1..249 of [A-Za-z0-9._-], not "." or "..".
bool IsValidTopicName(std::string_view topic, std::string* why);

}  // namespace outbox
