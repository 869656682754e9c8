// divfuzz fuzz: one raw libFuzzer worker (what a campaign supervises), its
// argv handed to libFuzzer as it is.
#include <cstddef>
#include <cstdint>

#include "fuzz/cli/commands.h"

extern "C" int LLVMFuzzerRunDriver(int* argc, char*** argv,
                                   int (*callback)(const uint8_t* data, size_t size));
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace divfuzz::fuzz {

int RunLibFuzzer(int argc, char** argv) {
  return LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput);
}

int RunFuzzWorker(int argc, char** argv) {
  // argv[0] is the tool, argv[1] "fuzz": libFuzzer sees the rest.
  int n = argc - 1;
  char** args = argv + 1;
  args[0] = argv[0];
  return LLVMFuzzerRunDriver(&n, &args, LLVMFuzzerTestOneInput);
}

}  // namespace divfuzz::fuzz
