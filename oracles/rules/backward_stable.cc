// backward_stable: elementwise ops at an ill-conditioned point.
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html):
// "floating point provides limited accuracy (about 7 decimal digits
// for single precision floating point numbers, about 16 decimal digits for
// double precision floating point numbers)": an input is known to that accuracy only.
#include "oracles/rules/rule.h"

#include <ATen/ops/all.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_or.h>

#include <optional>
#include <vector>

#include "exec/exact_reference.h"
#include "exec/target.h"
#include "exec/witnesses.h"
#include "oracles/attribution.h"

namespace divfuzz::oracles::rules {

using graph::DType;

// An elementwise op at an ill-conditioned point: the blamed side's value is
// the op's float64 value at inputs within one eps of its own (its rounding
// is what any backward-stable kernel may do; cancellation amplifies it).
std::optional<RuleMatch> backward_stable(const Context& c) {
  if (c.d.cls != DivergenceClass::kTolerance) return std::nullopt;
  const uint32_t not_elementwise = ops::kSumsInside | ops::kTransform | ops::kConditioned |
                                   ops::kDecomposition | ops::kScanCarry | ops::kProductReduction |
                                   ops::kCancellingReduction | ops::kCancellingMatmul |
                                   ops::kIndicesOutput | ops::kNormalizes | ops::kInfoGated;
  const bool elementwise = c.spec.rule == ops::Rule::kUnary || c.spec.rule == ops::Rule::kBinary ||
                           c.spec.rule == ops::Rule::kUnaryScalar ||
                           (c.spec.rule == ops::Rule::kGeneric && !(c.spec.hints & not_elementwise));
  // Ops with an exact witness are judged against it: IEEE arithmetic must be
  // correctly rounded, and the library functions are accurate to a few ulps
  // of the result whatever their conditioning.
  // (Where the exact witness decided: some, like polygamma's, know only a few points.)
  // A recurrence's exact value (the orthogonal polynomials) is no such
  // promise: near a root its rounding is amplified in every correct kernel.
  if (!elementwise || c.d.wrong_side == "undecided" ||
      (c.d.witness == "exact" && !exec::ExactUpToBackwardError(c.spec.exact))) {
    return std::nullopt;
  }
  std::vector<const exec::RunResult*> blamed;
  if (c.d.wrong_side == "both" || c.d.wrong_side == exec::TargetName(c.a.target)) blamed.push_back(&c.a);
  if (c.d.wrong_side == "both" || c.d.wrong_side == exec::TargetName(c.b.target)) blamed.push_back(&c.b);
  if (blamed.empty()) return std::nullopt;
  for (const exec::RunResult* run : blamed) {
    const at::Tensor got = F64(Context::Output(*run, c.d.node_index, c.d.output_index));
    const exec::RunResult& other = run == &c.a ? c.b : c.a;
    const at::Tensor theirs = F64(Context::Output(other, c.d.node_index, c.d.output_index));
    if (!got.defined() || !theirs.defined() || got.sizes() != theirs.sizes() || got.is_complex()) {
      return std::nullopt;
    }
    // Every corner of the box x (1 +- 4 eps): a few roundings inside the
    // kernel (pi x, a reflection) move its argument by a few eps, the
    // backward error allowed.
    const auto box = exec::InputBoxWitness(
        c.node, NodeInputs(c.program, c.d.node_index, *run), c.types,
        static_cast<size_t>(c.d.output_index), [](DType dt) { return 4 * graph::Epsilon(dt); });
    if (!box || box->first.sizes() != got.sizes()) return std::nullopt;
    const at::Tensor& lo = box->first;
    const at::Tensor& hi = box->second;
    const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
    const at::Tensor differs = got.sub(theirs).abs().gt(theirs.abs().mul(tol.rtol).add(tol.atol));
    const at::Tensor slack = got.abs().mul(tol.rtol).add(tol.atol);
    const at::Tensor inside = at::logical_and(got.ge(lo.sub(slack)), got.le(hi.add(slack)));
    if (!at::all(at::logical_or(differs.logical_not(), inside)).item<bool>()) return std::nullopt;
  }
  return RuleMatch{"backward_stable",
                   "the blamed value is the op's float64 value at inputs within 4 eps of its "
                   "own: an ill-conditioned point amplifies the kernel's own rounding"};
}

}  // namespace divfuzz::oracles::rules
