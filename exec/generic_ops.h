// The generic path's libtorch half: enumerates the functional ATen ops of the
// c10 dispatcher as ops::GenericOp candidates and infers a generic node's
// output types by running it on the Meta device (shapes and dtypes, no data).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "graph/program.h"
#include "ops/generic.h"

namespace divfuzz::exec {

// Every dispatcher op that is functional (no out=, in-place or mutable
// alias), deterministic (no Generator, no random sampling), takes at least
// one tensor, returns only tensors, and whose required arguments divfuzz can
// express. Not filtered by the learned table.
std::vector<ops::GenericOp> EnumerateGenericOps();

// Output types of a node, from its schema run on Meta tensors.
absl::StatusOr<std::vector<graph::TensorType>> InferOnMeta(const graph::Node& node,
                                                           const ops::TypeEnv& env);

// Installs both into ops/ (idempotent). Runs before main() from executor.cc,
// so every binary that can execute a program can also type generic ops.
void InstallGenericOps();

}  // namespace divfuzz::exec
