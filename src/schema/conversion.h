#pragma once

#include <array>
#include <string>
#include <string_view>

namespace outbox {

// Why a payload could not become the value its schema asks for: the `reason`
// label of the conversion-failure metric, one vocabulary (docs/FORMATS.md
// lists what each means). Every one is permanent for the row: the same bytes
// fail the same way against the same schema.
enum class ConversionFailure {
  kNone,
  kInvalidJson,   // the payload is not JSON
  kMissingField,  // a field the schema requires (no default) is absent
  kWrongType,     // a value of another JSON type than the schema's (a string for an int)
  kBadValue,      // the right JSON type, a value the schema does not allow (an enum
                  // symbol it lacks, an int out of range, a malformed uuid or timestamp)
  kNotAvro,       // payload_encoding avro: the bytes are not one value of the schema
};

struct ConversionFailureLabel {
  ConversionFailure reason;
  std::string_view label;
};
inline constexpr std::array<ConversionFailureLabel, 5> kConversionFailureLabels = {{
    {ConversionFailure::kInvalidJson, "invalid_json"},
    {ConversionFailure::kMissingField, "missing_field"},
    {ConversionFailure::kWrongType, "wrong_type"},
    {ConversionFailure::kBadValue, "bad_value"},
    {ConversionFailure::kNotAvro, "not_avro"},
}};

constexpr std::string_view ToLabel(ConversionFailure r) {
  for (const ConversionFailureLabel& l : kConversionFailureLabels)
    if (l.reason == r) return l.label;
  return "";
}

// What failed and where: `field` is the path of the value in the payload
// ("customer.address.zip", "items[2].sku", "attributes[\"color\"]"; "" for
// the payload itself), `message` a sentence that names it, for last_error.
struct ConversionError {
  ConversionFailure reason = ConversionFailure::kNone;
  std::string field;
  std::string message;
};

}  // namespace outbox
