// Feedback to libFuzzer through extra counters (section
// __libfuzzer_extra_counters): prebuilt libtorch has no coverage
// instrumentation, and a g++ build has none at all, so these counters are the
// signal. Keyed by (op, dtype, divergence class or "ok"/"error").
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace divfuzz::fuzz {

inline constexpr size_t kNumCounters = 1 << 16;

// When disabled, every bump lands on one fixed counter: libFuzzer still runs
// (it needs a signal) but learns nothing from what a program did.
void SetFeedbackEnabled(bool enabled);

void BumpCounter(absl::string_view op, absl::string_view dtype, absl::string_view outcome);
// How many counters are non-zero now (tests, stats).
size_t NonZeroCounters();
void ClearCounters();

}  // namespace divfuzz::fuzz
