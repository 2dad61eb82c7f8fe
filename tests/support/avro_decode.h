#pragma once

// What Debian's python3-avro reads from an Avro value: the independent
// reader the schema tests judge the relay's Avro by
// (tests/schema/decode_avro.py). Needs OUTBOX_SOURCE_DIR defined.

#include <nlohmann/json.hpp>
#include <string>

namespace outbox::testing {

// `value` in the wire format (magic byte, schema id, Avro body) decoded by
// `schema_text`, as JSON; a failed decode fails the calling test case with
// python's error.
nlohmann::json DecodeAvroWithPython(const std::string& schema_text, const std::string& value);

}  // namespace outbox::testing
