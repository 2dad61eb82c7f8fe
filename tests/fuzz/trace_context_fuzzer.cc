// libFuzzer entry point; the logic is in fuzz_inputs.cc. Built by scripts/fuzz.
#include "fuzz_inputs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  outbox::fuzz::TraceparentInput(data, size);
  return 0;
}
