// normalization_statistics: normalizations: the statistics' rounding amplified by 1/sigma.
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html):
// "floating point addition and multiplication are not
// associative, so the order of the operations affects the results."
// (the statistics are sums, and 1/sigma amplifies their rounding).
#include "oracles/rules/rule.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "graph/printer.h"
#include "ops/kernel_classes.h"

namespace divfuzz::oracles::rules {

using graph::Literal;

// Normalizations divide by statistics they compute: an error d in the mean
// (at most 2 n eps max|x| in any summation order) moves the output by
// d |w| / sigma, and sigma >= sqrt(eps_arg).
std::optional<RuleMatch> normalization_statistics(const Context& c) {
  if (!(c.spec.hints & ops::kNormalizes) || c.d.cls != DivergenceClass::kTolerance) {
    return std::nullopt;
  }
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  const at::Tensor x = c.Input(0);
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || !x.defined() ||
      !at::isFloatingType(x.scalar_type())) {
    return std::nullopt;
  }
  // Over finite values: a NaN in one channel (its outputs NaN on both sides)
  // made every bound NaN, and a CPU rounding in another channel a bug (H100).
  double w = 1;
  int64_t n = 1;
  for (const auto& [name, t] : c.inputs) {
    if (!t.defined() || t.numel() == 0) continue;
    n = std::max<int64_t>(n, t.numel());
    if (name != c.node.args[0].value.s && at::isFloatingType(t.scalar_type())) {
      w = std::max(w, FiniteAbsMax(t));
    }
  }
  // eps as the node gives it, by keyword or position (a positional eps of
  // 1.0 had been read as the default 1e-5: a bound 316 times too wide).
  const double eps_value = ops::NormalizationEpsOf(c.node, c.dtype).value_or(1e-5);
  if (!(eps_value > 0)) return std::nullopt;
  const double big = FiniteAbsMax(x);
  const double bound = 4.0 * n * graph::Epsilon(c.dtype) * big * w / std::sqrt(eps_value) +
                       c.policy.For(c.node.QualifiedName(), c.dtype).atol;
  // A tolerance divergence: where one side is not finite the other is the
  // same class, so the finite differences are all there is to bound.
  const double diff = FiniteAbsMax(ya.to(at::kDouble).sub(yb.to(at::kDouble)));
  if (!(diff <= bound)) return std::nullopt;
  return RuleMatch{"normalization_statistics",
                   absl::StrCat("max|A - B| = ", graph::FormatFloat(diff),
                                " <= 4 n eps max|x| max(|w|, 1) / sqrt(eps) = ",
                                graph::FormatFloat(bound), " (n = ", n,
                                "): the statistics' rounding, amplified by 1/sigma")};
}

}  // namespace divfuzz::oracles::rules
