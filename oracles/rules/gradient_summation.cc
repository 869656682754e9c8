// gradient_summation: a backward kernel sums its terms (the backward of a
// reduction, a matrix product, a convolution, pooling or a broadcast sums
// the incoming gradient): PyTorch's numerical-accuracy notes, "floating point
// ... is not associative, so the order of the operations affects the
// results": the sides may differ by the summation-order bound 2·n·eps·sum|terms|.
#include <ATen/ATen.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {

std::optional<RuleMatch> gradient_summation(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kTolerance) return std::nullopt;
  // sum|terms|: the float64 backward of |inputs| with |incoming|.
  std::map<std::string, at::Tensor> inputs = c.a.inputs;
  for (auto& [name, t] : inputs) {
    if (t.defined() && (t.is_floating_point() || t.is_complex())) t = t.abs();
  }
  std::vector<at::Tensor> incoming = c.a.incoming;
  int64_t n = 1;
  for (at::Tensor& t : incoming) {
    if (!t.defined()) continue;
    // An elementwise op's backward sums only what broadcasting folded into
    // one element (sum_to_size), plus the few roundings of its formula.
    const int64_t terms = c.pointwise ? (t.numel() + std::max<int64_t>(1, c.a.outgoing.numel()) - 1) /
                                            std::max<int64_t>(1, c.a.outgoing.numel()) + 4
                                      : t.numel();
    n = std::max<int64_t>(n, terms);
    t = t.abs();
  }
  // A node reading one value in several slots (x / x): autograd sums each
  // use's partial, which cancel in the float64 backward of |inputs| too
  // (|x|/|x|'s two partials are +-|g|/|x|), so sum|terms| adds each use's
  // partial apart (session 37's DivBackward0 bf16 of gh / gh, judged
  // expected: -8 from partials of +-1734).
  at::Tensor sum_terms;
  if (std::optional<SplitUses> split = SplitRepeatedUses(c.node, inputs, c.types)) {
    exec::VjpResult parts =
        exec::RunNodeVjp(split->node, split->inputs, incoming, split->types, exec::Target::kCpuF64);
    if (parts.result.error) return std::nullopt;
    std::vector<std::string> names = {c.wrt};
    if (auto it = split->copies.find(c.wrt); it != split->copies.end()) {
      names.insert(names.end(), it->second.begin(), it->second.end());
    }
    for (size_t o = 0; o < parts.wrt.size() && o < parts.result.exact.size(); ++o) {
      if (std::find(names.begin(), names.end(), parts.wrt[o]) == names.end()) continue;
      const at::Tensor t = parts.result.exact[o].abs();
      sum_terms = sum_terms.defined() ? sum_terms + t : t;
    }
    n += static_cast<int64_t>(names.size()) - 1;
  } else {
    exec::VjpResult terms =
        exec::RunNodeVjp(c.node, inputs, incoming, c.types, exec::Target::kCpuF64);
    if (terms.result.error || c.out >= terms.result.exact.size()) return std::nullopt;
    sum_terms = terms.result.exact[c.out].abs();
  }
  if (!sum_terms.defined()) return std::nullopt;
  // The bound holds while n·eps is well below 1 (Higham's gamma_n =
  // n u / (1 - n u)); past that it allows any value of the right sign,
  // a sum that stalled included (session 40's G6: CUDA's bilinear upsample
  // backward atomically adding 143 bf16 terms stopped at 128 where the exact
  // sum is 143, pytorch#104157; the rubric calls accumulating in bf16 until
  // the sum saturates real). The terms a judged element sums are the
  // nonzeros of its derivative with respect to the incoming gradients (the
  // backward is linear in them).
  if (!c.pointwise) {
    for (const ElementDerivative& d : JudgedElementDerivatives(c, c.a)) {
      int64_t terms = 0;
      for (const at::Tensor& t : d.incoming) {
        if (t.defined()) terms += t.ne(0).sum().item<int64_t>();
      }
      if (2.0 * static_cast<double>(terms) * c.ProductEps() >= 1.0) return std::nullopt;
    }
  }
  const at::Tensor bound = sum_terms * (2.0 * static_cast<double>(n) * c.ProductEps());
  const at::Tensor diff = (c.a.outgoing.to(at::kDouble) - c.b.outgoing.to(at::kDouble)).abs();
  if (bound.sizes() != diff.sizes()) return std::nullopt;
  // Where both sides are finite (a tolerance divergence has its non-finite
  // elements in the same class on both sides; their terms may be inf).
  const at::Tensor finite = at::isfinite(c.a.outgoing) & at::isfinite(c.b.outgoing);
  if (!(diff <= bound).logical_or(finite.logical_not()).all().item<bool>()) return std::nullopt;
  return RuleMatch{"gradient_summation",
                   absl::StrCat("the backward of ", c.node.QualifiedName(),
                                " sums its terms: the sides differ within 2·n·eps·sum|terms| (n = ",
                                n, ")")};
}

}  // namespace divfuzz::oracles::rules
