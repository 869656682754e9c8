// The witnesses of one node: every reference the oracle judges a side
// against, computed here from that side's own inputs, so the oracle only
// compares (and the witnesses, their cost and their verdicts show in one
// place). In order of authority:
//   exact             MPFR / exact rationals (exec/exact_reference.h): decides alone
//   cpu-f64           the node in float64 on the CPU (the classic reference)
//   cuda-f64 or       a second float64 implementation: with a CUDA side, the node in
//   cpu-scalar-f64    float64 on the GPU; on a cpu vs cpu-scalar pair, ATen's scalar
//                     kernels in float64. Where the two float64 witnesses disagree,
//                     float64 cannot decide
//   *-scalars-rounded the exact or cpu-f64 witness with number literals rounded to the
//                     tensor's dtype first (eager PyTorch's scalar semantics on some paths)
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "exec/run_result.h"
#include "exec/target.h"
#include "graph/program.h"
#include "ops/infer.h"

namespace divfuzz::exec {

struct Witness {
  enum class Kind { kExact, kF64, kSecondF64, kScalarsRounded };
  Kind kind = Kind::kF64;
  std::string name;    // "exact", "cpu-f64", "cuda-f64", "cpu-scalar-f64", "exact-scalars-rounded"
  NodeResult result;   // outputs rounded to the node's dtypes; exact: float64 where known
  bool rounding_free = false;  // exact witness of a small matrix: see ExactResult
  double seconds = 0;  // what computing it cost
};

using NodeRunner = std::function<NodeResult(
    const graph::Node&, const std::map<std::string, at::Tensor>&, const ops::TypeEnv&)>;

struct WitnessPlan {
  // The second float64 witness (kCudaF64 or kCpuScalar); none when unset.
  std::optional<Target> second_f64;
  // Tests: replaces how the second float64 witness runs (a faulty one).
  NodeRunner second_f64_runner;
  bool scalars_rounded = true;
  // The exact witness's elements (ExactOptions::only); set per node by the oracle.
  at::Tensor only;
};

// The plan for a pair: cuda-f64 when either side is CUDA, cpu-scalar-f64 for a
// cpu vs cpu-scalar pair, none otherwise.
WitnessPlan PlanFor(Target a, Target b);

// Every witness of `node` from `inputs` (CPU values as one side had them).
// `dtype` is the diverging output's dtype (scalar rounding applies to it).
std::vector<Witness> NodeWitnesses(const graph::Node& node,
                                   const std::map<std::string, at::Tensor>& inputs,
                                   const ops::TypeEnv& types, graph::DType dtype,
                                   const WitnessPlan& plan);

// Whether the float64 upcast changes the call itself, by the meta kernel
// (shapes, strides and dtypes only): the call as `inputs` have it and the
// same call upcast differ in whether they raise (mixed dtypes that float64
// unifies, a dtype= argument float64 cannot narrow to) or in their outputs'
// shapes (view(dtype=) reinterpreting a wider element). With `error_split`
// (one side raised), also where the call mixes floating dtypes that float64
// unifies: many kernels refuse mixed dtypes where their meta kernel does not
// check (cross, heaviside, masked_scatter). Then no float64 run is the same
// call, and it judges nothing. Likewise where the float64 call raised
// (`f64_error`) naming float64 itself: a type check, not the values. The
// reason, or nullopt.
std::optional<std::string> UpcastChangesCall(const graph::Node& node,
                                             const std::map<std::string, at::Tensor>& inputs,
                                             bool error_split,
                                             const std::optional<std::string>& f64_error);

// Witnesses of the size of an error rather than of a value; the rules'
// bounds are computed here so the oracle only compares.

// For an op whose argument x holds sample points (kSpacingDifferences:
// trapezoid): x's name and points spaced by |diff(x)| from 0, in float64,
// which make the op over |inputs| sum |terms| rather than telescope.
std::optional<std::pair<std::string, at::Tensor>> AbsSpacing(
    const graph::Node& node, const std::map<std::string, at::Tensor>& inputs);

// sum|terms| for an op that sums: the node in float64 over |inputs|, output
// `output`. Undefined when the node raises there or returns another shape.
at::Tensor AbsTermsWitness(const graph::Node& node, const std::map<std::string, at::Tensor>& inputs,
                           const ops::TypeEnv& types, size_t output);

// The hull [lo, hi] of output `output` in float64 over every corner of the
// box input * (1 +- rel) for the first three floating inputs (each clamped to
// its dtype's range; rel per input from `rel_of` its dtype): what a
// backward-stable kernel may return. nullopt where a corner raises.
std::optional<std::pair<at::Tensor, at::Tensor>> InputBoxWitness(
    const graph::Node& node, const std::map<std::string, at::Tensor>& inputs,
    const ops::TypeEnv& types, size_t output, const std::function<double(graph::DType)>& rel_of);

}  // namespace divfuzz::exec
