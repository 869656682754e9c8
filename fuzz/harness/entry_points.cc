// libFuzzer's entry points. Linked into graph_fuzzer (libFuzzer's main) and
// into the divfuzz tool (LLVMFuzzerRunDriver), which find them by name.
#include <cstddef>
#include <cstdint>

#include "fuzz/harness/harness.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  divfuzz::fuzz::GlobalHarness();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return divfuzz::fuzz::GlobalHarness().TestOneInput(data, size);
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  return divfuzz::fuzz::GlobalHarness().Mutate(data, size, max_size, seed);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1,
                                            const uint8_t* data2, size_t size2, uint8_t* out,
                                            size_t max_out_size, unsigned int seed) {
  return divfuzz::fuzz::GlobalHarness().CrossOver(data1, size1, data2, size2, out, max_out_size,
                                                  seed);
}
