// gradient_formula_rounding: a backward formula built from ATen ops
// (FunctionsManual's i1e_backward, i0e(x) - r·(sgn x + 1/x), differentiated
// again) runs each op in the dtype,
// rounding every intermediate; where the formula cancels, those roundings
// are large against its result, and neither moving the op's inputs (the
// hull of gradient_backward_stable) nor moving each backward node's output
// (gradient_composite_rounding) reproduces them. Session 42's i1e double
// backward (terms of 74 leaving 3.14; CPU 114 ulps, CUDA 50 from the exact)
// was judged expected. Its softmax double backward (exactly 0, both sides
// 1e-3 from 1 - Σy rounded times an incoming 7e6), judged expected too,
// stays out of reach: no digit of an exact 0 is kept, and the guard below
// cannot tell it from a formula that loses the result. So the float64
// backward is rerun with every intermediate moved by eps of the dtype
// (exec/intermediate_rounding.h; random signs per element, in mirrored
// pairs), and each side must lie within four times the largest move that
// makes of its own float64 backward, plus atol; not where that move is
// non-finite or reaches the result itself (no digit kept: a finding, as
// gradient_summation's vacuous bound). logcumsumexp's backward is
// gradient_scan_carry's, which models its formula (its bf16 exponent near
// 100 keeps no digit: judged real in sessions 35-42).
#include <ATen/ATen.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "exec/intermediate_rounding.h"
#include "ops/op_spec.h"
#include "oracles/compare.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {

namespace {

constexpr int kDraws = 6;        // three mirrored pairs
constexpr double kFactor = 4.0;  // random signs reach a fraction of the worst case

// The largest move of one side's float64 backward when every intermediate of
// its formulas is moved by eps; nullopt when no intermediate was moved or a
// draw cannot run.
std::optional<at::Tensor> Spread(const GradientContext& c, const GradientSide& s) {
  const at::Tensor base = s.witness.to(at::kDouble);
  at::Tensor spread = at::zeros_like(base);
  for (int k = 0; k < kDraws; ++k) {
    exec::VjpResult w;
    int64_t moved = 0;
    {
      exec::IntermediateRounding rounding(c.ProductEps(), 29 + k / 2, k % 2 == 1);
      w = exec::RunNodeVjp(c.node, s.inputs, s.incoming, c.types, exec::Target::kCpuF64, false);
      moved = rounding.moved();
    }
    if (w.result.error || c.out >= w.result.exact.size() || moved == 0) return std::nullopt;
    const at::Tensor g = w.result.exact[c.out].to(at::kDouble);
    if (g.sizes() != base.sizes()) return std::nullopt;
    spread = at::fmax(spread, (g - base).abs());
  }
  return spread;
}

}  // namespace

std::optional<RuleMatch> gradient_formula_rounding(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kTolerance || c.accumulation) return std::nullopt;
  if ((c.hints & ops::kScanCarry) && c.d.op.rfind("LogcumsumexpBackward", 0) == 0) {
    return std::nullopt;
  }
  for (const GradientSide* s : {&c.a, &c.b}) {
    if (!s->witness.defined() || s->witness.is_complex() || !s->outgoing.defined()) {
      return std::nullopt;
    }
  }
  const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
  const at::Tensor differing = DifferingElements(c.a.outgoing, c.b.outgoing, c.dtype, tol);
  double worst = 0;  // the largest distance, in units of the spread, for the reason
  for (const GradientSide* s : {&c.a, &c.b}) {
    std::optional<at::Tensor> spread = Spread(c, *s);
    if (!spread) return std::nullopt;
    const at::Tensor off = (s->outgoing.to(at::kDouble) - s->witness.to(at::kDouble)).abs();
    if (off.sizes() != spread->sizes()) return std::nullopt;
    at::Tensor judged = at::ones_like(off, at::kBool).reshape(-1);
    if (differing.defined() && differing.numel() == judged.numel()) judged = differing;
    // A move that leaves the formula's value undetermined (a non-finite
    // spread: matrix_exp's squaring count read off a moved norm) bounds
    // nothing.
    if (!(at::isfinite(*spread).reshape(-1) | judged.logical_not()).all().item<bool>()) {
      return std::nullopt;
    }
    // Nor does one that keeps no digit of the result (session 37's CPU
    // matrix_exp backward, 5x off and judged real: moved intermediates reach
    // 8e26 against 5e8): as gradient_summation's 2·n·eps >= 1.
    const at::Tensor digitless = (*spread * kFactor >= s->witness.to(at::kDouble).abs()).reshape(-1);
    if ((digitless & judged).any().item<bool>()) return std::nullopt;
    at::Tensor ok = (off <= *spread * kFactor + tol.atol).reshape(-1);
    if (!(ok | judged.logical_not()).all().item<bool>()) return std::nullopt;
    const at::Tensor ratio = (off / (*spread + 1e-300)).reshape(-1).masked_select(
        judged & at::isfinite(off).reshape(-1));
    if (ratio.numel() > 0) worst = std::max(worst, ratio.max().item<double>());
  }
  return RuleMatch{
      "gradient_formula_rounding",
      absl::StrCat("the backward of ", c.node.QualifiedName(), " is a formula of ATen ops, each "
                   "rounding its result to ", std::string(graph::DTypeName(c.dtype)),
                   "; each side lies within ", kFactor, "x the spread of its own float64 "
                   "backward with every intermediate moved by eps (at most ",
                   std::round(worst * 100) / 100, "x)")};
}

}  // namespace divfuzz::oracles::rules
