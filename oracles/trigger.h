// The trigger class of a root's inputs: what is unusual about the values a
// diverging node read, so that buckets with one mechanism group together
// (store/ groups by it) and reports can say it.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "exec/run_result.h"
#include "graph/program.h"
#include "oracles/verdict.h"

namespace divfuzz::oracles {

// "nan", "inf", "int64_range" (a finite float at or beyond 2^63 in magnitude,
// for ops that cast to int64),
// "near_max" (beyond the square root of its dtype's largest value: its square
// overflows), "subnormal", or "ordinary": the first of these present among the
// floating inputs and number literals of d's node, as side `run` had them.
std::string TriggerClass(const graph::Program& program, const exec::RunResult& run,
                         const Divergence& d);

// The same classes over given tensors (`casts`: the op casts them to int64).
std::string TensorsTrigger(const std::vector<at::Tensor>& tensors, bool casts = false);

}  // namespace divfuzz::oracles
