// Structural checks of a Program: what every layer below may assume.
// Op names are not checked against the catalogue here (ops/ does that).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "graph/program.h"

namespace divfuzz::graph {

inline constexpr int kMaxRank = 8;
inline constexpr int64_t kMaxInputElements = int64_t{1} << 24;
inline constexpr int kMaxListDepth = 32;  // nesting of list literals
// Bound on numel * min(m, n) of a matrix payload (singular(), spd() ...).
inline constexpr int64_t kMaxMatrixWork = int64_t{1} << 26;

// SSA (one namespace for inputs and results, defined before use), outputs,
// shapes, payloads against their dtype, and name syntax (so that the printed
// program parses again). Errors are InvalidArgument, "FILE:LINE:COL: ...".
absl::Status ValidateProgram(const Program& program, std::string_view filename = "<input>");

// "FILE:LINE:COL: ", or "FILE: " for a location 0 (built in memory).
std::string LocPrefix(std::string_view filename, SourceLoc loc);

}  // namespace divfuzz::graph
