// nonfinite_inputs: non-finite inputs where PyTorch gives no guarantee.
#include "oracles/rules/rule.h"

#include <ATen/ops/isnan.h>
#include <ATen/ops/view_as_real.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "exec/target.h"

namespace divfuzz::oracles::rules {

namespace {

// Floating inputs of the root, as side A had them: which non-finite kinds.
struct NonFinite {
  bool nan = false, pos_inf = false, neg_inf = false;
  bool Any() const { return nan || pos_inf || neg_inf; }
};
NonFinite ScanNonFinite(const Context& c) {
  NonFinite n;
  for (const auto& [name, t] : c.inputs) {
    if (!t.defined() || t.numel() == 0) continue;
    at::Tensor v = t;
    if (v.is_complex()) v = at::view_as_real(v.contiguous());
    if (!at::isFloatingType(v.scalar_type())) continue;
    n.nan = n.nan || at::isnan(v).any().item<bool>();
    n.pos_inf = n.pos_inf || v.eq(std::numeric_limits<double>::infinity()).any().item<bool>();
    n.neg_inf = n.neg_inf || v.eq(-std::numeric_limits<double>::infinity()).any().item<bool>();
  }
  return n;
}


// Whether a blamed side returned a finite value at the diverging element
// where the witness computed from its own inputs is NaN.
bool BlamedFiniteWhereWitnessIsNan(const Context& c) {
  auto parse = [](const std::string& text) -> std::optional<double> {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str()) return std::nullopt;
    return v;
  };
  bool any = false;
  for (int side = 0; side < 2; ++side) {
    const exec::RunResult& run = side == 0 ? c.a : c.b;
    if (c.d.wrong_side != "both" && c.d.wrong_side != exec::TargetName(run.target)) continue;
    const std::optional<double> value = parse(side == 0 ? c.d.value_a : c.d.value_b);
    const std::optional<double> ref = parse(side == 0 ? c.d.reference_a : c.d.reference_b);
    if (!value || !ref || !std::isfinite(*value) || !std::isnan(*ref)) return false;
    any = true;
  }
  return any;
}

}  // namespace

// PyTorch's notes: the libraries behind linear algebra, FFTs and matrix
// products give no guarantee for non-finite inputs, in any failure class; an
// exponential normalizer subtracts its max (inf - inf). Plain sums only
// depend on the order with infinities of both signs (NaN must propagate).
std::optional<RuleMatch> nonfinite_inputs(const Context& c) {
  if (!(c.spec.hints & ops::kNoNonFiniteGuarantee)) return std::nullopt;
  const NonFinite n = ScanNonFinite(c);
  if (!n.Any()) return std::nullopt;
  const uint32_t backend = ops::kConditioned | ops::kDecomposition | ops::kInfoGated |
                           ops::kTransform | ops::kCancellingMatmul | ops::kTf32Sensitive;
  const bool library = (c.spec.hints & backend) || c.spec.family == "linalg" ||
                       c.spec.family == "decomposition" || c.spec.family == "fft" ||
                       c.spec.family == "matmul" || c.spec.family == "conv";
  const std::string what =
      absl::StrCat(n.nan ? "NaN" : "", n.nan && (n.pos_inf || n.neg_inf) ? " and " : "",
                   n.pos_inf && n.neg_inf ? "+-inf" : n.pos_inf ? "+inf" : n.neg_inf ? "-inf" : "");
  // A NaN term makes a sum, a dot product or a normalizer NaN in every
  // order: outside linear algebra and transforms, a side that returns a
  // finite value where the agreeing witnesses say NaN is not excused (CPU
  // flash attention zero-filling a NaN row).
  const bool linalg = (c.spec.hints & (ops::kConditioned | ops::kDecomposition | ops::kInfoGated |
                                       ops::kTransform)) ||
                      c.spec.family == "linalg" || c.spec.family == "decomposition" ||
                      c.spec.family == "fft";
  if (!linalg && n.nan && !n.pos_inf && !n.neg_inf && BlamedFiniteWhereWitnessIsNan(c)) {
    return std::nullopt;
  }
  if (library) {
    return RuleMatch{"nonfinite_inputs",
                     absl::StrCat("the input holds ", what, ": PyTorch gives no guarantee for "
                                  "non-finite inputs to linear algebra, FFTs and matrix products")};
  }
  const bool plain_sum = c.spec.hints & (ops::kCancellingReduction | ops::kProductReduction);
  if (plain_sum ? (n.pos_inf && n.neg_inf) : (n.pos_inf || n.neg_inf)) {
    return RuleMatch{"nonfinite_inputs",
                     absl::StrCat("the input holds ", what, ": ",
                                  plain_sum ? "inf - inf appears or not depending on the order"
                                            : "the op's intermediate (a max subtracted, a mean "
                                              "removed) turns inf into inf - inf or not "
                                              "depending on the algorithm")};
  }
  return std::nullopt;
}

}  // namespace divfuzz::oracles::rules
