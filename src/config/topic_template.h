#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace outbox {

// A template such as "outbox.event.{aggregate_type}" (a topic) or
// "/outbox/{service}/{aggregate_type}" (a CloudEvents source). Placeholders:
// {aggregate_type}, {event_type}, {service}. Immutable after Parse; thread-safe.
class TopicTemplate {
 public:
  // What the template's fixed text may hold, and how Render writes values.
  enum class Syntax {
    // A Kafka topic name: fixed text of [A-Za-z0-9._-]; values as they are.
    kTopic,
    // A URI reference (RFC 3986), e.g. CloudEvents' `source`: fixed text of
    // URI characters, '%' only in a %XX escape; each value percent-encoded
    // except for its unreserved characters ([A-Za-z0-9._~-]), so that any
    // aggregate_type renders a valid URI reference ("Order Line" ->
    // "Order%20Line", "a/b" -> "a%2Fb").
    kUriReference,
    // Text without control characters, e.g. CloudEvents' `type`; values as
    // they are.
    kText,
  };

  // Parses `text`; on error returns false and sets *error (e.g. an unknown
  // placeholder, naming the placeholders that exist, or fixed text with a
  // character `syntax` does not allow, such as one no Kafka topic name may
  // contain).
  static bool Parse(const std::string& text, TopicTemplate* out, std::string* error,
                    Syntax syntax = Syntax::kTopic);

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
  static bool PlaceholderKind(const std::string& name, Kind* kind, std::string* error);
  void AppendValue(std::string_view value, std::string* out) const;

  std::string text_;
  Syntax syntax_ = Syntax::kTopic;
  std::vector<Part> parts_;
  bool uses_row_fields_ = false;
};

// Kafka's rule for topic names: 1..249 of [A-Za-z0-9._-], not "." or "..".
bool IsValidTopicName(std::string_view topic, std::string* why);

}  // namespace outbox
