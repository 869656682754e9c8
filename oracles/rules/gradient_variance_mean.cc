// gradient_variance_mean: var's backward (FunctionsManual.cpp var_backward,
// (2/dof)·g·(x − x.mean(dim, keepdim))) and std's (var_backward of g/(2·std))
// run as eager ops in the input's dtype: the mean they recompute is summed
// and rounded in the dtype, and x − mean cancels. A mean off by
// (n + 4)·eps·max|x| moves every element by (2/dof)·|g| times that (over
// 2·std for std), on each side: the numerical-accuracy notes, "floating point
// provides limited accuracy ... the order of the operations affects the
// results". Session 33's VarBackward0 bf16 (judged expected): a bf16 mean
// 0.2 ulp off amplified by |mean|/|x − mean| = 12.
#include <ATen/ATen.h>

#include <algorithm>
#include <vector>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/printer.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {
namespace {

using graph::Literal;

// Bessel's correction as the overload states it (correction=, unbiased=,
// or var(input, unbiased)); 1 by default.
double Correction(const graph::Node& node) {
  if (const Literal* c = ops::FindArg(node, 1000, "correction")) {
    if (c->kind == Literal::Kind::kInt) return static_cast<double>(c->i);
    if (c->kind == Literal::Kind::kFloat) return c->f;
  }
  const Literal* u = ops::FindArg(node, 1000, "unbiased");
  if (u == nullptr) u = ops::FindArg(node, 1, "unbiased");
  if (u == nullptr) u = ops::FindArg(node, 2, "unbiased");
  if (u != nullptr && u->kind == Literal::Kind::kBool) return u->b ? 1 : 0;
  return 1;
}

}  // namespace

std::optional<RuleMatch> gradient_variance_mean(const GradientContext& c) {
  const std::string op = c.node.QualifiedName();
  const bool is_std = absl::StartsWith(op, "aten::std");
  if (!(absl::StartsWith(op, "aten::var") || is_std) || c.d.cls != DivergenceClass::kTolerance ||
      c.a.outgoing.is_complex() || c.out != 0) {
    return std::nullopt;
  }
  const Literal* first = ops::FindArg(c.node, 0, "input");
  if (first == nullptr || first->kind != Literal::Kind::kValue) return std::nullopt;
  const double atol = c.policy.For(op, c.dtype).atol;
  const double eps = graph::Epsilon(c.dtype);
  // The accumulation's epsilon: f16 and bf16 reductions sum in float32.
  const double acc = c.dtype == graph::DType::kF64 ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23);
  double worst = 0;
  // Each side against the float64 backward of its own inputs (they may
  // differ upstream within tolerance), element by element.
  for (const GradientSide* s : {&c.a, &c.b}) {
    auto it = s->inputs.find(first->s);
    if (it == s->inputs.end() || !it->second.defined() || !it->second.is_floating_point() ||
        it->second.numel() == 0 || s->incoming.empty() || !s->incoming[0].defined() ||
        !s->witness.defined()) {
      return std::nullopt;
    }
    const at::Tensor x = it->second.to(at::kDouble);
    if (!at::isfinite(x).all().item<bool>()) return std::nullopt;
    const std::vector<int64_t> dims = ReducedDims(c.node, x);
    int64_t n = 1;
    for (int64_t d : dims) {
      if (d < 0 || d >= x.dim()) return std::nullopt;
      n *= x.size(d);
    }
    const double dof = static_cast<double>(n) - Correction(c.node);
    if (!(dof > 0)) return std::nullopt;
    // |g| of each element's own group: the incoming gradient of the reduced
    // output, its reduced dims restored (keepdim=False drops them). One row's
    // inf cotangent made a whole-tensor max|g| useless (session 34's f16 var).
    at::Tensor g = s->incoming[0].to(at::kDouble).abs();
    if (g.dim() < x.dim()) {
      std::vector<int64_t> sorted = dims;
      std::sort(sorted.begin(), sorted.end());
      for (int64_t d : sorted) g = g.unsqueeze(d);
    }
    if (g.dim() != x.dim()) return std::nullopt;
    const at::Tensor mean = x.mean(dims, /*keepdim=*/true);
    const at::Tensor centered = x - mean;
    // The mean: rounded to the dtype (up to an ulp), summed with log2(n)
    // roundings of the accumulation type; then x - mean and the products
    // rounded, a few eps of each term.
    const at::Tensor dmean = eps * mean.abs() + (std::ceil(std::log2(static_cast<double>(n))) + 1) *
                                                    acc * x.abs().mean(dims, /*keepdim=*/true);
    at::Tensor bound = (2.0 / dof) * g * (dmean + 4 * eps * centered.abs());
    if (is_std) {
      const at::Tensor sd = (centered.pow(2).sum(dims, true) / dof).sqrt();
      if (!(sd.min().item<double>() > 0)) return std::nullopt;
      bound = bound / (2 * sd);
    }
    // var_mean/std_mean: the mean's gradient g/n, broadcast, a few roundings.
    if (s->incoming.size() > 1 && s->incoming[1].defined()) {
      bound = bound + 4 * eps * s->incoming[1].to(at::kDouble).abs().max().item<double>() /
                          static_cast<double>(n);
    }
    const at::Tensor off = (s->outgoing.to(at::kDouble) - s->witness.to(at::kDouble)).abs();
    if (off.sizes() != bound.sizes()) return std::nullopt;
    // Judged where both sides are finite (a tolerance divergence has its
    // non-finite elements in one class on both sides).
    const at::Tensor judged = at::isfinite(c.a.outgoing) & at::isfinite(c.b.outgoing);
    const at::Tensor within = (off <= bound + atol).logical_or(judged.logical_not());
    if (!within.all().item<bool>()) return std::nullopt;
    worst = std::max(worst, at::where(judged, off / (bound + atol), at::zeros_like(off))
                                .max()
                                .item<double>());
  }
  return RuleMatch{"gradient_variance_mean",
                   absl::StrCat("each side within its own float64 backward by the mean the "
                                "backward recomputes in the dtype ((eps·|mean| + log2(n)·eps_acc·"
                                "mean|x|)·(2/dof)·max|g|, plus 4 eps of each x - mean), at most ",
                                graph::FormatFloat(worst), " of it")};
}

}  // namespace divfuzz::oracles::rules
