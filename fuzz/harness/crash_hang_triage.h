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

// The name prefix of an input a worker on the campaign's MPS server met a
// CUDA fault in (kExitMpsFault): a finding only if it faults again alone.
inline constexpr char kMpsFaultPrefix[] = "mps-fault-";

// Why the artifact at `path`, which replayed alone without hanging or
// crashing (`hung`, `crashed`: what the replay did), is no finding; "" when
// it is one (a crash that did not recur is filed in the divergence tier).
// `on_mps`: its worker ran on the campaign's MPS server.
std::string WhyNotAFinding(const std::string& path, bool hung, bool crashed, bool on_mps);

// Whether the campaign's reducers leave the bucket (an index entry) to
// `divfuzz repro` after the run (campaign/unminimized.txt lists it): a hang
// on the GPU while the workers share the MPS server. Reducers run away from
// the server, and every candidate that still hangs keeps a kernel spinning
// for the timeout in a context of its own, time-sliced against the
// server's: on the H200, 8 workers ran 103-123 programs/s in the last minute
// of a nuclear_norm hang's reduction, and 574/s the moment it ended.
bool ReproWaitsForTheEnd(const nlohmann::json& entry, bool workers_on_mps);

}  // namespace divfuzz::fuzz
