// cancelling_reductions: sums within the summation-order bound (CancellingReduction), products
// within the multiplication-order bound (ProductOrder).
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html):
// "floating point addition and multiplication are not
// associative, so the order of the operations affects the results."
// and "In particular, CPU and GPU results can be different even for
// bitwise-identical inputs and even after controlling for the sources of
// randomness."
#include "oracles/rules/rule.h"

#include <ATen/ops/abs.h>
#include <ATen/ops/all.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/isinf.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "exec/witnesses.h"

namespace divfuzz::oracles::rules {

namespace {

// Sums and dot products: any summation order is correct, and orders differ
// by up to n * eps * sum|terms| per result element (the standard bound).
std::optional<RuleMatch> CancellingReduction(const Context& c) {
  const bool reduction = c.spec.hints & ops::kCancellingReduction;
  const bool matmul = c.spec.hints & ops::kCancellingMatmul;
  // Any other op that sums inside (convolution, pooling, norms, trapezoid,
  // losses ...): its terms are not its inputs one for one, so n is bounded by
  // the largest input's size and sum|terms| by the op on |inputs| or |result|.
  const bool inside = !reduction && !matmul && (c.spec.hints & ops::kSumsInside);
  const bool split = c.d.cls == DivergenceClass::kClassSplit;
  if ((!reduction && !matmul && !inside) || (c.d.cls != DivergenceClass::kTolerance && !split)) {
    return std::nullopt;
  }
  const size_t out = inside ? static_cast<size_t>(c.d.output_index) : 0;
  const at::Tensor ya = F64(Context::Output(c.a, c.d.node_index, out));
  const at::Tensor yb = F64(Context::Output(c.b, c.d.node_index, out));
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes()) return std::nullopt;
  if (ya.is_complex() || yb.is_complex()) return std::nullopt;
  // The same op over |inputs| gives sum|terms| for each output element.
  at::Tensor sum_abs = exec::AbsTermsWitness(c.node, c.inputs, c.types, out);
  if (sum_abs.defined() && sum_abs.sizes() != yb.sizes()) sum_abs = at::Tensor();
  if (inside) {
    at::Tensor seen = at::maximum(ya.abs(), yb.abs());
    // Output k of a prefix sum sums every term up to k, so sum|terms| there
    // is at least the largest partial sum so far.
    if ((c.spec.hints & ops::kPrefixSums) && seen.dim() > 0) {
      int64_t dim = IntArgOr(c.node, ArgPos(c.spec.dim_pos), "dim", -1);
      if (dim < 0) dim += seen.dim();
      if (dim >= 0 && dim < seen.dim()) seen = std::get<0>(seen.cummax(dim));
    }
    sum_abs = sum_abs.defined() ? at::maximum(sum_abs, seen) : seen;
  }
  if (!sum_abs.defined()) return std::nullopt;
  const at::Tensor x0 = c.Input(0);
  int64_t terms = 1;
  if (inside) {
    for (const auto& [name, t] : c.inputs) {
      if (t.defined()) terms = std::max<int64_t>(terms, t.numel());
    }
  } else if (matmul && x0.defined()) {
    terms = x0.dim() == 0 ? 1 : x0.size(-1) + (c.spec.rule == ops::Rule::kLinear ? 1 : 0);
  } else if (matmul) {
    // A tensor list (chain_matmul, multi_dot): at most the largest input's size.
    for (const auto& [name, t] : c.inputs) {
      if (t.defined()) terms = std::max<int64_t>(terms, t.numel());
    }
  } else if (c.spec.rule == ops::Rule::kDimwise) {
    const int64_t dim = IntArgOr(c.node, 1, "dim", 0);
    terms = x0.dim() == 0 ? 1 : x0.size(dim < 0 ? dim + x0.dim() : dim);
  } else {
    terms = std::max<int64_t>(1, x0.numel() / std::max<int64_t>(1, ya.numel()));
  }
  // A variance accumulated in the dtype (CUDA's float Welford) is off by up
  // to about 2 n eps kappa var, kappa = sqrt(sum x^2 / S) (Chan, Golub and
  // LeVeque): large where the mean dwarfs the spread. With sum x^2 <= n
  // max|x|^2 that is the bound below with sum|terms| = sqrt(n) max|x| sigma
  // for the variance and sqrt(n) max|x| / 2 for the standard deviation.
  // (Judged on the H100: var_mean of three values near 1e15, CUDA 75% off
  // within n kappa eps, had been filed as a CUDA bug.)
  if (c.d.output_index == 0 && (c.spec.hints & ops::kSquaresInside) && x0.defined() &&
      at::isFloatingType(x0.scalar_type()) && x0.numel() > 0) {
    absl::string_view base = c.spec.name;
    absl::ConsumePrefix(&base, "aten::");
    const bool std_dev = absl::StartsWith(base, "std");
    if (std_dev || absl::StartsWith(base, "var")) {
      const double largest = FiniteAbsMax(x0);
      const double root_n = std::sqrt(static_cast<double>(terms));
      const at::Tensor kappa_terms =
          std_dev ? at::full_like(sum_abs, root_n * largest / 2)
                  : at::maximum(ya.abs(), yb.abs()).sqrt().mul(root_n * largest);
      sum_abs = at::maximum(sum_abs, kappa_terms);
    }
  }
  if (split) {
    // Where sum|terms| exceeds the dtype's range, whether a partial sum
    // overflows (inf, or inf - inf = nan) depends on the order of summation.
    // (A NaN term makes every order NaN: that is no excuse.)
    // Only finite terms overflow in one order and not in another: an infinite
    // input makes its terms infinite in every order, and with infinities of
    // one sign only the exact result is that infinity (a convolution of -inf
    // with positive weights is -inf, not NaN). So where an input holds inf
    // or NaN, sum|terms| counts the finite terms alone.
    bool nonfinite_input = false;
    std::map<std::string, at::Tensor> finite_inputs;
    for (const auto& [name, t] : c.inputs) {
      finite_inputs[name] = t;
      if (!t.defined() || !at::isFloatingType(t.scalar_type())) continue;
      if (!at::isfinite(t).all().item<bool>()) {
        nonfinite_input = true;
        finite_inputs[name] = at::where(at::isfinite(t), t, at::zeros_like(t));
      }
    }
    at::Tensor finite_abs = sum_abs;
    if (nonfinite_input) {
      finite_abs = exec::AbsTermsWitness(c.node, finite_inputs, c.types, out);
      if (!finite_abs.defined() || finite_abs.sizes() != yb.sizes()) finite_abs = sum_abs;
    }
    bool overflow_possible =
        at::logical_or(finite_abs.gt(graph::MaxFinite(c.dtype)), at::isinf(finite_abs))
            .any()
            .item<bool>();
    // A mean, an average or a trapezoid sums its raw inputs before it scales
    // them: their sum|x| bounds that intermediate, though sum|terms| (terms
    // already scaled) fits.
    for (const auto& [name, t] : c.inputs) {
      if (overflow_possible || !t.defined() || !at::isFloatingType(t.scalar_type())) continue;
      const at::Tensor a = t.abs();
      overflow_possible = a.masked_select(at::isfinite(a)).sum().item<double>() > graph::MaxFinite(c.dtype);
    }
    if (!overflow_possible) return std::nullopt;
    return RuleMatch{
        "cancelling_reductions",
        absl::StrCat("sum|terms| exceeds the range of ", std::string(graph::DTypeName(c.dtype)),
                     ": partial sums overflow or not depending on summation order")};
  }
  const double eps = graph::Epsilon(c.dtype);
  const at::Tensor bound = sum_abs.mul(2.0 * terms * eps);
  const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
  const at::Tensor diff = ya.sub(yb).abs();
  const at::Tensor ok =
      at::logical_or(diff.le(bound.add(tol.atol)), at::isfinite(diff).logical_not());
  if (!at::all(ok).item<bool>()) return std::nullopt;
  return RuleMatch{"cancelling_reductions",
                   absl::StrCat("|A - B| is within 2 n eps sum|terms| (n = ", terms,
                                inside ? ", at most the largest input's size" : "",
                                "), the rounding bound of any summation order")};
}

// Products (prod, cumprod): any multiplication order is correct. Where the
// factors above 1 multiply past the dtype's range, or those below 1 past its
// smallest subnormal, an intermediate over- or underflows in some orders and
// not in others; otherwise orders differ by up to about n * eps relatively.
std::optional<RuleMatch> ProductOrder(const Context& c) {
  if (!(c.spec.hints & ops::kProductReduction) || !graph::IsFloating(c.dtype)) {
    return std::nullopt;
  }
  const bool split = c.d.cls == DivergenceClass::kClassSplit;
  if (c.d.cls != DivergenceClass::kTolerance && !split) return std::nullopt;
  const at::Tensor x = c.Input(0);
  if (!x.defined() || x.numel() == 0) return std::nullopt;
  // log2 of every factor's magnitude; zeros and non-finite factors count as 1
  // here (a zero makes the exact product 0; nan and inf are classes of their own).
  at::Tensor lg = at::abs(x).log2();
  lg = at::where(at::isfinite(lg), lg, at::zeros_like(lg));
  at::Tensor up = lg.clamp_min(0), down = lg.clamp_max(0);
  int64_t terms = x.numel();
  const int64_t dims = std::max<int64_t>(1, x.dim());
  if (c.spec.rule == ops::Rule::kReduceAll) {
    up = up.sum(), down = down.sum();
  } else {
    int64_t dim = IntArgOr(c.node, 1, "dim", 0);
    dim = dim < 0 ? dim + dims : dim;
    if (x.dim() > 0) {
      terms = x.size(dim);
      if (c.spec.rule == ops::Rule::kDimwise) {
        up = up.cumsum(dim), down = down.cumsum(dim);  // every prefix is an output
      } else {
        const bool keepdim =
            ops::FindArg(c.node, 2, "keepdim") != nullptr && ops::FindArg(c.node, 2, "keepdim")->b;
        up = up.sum(dim, keepdim), down = down.sum(dim, keepdim);
      }
    }
  }
  const double top = std::log2(graph::MaxFinite(c.dtype));
  const double bottom = std::log2(graph::DenormMin(c.dtype));
  const at::Tensor risky = at::logical_or(up.gt(top), down.lt(bottom)).reshape(-1);
  const int64_t element = c.d.element;
  const bool at_element = element >= 0 && element < risky.numel() ? risky[element].item<bool>()
                                                                  : risky.any().item<bool>();
  if (at_element) {
    return RuleMatch{"cancelling_reductions",
                     absl::StrCat("the factors' magnitudes span past the range of ",
                                  std::string(graph::DTypeName(c.dtype)),
                                  ": partial products over- or underflow depending on the "
                                  "order of multiplication")};
  }
  if (split) return std::nullopt;
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes()) return std::nullopt;
  const double eps = graph::Epsilon(c.dtype);
  const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
  const at::Tensor bound = yb.abs().mul(2.0 * terms * eps).add(tol.atol);
  const at::Tensor ok =
      at::logical_or(ya.sub(yb).abs().le(bound), at::isfinite(ya.sub(yb)).logical_not());
  if (!at::all(ok).item<bool>()) return std::nullopt;
  return RuleMatch{"cancelling_reductions",
                   absl::StrCat("|A - B| <= 2 n eps |B| (n = ", terms,
                                "), the rounding bound of any multiplication order")};
}

}  // namespace

std::optional<RuleMatch> cancelling_reductions(const Context& c) {
  if (auto m = CancellingReduction(c)) return m;
  return ProductOrder(c);
}

}  // namespace divfuzz::oracles::rules
