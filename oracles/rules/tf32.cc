// tf32: CUDA running with TF32 / reduced-precision reductions.
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html),
// "TensorFloat-32(TF32) on Nvidia Ampere (and later) devices": "When an
// operation is performed using TF32 tensor cores, only the first 10 bits of
// the input mantissa are read."
#include "oracles/rules/rule.h"

#include <ATen/ATen.h>

#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "exec/witnesses.h"
#include "graph/printer.h"

namespace divfuzz::oracles::rules {

std::optional<RuleMatch> tf32(const Context& c) {
  if (!(c.spec.hints & ops::kTf32Sensitive)) return std::nullopt;
  if (!RanTf32(c.a.target, c.policy) && !RanTf32(c.b.target, c.policy)) return std::nullopt;
  // Each product reads its factors with 10 mantissa bits (2^-11 relative
  // each) and accumulates in float32: the sides may differ by about
  // 2·2^-10·sum|terms|. No wider: a wrong product under TF32 stays a finding.
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || ya.is_complex()) {
    return std::nullopt;
  }
  const at::Tensor terms = exec::AbsTermsWitness(c.node, c.inputs, c.types, c.d.output_index);
  if (!terms.defined() || terms.sizes() != ya.sizes()) return std::nullopt;
  const double u = std::ldexp(1.0, -10);
  const at::Tensor bound = terms * (2 * u) + c.policy.For(c.node.QualifiedName(), c.dtype).atol;
  const at::Tensor finite = at::isfinite(ya) & at::isfinite(yb);
  // A side that overflowed: only where sum|terms| reaches the range with
  // TF32's rounding up.
  const at::Tensor over = terms * (1 + 2 * u) >= graph::MaxFinite(c.dtype);
  const at::Tensor ok = at::where(finite, (ya - yb).abs() <= bound,
                                  over | (ya.eq(yb) | (at::isnan(ya) & at::isnan(yb))));
  if (!ok.all().item<bool>()) return std::nullopt;
  return RuleMatch{"tf32", absl::StrCat("CUDA ran with TF32 (10-bit mantissa inputs): the sides "
                                        "differ within 2·2^-10·sum|terms| of ",
                                        c.node.QualifiedName())};
}

}  // namespace divfuzz::oracles::rules
