// gradient_scalar_rounding: a backward formula may derive a Scalar from the
// op's Scalar argument and hand it to a kernel that rounds it to the dtype:
// pow's backward is grad·exp·self.pow(exp - 1), and its kernels read exp - 1
// (0.79 from 1.79) as a float32 (session 42's PowBackward0: CUDA and the
// CPU's vectorized path both gave 18 ulps at x = 1.7e38, the exponent's
// rounding times ln x = 88; the float64 backward keeps 0.79 exact). Eager
// PyTorch rounds Scalars to the tensor's dtype on such paths, as the
// forward's scalar_rounding rule reads it. So each side within the float64
// backward at the op's floating Scalar arguments moved by one ulp of the
// dtype at max(|a|, 1) each way (a derived a - 1 rounds within that), its
// inputs and incoming gradients as given, plus atol, is expected.
#include <ATen/ATen.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "ops/catalogue.h"
#include "ops/infer.h"
#include "oracles/compare.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {

std::optional<RuleMatch> gradient_scalar_rounding(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kTolerance || c.accumulation) return std::nullopt;
  // A step inside a statement reads its inner node's arguments from the
  // registry, not from a copy: first-order backwards only.
  if (exec::VjpInner(c.node) != nullptr) return std::nullopt;
  if (c.dtype != graph::DType::kF32 && c.dtype != graph::DType::kF16 &&
      c.dtype != graph::DType::kBF16) {
    return std::nullopt;
  }
  const ops::OpSpec* spec = ops::FindOp(c.node.QualifiedName());
  if (spec == nullptr || spec->derived_scalar.pos < 0) return std::nullopt;
  const graph::Literal* given =
      ops::FindArg(c.node, static_cast<size_t>(spec->derived_scalar.pos), spec->derived_scalar.name);
  if (given == nullptr || given->kind != graph::Literal::Kind::kFloat || !std::isfinite(given->f)) {
    return std::nullopt;
  }
  size_t arg = 0;  // its slot, to move it in a copy of the node
  while (arg < c.node.args.size() && &c.node.args[arg].value != given) ++arg;
  if (arg == c.node.args.size()) return std::nullopt;
  const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
  const at::Tensor differing = DifferingElements(c.a.outgoing, c.b.outgoing, c.dtype, tol);
  const double eps = graph::Epsilon(c.dtype);
  for (const GradientSide* s : {&c.a, &c.b}) {
    if (!s->witness.defined() || s->witness.is_complex() || !s->outgoing.defined()) {
      return std::nullopt;
    }
    at::Tensor lo = s->witness.to(at::kDouble), hi = lo.clone();
    for (double sign : {1.0, -1.0}) {
      graph::Node moved = c.node;
      double& a = moved.args[arg].value.f;
      a += sign * eps * std::max(std::abs(a), std::abs(a - 1));
      exec::VjpResult w = exec::RunNodeVjp(moved, s->inputs, s->incoming, c.types,
                                           exec::Target::kCpuF64, false);
      if (w.result.error || c.out >= w.result.exact.size()) return std::nullopt;
      const at::Tensor g = w.result.exact[c.out].to(at::kDouble);
      if (g.sizes() != lo.sizes()) return std::nullopt;
      lo = at::fmin(lo, g);
      hi = at::fmax(hi, g);
    }
    const at::Tensor v = s->outgoing.to(at::kDouble);
    if (v.sizes() != lo.sizes()) return std::nullopt;
    at::Tensor ok = ((v >= lo - tol.atol) & (v <= hi + tol.atol)).reshape(-1);
    if (differing.defined() && differing.numel() == ok.numel()) {
      ok = ok | differing.logical_not();
    }
    if (!ok.all().item<bool>()) return std::nullopt;
  }
  return RuleMatch{"gradient_scalar_rounding",
                   absl::StrCat("each side's gradient is the float64 backward of ",
                                c.node.QualifiedName(), " with its Scalar argument ",
                                c.node.args[arg].value.f, " within one ulp of ",
                                std::string(graph::DTypeName(c.dtype)), " (its formula's derived "
                                "Scalar, pow's exponent - 1, is rounded to the dtype)")};
}

}  // namespace divfuzz::oracles::rules
