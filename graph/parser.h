// The .dfz text format -> Program. See docs/FORMAT.md (the grammar) and
// docs/DESIGN.md ("The program text format").
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "graph/program.h"

namespace divfuzz::graph {

// Parses and validates (ValidateProgram) a program. Any byte string is safe
// input. Errors are InvalidArgument with a message of the form
// "FILE:LINE:COL: expected X, got Y".
absl::StatusOr<Program> ParseProgram(std::string_view text, std::string_view filename = "<input>");

}  // namespace divfuzz::graph
