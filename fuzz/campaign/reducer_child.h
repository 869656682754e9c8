// The reducer's side of a supervised child (fuzz/campaign/reducer_supervisor.h), shared
// by `divfuzz repro` and `divfuzz minimize`: every run and kept candidate is
// reported to the supervisor, and what an earlier child of the same finding
// kept carries over.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "fuzz/campaign/reducer_supervisor.h"
#include "graph/program.h"
#include "minimize/reducer.h"

namespace divfuzz::fuzz {

// Hooks `options` to `child` and applies `resume` (its signature, tier and
// skipped candidates). Returns the smallest program the earlier child kept
// (nullopt when there is none), or an error naming `path` when it does not
// parse.
absl::StatusOr<std::optional<graph::Program>> AttachToSupervisor(const ReproChild& child,
                                                                 const ReproResume* resume,
                                                                 const std::string& path,
                                                                 minimize::ReduceOptions* options);

}  // namespace divfuzz::fuzz
