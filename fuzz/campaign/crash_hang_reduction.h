// `divfuzz repro` on a hang or crash finding, the reducer child's side (the
// supervisor's is in reducer_supervisor.h): each candidate runs in this process
// on the failing target, every node announced to the supervisor. A candidate
// that returns is not interesting; one that hangs or crashes ends this
// process, and the supervisor restarts from it when it failed as the finding
// does. A finding not yet confirmed first runs its own program.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "fuzz/campaign/reducer_supervisor.h"
#include "graph/program.h"
#include "minimize/repro.h"

namespace divfuzz::fuzz {

// `signature`: the finding's ("aten::x|f32|hang|cuda"); `node`: the node its
// program fails in. `options` as for minimize::MakeRepro. The files say
// reproduced false when the program ran to its end here.
absl::StatusOr<minimize::ReproFiles> FailureRepro(const graph::Program& program,
                                                  minimize::ReproOptions options,
                                                  const std::string& signature, int node,
                                                  const ReproChild& child,
                                                  const ReproResume* resume);

}  // namespace divfuzz::fuzz
