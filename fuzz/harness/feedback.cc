#include "fuzz/harness/feedback.h"

#include "absl/strings/string_view.h"
#include "graph/stable_hash.h"

// libFuzzer scans this section between __start_/__stop_ symbols; it must be
// 8-byte aligned and is read as uint8_t counters.
__attribute__((section("__libfuzzer_extra_counters"), aligned(8), used))
uint8_t divfuzz_extra_counters[divfuzz::fuzz::kNumCounters];

namespace divfuzz::fuzz {
namespace {
bool feedback_enabled = true;
}  // namespace

void SetFeedbackEnabled(bool enabled) { feedback_enabled = enabled; }

void BumpCounter(absl::string_view op, absl::string_view dtype, absl::string_view outcome) {
  // absl::Hash is seeded per process; counters must mean the same thing in
  // every worker and run, so hash with a fixed function.
  if (!feedback_enabled) {
    divfuzz_extra_counters[0] = 1;
    return;
  }
  uint64_t h = graph::kFuzzHashBasis;
  for (absl::string_view part :
       {op, absl::string_view("|"), dtype, absl::string_view("|"), outcome}) {
    h = graph::Fnv1a64(part.data(), part.size(), h);
  }
  // Set, not counted: libFuzzer buckets counter values (1, 2, 3, 4-7, ...),
  // so counting would reward a program for repeating an op it already has,
  // and the corpus would drift to ever larger, slower programs.
  divfuzz_extra_counters[h % kNumCounters] = 1;
}

size_t NonZeroCounters() {
  size_t n = 0;
  for (uint8_t c : divfuzz_extra_counters) n += c != 0;
  return n;
}

void ClearCounters() {
  for (uint8_t& c : divfuzz_extra_counters) c = 0;
}

}  // namespace divfuzz::fuzz
