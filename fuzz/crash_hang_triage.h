// The bucket of a finding that hangs or crashes a node. The harness files a
// CUDA fault before it aborts, and the campaign files the crash artifact that
// abort leaves: both go through here, so they share one signature and bucket.
#pragma once

#include <string>

#include "graph/program.h"
#include "ops/infer.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {

// `kind` is "hang" or "crash"; `op` the node's qualified op ("" when unknown:
// "<unknown>"), `target` the side it failed on ("": undecided). The dtype is
// that of the node's first result when `types` knows it. Detail: node,
// cuda_fault and a summary that says whether it recurred. `input_trigger` is
// what `divfuzz locate` saw in the node's inputs (oracles::TensorsTrigger;
// "" when unknown); a program input the node reads directly is checked here.
// Tier: divergence when it did not recur; expected where a policy rule
// covers the inputs (nonfinite_inputs, float_to_int_casts, extremal_values).
store::FindingHit FailureHit(const graph::Program& program, const ops::TypeEnv* types, int node,
                             const std::string& op, const std::string& kind,
                             const std::string& target, bool cuda_fault, bool reproduced,
                             const std::string& input_trigger = "");

}  // namespace divfuzz::fuzz
