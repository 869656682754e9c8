// gradient_composite_rounding: a composite op (cosine_similarity, pairwise
// distance, the losses built from several ATen ops) is differentiated through
// several backward kernels, each rounding its result to the dtype before the
// engine sums the contributions to one input. Where those contributions
// cancel (session 34's cosine_similarity: two terms of 7.5e33 leaving
// 1.9e31), ordinary rounding of each is large against the result, and no
// rule that reads the op's inputs sees it: moving the inputs (the hull of
// gradient_backward_stable) does not move the terms apart. So the float64
// backward is run with every backward node's outputs moved by eps (random
// signs per element, in mirrored pairs), and each side must lie within four
// times the largest move that makes of its own float64 backward. A single
// kernel (sinc's backward) gets no room from this: only its result is moved.
#include <ATen/ATen.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "exec/backward_probe.h"
#include "exec/executor.h"
#include "oracles/compare.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {

namespace {

constexpr int kDraws = 6;        // three mirrored pairs
constexpr double kFactor = 4.0;  // random signs reach a fraction of the worst case

// The largest move of the float64 backward from one side's own inputs when
// every backward node rounds by eps; nullopt when the op's backward is one
// kernel or a draw cannot run.
std::optional<at::Tensor> Spread(const GradientContext& c, const GradientSide& s) {
  const at::Tensor base = s.witness.to(at::kDouble);
  at::Tensor spread = at::zeros_like(base);
  for (int k = 0; k < kDraws; ++k) {
    exec::BackwardProbeOptions noise;
    noise.noise_eps = c.ProductEps();
    noise.noise_seed = 17 + k / 2;
    noise.mirror = k % 2 == 1;
    exec::VjpResult w = exec::RunNodeVjp(c.node, s.inputs, s.incoming, c.types,
                                         exec::Target::kCpuF64, false, nullptr, &noise);
    if (w.result.error || c.out >= w.result.exact.size() || w.computing_nodes < 2) {
      return std::nullopt;
    }
    const at::Tensor g = w.result.exact[c.out].to(at::kDouble);
    if (g.sizes() != base.sizes()) return std::nullopt;
    spread = at::fmax(spread, (g - base).abs());
  }
  return spread;
}

}  // namespace

std::optional<RuleMatch> gradient_composite_rounding(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kTolerance) return std::nullopt;
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
    at::Tensor ok = (off <= *spread * kFactor + tol.atol) | at::isfinite(off).logical_not();
    ok = ok.reshape(-1);
    at::Tensor judged = at::ones_like(ok);
    if (differing.defined() && differing.numel() == ok.numel()) judged = differing;
    if (!(ok | judged.logical_not()).all().item<bool>()) return std::nullopt;
    const at::Tensor ratio = (off / (*spread + 1e-300)).reshape(-1).masked_select(
        judged & at::isfinite(off).reshape(-1));
    if (ratio.numel() > 0) worst = std::max(worst, ratio.max().item<double>());
  }
  return RuleMatch{
      "gradient_composite_rounding",
      absl::StrCat("the backward of ", c.node.QualifiedName(), " runs through several kernels, "
                   "each rounding its gradient to ", std::string(graph::DTypeName(c.dtype)), " before they "
                   "are summed; each side lies within ", kFactor, "x the spread of its own "
                   "float64 backward with every kernel's output moved by eps (at most ",
                   std::round(worst * 100) / 100, "x)")};
}

}  // namespace divfuzz::oracles::rules
