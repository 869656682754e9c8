// Which side is wrong. Each side's value at the root node is checked against a
// float64 reference of that node computed from the side's own inputs: a side
// that computed its node correctly from slightly different inputs is not
// blamed for rounding it inherited.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "exec/run_result.h"
#include "exec/witnesses.h"
#include "graph/program.h"
#include "ops/infer.h"
#include "oracles/policy.h"
#include "oracles/verdict.h"

namespace divfuzz::oracles {

// The values a run fed into node `node` (program inputs or earlier nodes'
// outputs; float64 ones for the reference target), on the CPU.
std::map<std::string, at::Tensor> NodeInputs(const graph::Program& program, int node,
                                             const exec::RunResult& run);

// The spacing of the dtype's representable numbers at x.
double Ulp(graph::DType dtype, double x);

// A value's error against its reference: in ulps of `dtype` at the reference
// and relative (infinite where the reference is 0 and the value is not).
// Leaves both unset unless both numbers are finite.
void ErrorAgainst(double value, double ref, graph::DType dtype, double* ulp, double* rel);

// Sets d.wrong_side, d.witness, d.reason, d.reference_a/b and the errors in
// ULPs and relative terms. Each side is judged against the witnesses of its
// own inputs (exec/witnesses.h; `plan` replaces PlanFor(a, b) in tests), on
// the elements where the sides differ only. A witness that runs the CPU's own
// algorithm, or two float64 witnesses that disagree, decide nothing.
void Attribute(const graph::Program& program, const ops::TypeEnv& types, const exec::RunResult& a,
               const exec::RunResult& b, const Policy& policy, Divergence& d,
               const exec::WitnessPlan* plan = nullptr);

}  // namespace divfuzz::oracles
