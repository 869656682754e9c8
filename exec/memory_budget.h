// A memory budget for programs: absurd shapes (an outer product of two long
// vectors, a huge broadcast) are rejected with a clear message before any
// tensor is allocated, instead of exhausting the host or the GPU.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "graph/program.h"
#include "ops/infer.h"

namespace divfuzz::exec {

// Default budget for one program's tensors (every input and every node
// result, counted at float64 width since the cpu-f64 target upcasts).
inline constexpr int64_t kDefaultMemoryBudgetMb = 2048;

// Bytes the program's tensors take at float64 width (complex: 16 bytes).
int64_t FootprintBytes(const ops::TypeEnv& types);

// OK when the footprint is within budget_mb; else an error naming the file,
// the line of the largest value and both sizes in MiB.
absl::Status CheckMemoryBudget(const graph::Program& program, const ops::TypeEnv& types,
                               int64_t budget_mb, absl::string_view filename = "<input>");

}  // namespace divfuzz::exec
