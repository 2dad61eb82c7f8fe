#include "support/avro_decode.h"

#include <catch2/catch.hpp>

#include "support/process.h"

namespace outbox::testing {

nlohmann::json DecodeAvroWithPython(const std::string& schema_text, const std::string& value) {
  TempDir dir;
  const ProcessResult run =
      RunProcess({"/usr/bin/python3", OUTBOX_SOURCE_DIR "/tests/schema/decode_avro.py",
                  dir.Write("schema.avsc", schema_text), dir.Write("value.bin", value)},
                 {"PATH=/usr/bin:/bin"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  return nlohmann::json::parse(run.out);
}

}  // namespace outbox::testing
