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
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {

std::optional<RuleMatch> gradient_composite_rounding(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kTolerance) return std::nullopt;
  // Three mirrored pairs of draws; random signs reach a fraction of the
  // worst case, hence 4x. A draw does not apply where the op's backward is
  // one kernel.
  const SpreadTest test{6, 4.0, /*nonfinite_passes=*/true, /*keeps_digit=*/false};
  const std::optional<double> worst =
      WithinRoundingSpread(c, test, [&](const GradientSide& s, int k) -> std::optional<at::Tensor> {
        exec::BackwardProbeOptions noise;
        noise.noise_eps = c.ProductEps();
        noise.noise_seed = 17 + k / 2;
        noise.mirror = k % 2 == 1;
        exec::VjpResult w = exec::RunNodeVjp(c.node, s.inputs, s.incoming, c.types,
                                             exec::Target::kCpuF64, false, nullptr, &noise);
        if (w.result.error || c.out >= w.result.exact.size() || w.computing_nodes < 2) {
          return std::nullopt;
        }
        return w.result.exact[c.out];
      });
  if (!worst) return std::nullopt;
  return RuleMatch{
      "gradient_composite_rounding",
      absl::StrCat("the backward of ", c.node.QualifiedName(), " runs through several kernels, "
                   "each rounding its gradient to ", std::string(graph::DTypeName(c.dtype)), " before they "
                   "are summed; each side lies within ", test.factor, "x the spread of its own "
                   "float64 backward with every kernel's output moved by eps (at most ",
                   std::round(*worst * 100) / 100, "x)")};
}

}  // namespace divfuzz::oracles::rules
