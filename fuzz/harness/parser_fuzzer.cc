// parser_fuzzer: any bytes through the .dfz parser. Checks that parsing never
// crashes, that errors are well-formed, and that printing is a fixed point:
// print(parse(print(p))) == print(p) and parse(print(p)) == p bit for bit.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>

#include "graph/materialize.h"
#include "graph/parser.h"
#include "graph/printer.h"

namespace {

// libFuzzer's extra counters: the only coverage signal in builds without
// -fsanitize=fuzzer (g++ with the runtime archive), where libFuzzer exits
// unless some input sets a feature. Under clang they add a little more.
__attribute__((used, section("__libfuzzer_extra_counters"), aligned(8))) uint8_t extra_counters[64];

void Count(size_t bucket) { extra_counters[bucket % sizeof(extra_counters)] = 1; }

size_t Log2Bucket(size_t n) {
  size_t b = 0;
  while (n > 1 && b < 7) n >>= 1, ++b;
  return b;
}

[[noreturn]] void Fail(const char* what, std::string_view a, std::string_view b = {}) {
  std::fprintf(stderr, "parser_fuzzer: %s\n--- first\n%.*s\n--- second\n%.*s\n", what,
               static_cast<int>(a.size()), a.data(), static_cast<int>(b.size()), b.data());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace divfuzz::graph;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto program = ParseProgram(text, "in.dfz");
  if (!program.ok()) {
    const std::string message(program.status().message());
    if (!absl::IsInvalidArgument(program.status()) || message.substr(0, 7) != "in.dfz:") {
      Fail("malformed error", program.status().ToString());
    }
    // One feature per kind of error: a hash of what was expected.
    size_t start = message.find(": ");
    size_t end = message.find(", got");
    std::string_view kind =
        std::string_view(message).substr(start + 2, end == message.npos ? 24 : end - start);
    Count(8 + std::hash<std::string_view>()(kind) % 16);
    return 0;
  }
  Count(0);
  Count(24 + Log2Bucket(program->inputs.size()));
  Count(32 + Log2Bucket(program->nodes.size()));
  for (const Input& input : program->inputs) {
    Count(40 + static_cast<size_t>(input.payload.kind));
    Count(48 + static_cast<size_t>(input.type.dtype));
    // Small inputs only: the generators must not trip the sanitizers either.
    if (input.type.Numel() <= 4096 && MaterializePayload(input).empty() && input.type.Numel() > 0) {
      Fail("empty materialization", input.name);
    }
  }
  const std::string printed = PrintProgram(*program);
  auto reparsed = ParseProgram(printed, "printed.dfz");
  if (!reparsed.ok()) Fail("printed program does not parse", printed, reparsed.status().ToString());
  const std::string reprinted = PrintProgram(*reparsed);
  if (reprinted != printed) Fail("printing is not stable", printed, reprinted);
  if (*reparsed != *program) Fail("round trip changed the program", text, printed);
  return 0;
}
