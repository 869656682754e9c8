// gradient_accumulation_overflow: PyTorch's numerical-accuracy notes,
// "Extremal values": where an intermediate overflows the dtype, the end
// result may overflow though it is representable. The autograd engine sums
// the gradients a value receives from its uses (InputBuffer::add) in the
// value's dtype, before the value's own backward scales them down: a
// hardsigmoid f32 output used twice with a cotangent of 3.0e38 each sums to
// inf, then to inf/6 though the exact gradient is 1.0e38 (session 36,
// s36d's 06e52422, judged expected). A side is excused at an element where
// it is not finite, each of its contributions there is, and the sum of its
// contributions of that sign overflows the dtype (some order of the sum
// does). A sum that is non-finite with contributions whose partial sums all
// fit stays a finding, as does any difference at elements where both sides
// are finite.
#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "exec/dtype_convert.h"
#include "graph/printer.h"
#include "oracles/compare.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {
namespace {

// Per element of one side's sum: non-finite where every contribution is
// finite and its positive or negative contributions sum past the range of
// the side's own dtype. Undefined when it cannot be told (complex, shapes).
at::Tensor OverflowedHere(const GradientSide& s) {
  if (!s.outgoing.defined() || s.outgoing.is_complex() || s.contributions.size() < 2) {
    return at::Tensor();
  }
  // A float64 sum too: its positive terms summed in float64 overflow where
  // float64's range is the dtype's (session 43's dc9e1413: 1.8e308 + 8.2e306
  // first, then -8.2e306, on CUDA; judged expected).
  const c10::ScalarType st = s.outgoing.scalar_type();
  at::Tensor pos = at::zeros(s.outgoing.sizes(), at::kDouble);
  at::Tensor neg = at::zeros_like(pos);
  at::Tensor finite = at::ones(s.outgoing.sizes(), at::kBool);
  for (const at::Tensor& t : s.contributions) {
    if (!t.defined() || t.is_complex() || t.sizes() != s.outgoing.sizes()) return at::Tensor();
    const at::Tensor x = t.to(at::kDouble);
    finite &= at::isfinite(x);
    pos += x.clamp_min(0), neg -= x.clamp_max(0);
  }
  const at::Tensor past = at::isinf(exec::ToDTypeKeepingNaNs(pos, st)) |
                          at::isinf(exec::ToDTypeKeepingNaNs(neg, st));
  return (~at::isfinite(s.outgoing)) & finite & past;
}

}  // namespace

std::optional<RuleMatch> gradient_accumulation_overflow(const GradientContext& c) {
  if (!c.accumulation || c.d.cls != DivergenceClass::kClassSplit) return std::nullopt;
  const at::Tensor ia = c.a.outgoing.reshape(-1), ib = c.b.outgoing.reshape(-1);
  if (ia.sizes() != ib.sizes() || ia.is_complex() || ib.is_complex()) return std::nullopt;
  const at::Tensor oa = OverflowedHere(c.a), ob = OverflowedHere(c.b);
  at::Tensor excused = at::zeros(ia.sizes(), at::kBool);
  if (oa.defined()) excused |= oa.reshape(-1);
  if (ob.defined()) excused |= ob.reshape(-1);
  // Every element where the classes part must be one an overflow explains.
  const at::Tensor split = at::isfinite(ia.to(at::kDouble)) != at::isfinite(ib.to(at::kDouble));
  if (!split.any().item<bool>() || (split & ~excused).any().item<bool>()) return std::nullopt;
  // Elsewhere the sums agree within tolerance (compared in the dtype: one
  // side may hold float64).
  const at::Tensor rest = ~split;
  const c10::ScalarType st = ia.scalar_type() == at::kDouble ? ib.scalar_type() : ia.scalar_type();
  if (rest.any().item<bool>() &&
      CompareTensors(exec::ToDTypeKeepingNaNs(ia.masked_select(rest), st),
                     exec::ToDTypeKeepingNaNs(ib.masked_select(rest), st), c.dtype,
                     c.policy.For(c.node.QualifiedName(), c.dtype))) {
    return std::nullopt;
  }
  const long long e = split.nonzero().reshape(-1)[0].item<int64_t>();
  const GradientSide& over = (oa.defined() && oa.reshape(-1)[e].item<bool>()) ? c.a : c.b;
  std::string terms;
  for (const at::Tensor& t : over.contributions) {
    absl::StrAppend(&terms, terms.empty() ? "" : " + ",
                    graph::FormatFloat(t.reshape(-1)[e].to(at::kDouble).item<double>()));
  }
  return RuleMatch{"gradient_accumulation_overflow",
                   absl::StrCat("the autograd engine sums the gradients of %", c.wrt, "'s ",
                                over.contributions.size(), " uses in ", std::string(graph::DTypeName(c.dtype)),
                                ": at element ", e, " ", terms, " overflows its range, though "
                                "each term fits (numerical-accuracy notes, 'Extremal values')")};
}

}  // namespace divfuzz::oracles::rules
