// The exact witness: a node evaluated without rounding error, independent of
// every kernel under test. Elementwise math runs in MPFR at 160 bits and is
// rounded once to the result dtype (correctly rounded but for a tie within
// 2^-160); small determinants run in exact rational arithmetic (GMP). Which
// ops have one is a catalogue fact (OpSpec::exact, ops/kernel_classes.cc).
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

#include "exec/run_result.h"
#include "graph/program.h"
#include "ops/infer.h"

namespace divfuzz::exec {

// The working precision of MPFR's elementwise witnesses, in bits.
inline constexpr int kExactBits = 160;

struct ExactResult {
  NodeResult result;  // outputs rounded to the node's result dtypes; exact: float64
  // Small matrices: every intermediate of Gaussian elimination with partial
  // pivoting is representable in the input dtype, including the reciprocal of
  // each pivot that scales a nonzero column (LAPACK's getf2 multiplies by it),
  // so such an algorithm in that dtype computes the exact answer: rounding
  // cannot excuse a difference.
  bool rounding_free = false;
};

struct ExactOptions {
  // Round number literals (Python scalars) to the tensor's dtype first, as
  // eager PyTorch does on some paths: the scalar-semantics variant.
  bool round_scalars = false;
  // Elementwise ops: evaluate only where this flat bool mask over the output
  // is true (the elements where the sides differ; MPFR costs microseconds an
  // element) and leave NaN elsewhere. Undefined: every element.
  at::Tensor only;
  // Elementwise ops: the derivative of the result with respect to the value
  // of this name (every operand that reads it moves together) instead of the
  // result, by central differences in MPFR at h = 2^-64 and 2^-72 relative to
  // |x| (absolute where relative fails): kept only where the two quotients
  // agree to 2^-40 relative, NaN elsewhere (a kink, a pole, a jump: unknown).
  // nullopt when the value is broadcast (its gradient would be a sum).
  std::string derivative_wrt;
};

// nullopt when the op has no exact reference or these inputs are outside it
// (complex or 64-bit integer inputs, an argument it does not model, a matrix
// larger than 8x8 or with non-finite entries).
std::optional<ExactResult> RunExact(const graph::Node& node,
                                    const std::map<std::string, at::Tensor>& values,
                                    const ops::TypeEnv& types, const ExactOptions& options = {});

// The exact vector-Jacobian product of `node`: the gradient of sum(v * y),
// v the incoming gradient of its result, with respect to its input `wrt`,
// from the values it read, for ops whose catalogue entry names one
// (OpSpec::exact_vjp, ops/kernel_classes.cc). Float64 over the input; NaN
// where it declines (a row holding a non-finite value). nullopt when the op
// has none or the node is outside it (complex values, another input, more
// elements than the witness evaluates). `saved`: the node's result as the
// side's forward saved it (rounded to its dtype), which its backward reads:
// then the exact backward from those saved values, so the forward's own
// rounding is not charged to the backward kernel.
std::optional<at::Tensor> RunExactVjp(const graph::Node& node,
                                      const std::map<std::string, at::Tensor>& values,
                                      const at::Tensor& incoming, const std::string& wrt,
                                      const at::Tensor& saved = at::Tensor());

// How the exact reference named `exact_name` (OpSpec::exact) computes, for
// verdicts' reasons ("the polynomial's three-term recurrence ... in MPFR");
// empty for plain MPFR functions and exact rationals.
std::string ExactMethod(absl::string_view exact_name);

// Whether the exact reference named `exact_name` evaluates a function
// PyTorch computes by a documented algorithm (the orthogonal polynomials'
// recurrence) whose rounding an ill-conditioned point (near a root)
// amplifies in every correct kernel: a kernel within backward error of it is
// right (oracles/rules/backward_stable.cc).
bool ExactUpToBackwardError(absl::string_view exact_name);

// x rounded to the nearest value of `dtype` (ties to even), as a double.
double RoundToDType(double x, graph::DType dtype);

// Whether `node` has number literals that ExactOptions::round_scalars would
// change for a tensor of `dtype`.
bool HasRoundableScalars(const graph::Node& node, graph::DType dtype);

}  // namespace divfuzz::exec
