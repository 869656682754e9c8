// libFuzzer's entry points. Linked into graph_fuzzer (libFuzzer's main) and
// into the divfuzz tool (LLVMFuzzerRunDriver), which find them by name.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "fuzz/harness/harness.h"

namespace {

// OSS-Fuzz and ClusterFuzz run a fuzz target with no environment of ours:
// `<binary>.env` beside it (.clusterfuzzlite/build.sh writes one) sets
// DIVFUZZ_* variables not already set, one NAME=VALUE a line; a relative
// DIVFUZZ_BASELINE is relative to the binary's folder.
void LoadEnvBesideBinary(const char* argv0) {
  if (argv0 == nullptr) return;
  const std::string binary = argv0;
  std::ifstream in(binary + ".env");
  const size_t slash = binary.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : binary.substr(0, slash);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (line.rfind("DIVFUZZ_", 0) != 0 || eq == std::string::npos) continue;
    const std::string name = line.substr(0, eq);
    std::string value = line.substr(eq + 1);
    if (name == "DIVFUZZ_BASELINE" && !value.empty() && value[0] != '/') {
      value = folder + "/" + value;
    }
    setenv(name.c_str(), value.c_str(), /*overwrite=*/0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  if (argc != nullptr && *argc > 0 && argv != nullptr) LoadEnvBesideBinary((*argv)[0]);
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
