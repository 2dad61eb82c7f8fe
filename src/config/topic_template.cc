#include "config/topic_template.h"

namespace outbox {

namespace {

bool IsTopicChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// The character itself if printable ASCII, else a \xNN escape.
std::string Printable(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string(1, c);
  static const char* kHex = "0123456789abcdef";
  return std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
}

// 'x', quoted: the text may hold anything. Appended, not `"'" + Printable(c) +
// "'"`: that prepends with std::string::insert, which GCC 12 at -O3 flags with
// a bogus -Wrestrict inside libstdc++ (GCC bug 105329: "accessing
// 9223372036854775810 or more bytes ... may overlap"; not in clang).
std::string DescribeChar(char c) {
  std::string out = "'";
  out += Printable(c);
  out += '\'';
  return out;
}

// RFC 3986's characters outside a %XX escape: unreserved, gen-delims and
// sub-delims.
bool IsUriChar(char c) {
  static constexpr std::string_view kOther = "-._~:/?#[]@!$&'()*+,;=";
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         kOther.find(c) != std::string_view::npos;
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// " at offset 5 of "text"", for a message about text[i].
std::string Where(const std::string& text, size_t i) {
  std::string out = " at offset ";
  out.append(std::to_string(i)).append(" of \"").append(text).append("\"");
  return out;
}

// Whether the fixed character text[i] is allowed by `syntax`; *error when not.
bool FixedCharOk(TopicTemplate::Syntax syntax, const std::string& text, size_t i,
                 std::string* error) {
  const char c = text[i];
  const auto u = static_cast<unsigned char>(c);
  const std::string where = Where(text, i);
  switch (syntax) {
    case TopicTemplate::Syntax::kTopic:
      // The fixed text is in every topic the template renders: a character
      // Kafka refuses here would make every row DEAD, so refuse the config.
      if (IsTopicChar(c)) return true;
      *error = "character " + DescribeChar(c) + where +
               " can never be in a Kafka topic name (allowed: [A-Za-z0-9._-])";
      return false;
    case TopicTemplate::Syntax::kUriReference:
      if (IsUriChar(c)) return true;
      if (c == '%' && i + 2 < text.size() && IsHexDigit(text[i + 1]) && IsHexDigit(text[i + 2]))
        return true;
      *error = c == '%' ? "'%'" + where + " does not start a %XX escape"
                        : "character " + DescribeChar(c) + where +
                              " is not allowed in a URI reference (RFC 3986): percent-encode it";
      return false;
    case TopicTemplate::Syntax::kText:
      if (u >= 0x20 && u != 0x7f) return true;
      *error = "control character " + DescribeChar(c) + where;
      return false;
  }
  return false;
}

}  // namespace

bool TopicTemplate::PlaceholderKind(const std::string& name, Kind* kind, std::string* error) {
  if (name == "aggregate_type") {
    *kind = Kind::kAggregateType;
  } else if (name == "event_type") {
    *kind = Kind::kEventType;
  } else if (name == "service") {
    *kind = Kind::kService;
  } else {
    *error =
        "unknown placeholder {" + name + "} (known: {aggregate_type}, {event_type}, {service})";
    return false;
  }
  return true;
}

bool TopicTemplate::Parse(const std::string& text, TopicTemplate* out, std::string* error,
                          Syntax syntax) {
  TopicTemplate t;
  t.text_ = text;
  t.syntax_ = syntax;
  std::string literal;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '}') {
      *error = "unmatched '}' at offset " + std::to_string(i) + " in \"" + text + "\"";
      return false;
    }
    if (c != '{') {
      if (!FixedCharOk(syntax, text, i, error)) return false;
      literal += c;
      continue;
    }
    const size_t close = text.find('}', i + 1);
    Kind kind;
    if (close == std::string::npos) {
      *error = "unterminated '{' at offset " + std::to_string(i) + " in \"" + text + "\"";
      return false;
    }
    if (!PlaceholderKind(text.substr(i + 1, close - i - 1), &kind, error)) return false;
    if (!literal.empty()) t.parts_.push_back({Kind::kLiteral, std::move(literal)});
    literal.clear();
    t.parts_.push_back({kind, ""});
    if (kind != Kind::kService) t.uses_row_fields_ = true;
    i = close;
  }
  if (!literal.empty()) t.parts_.push_back({Kind::kLiteral, std::move(literal)});
  if (t.parts_.empty()) {
    *error = syntax == Syntax::kTopic ? "topic template is empty" : "template is empty";
    return false;
  }
  *out = std::move(t);
  return true;
}

void TopicTemplate::AppendValue(std::string_view value, std::string* out) const {
  if (syntax_ != Syntax::kUriReference) {
    out->append(value);
    return;
  }
  static const char* kHex = "0123456789ABCDEF";
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      *out += c;
    } else {
      *out += '%';
      *out += kHex[u >> 4];
      *out += kHex[u & 15];
    }
  }
}

std::string TopicTemplate::Render(std::string_view aggregate_type, std::string_view event_type,
                                  std::string_view service) const {
  std::string out;
  for (const Part& p : parts_) {
    switch (p.kind) {
      case Kind::kLiteral:
        out += p.literal;
        break;
      case Kind::kAggregateType:
        AppendValue(aggregate_type, &out);
        break;
      case Kind::kEventType:
        AppendValue(event_type, &out);
        break;
      case Kind::kService:
        AppendValue(service, &out);
        break;
    }
  }
  return out;
}

bool IsValidTopicName(std::string_view topic, std::string* why) {
  if (topic.empty()) {
    *why = "topic name is empty";
    return false;
  }
  if (topic.size() > 249) {
    *why = "topic name is longer than 249 characters";
    return false;
  }
  if (topic == "." || topic == "..") {
    *why = "topic name cannot be \".\" or \"..\"";
    return false;
  }
  for (char c : topic) {
    if (!IsTopicChar(c)) {
      // The name may come from a row: printable and short, so that it cannot
      // break (or forge) a log line.
      std::string shown;
      for (char d : topic.substr(0, 100)) shown += Printable(d);
      if (topic.size() > 100) shown += "...";
      *why = "topic name \"" + shown + "\" has a character outside [A-Za-z0-9._-]";
      return false;
    }
  }
  return true;
}

}  // namespace outbox
