// gradient_normalization_statistics: a normalization's backward,
// dx = rstd (g w - mean(g w) - xhat mean(g w xhat)), reads the statistics
// (mean, rstd) its forward computed and rounded (the CPU keeps layer_norm's in
// bf16 for bf16 inputs, pytorch#109188; CUDA in float32; rms_norm's composite
// in float32 on both, so eps is float32's there): an error of n eps in
// them moves each term by about n eps rstd |g w| (1 + |xhat|), and the terms
// cancel (a layer_norm whose gradient is exactly 0 gives n eps rstd |g| on a
// side): |A - B| <= 2 (n + 4) eps rstd max|g| max(|w|, 1) (1 + max|xhat| +
// max|x| rstd), the last for the mean's own rounding at max|x|. The forward's normalization_statistics, for the backward: the
// numerical-accuracy notes, "floating point addition and multiplication are
// not associative, so the order of the operations affects the results".
// rstd is computed here in float64 over the op's own groups.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/printer.h"
#include "ops/kernel_classes.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {
namespace {

using graph::Literal;

double FloatArg(const graph::Node& node, size_t pos, const char* name, double otherwise) {
  const Literal* l = ops::FindArg(node, pos, name);
  if (l == nullptr) return otherwise;
  if (l->kind == Literal::Kind::kFloat) return l->f;
  if (l->kind == Literal::Kind::kInt) return static_cast<double>(l->i);
  return otherwise;
}

at::Tensor Finite(const at::Tensor& t) {
  return at::where(at::isfinite(t), t, at::zeros_like(t));
}

// The bound's largest term over the op's groups: rstd, max|g| and
// max|xhat| of one group together (a group of zeros has rstd 1/sqrt(eps)
// and no gradient: the maxima of different groups had made the bound
// hundreds of times too wide). nullopt: groups not modelled here.
struct Stats {
  double term;   // max over groups of rstd·max|g|·(1 + max|xhat| + max|x|·rstd)
  double param;  // ... of max|g|·(1 + max|xhat| + max|x|·rstd): a weight's term
  int64_t n;     // a group's size
};

std::optional<Stats> Rstd(const GradientContext& c, const at::Tensor& x0, const at::Tensor& g0) {
  const std::string op = c.node.QualifiedName();
  at::Tensor x = Finite(x0.to(at::kDouble));
  at::Tensor g = Finite(g0.to(at::kDouble)).abs();
  const int64_t nd = x.dim();
  if (nd < 1 || x.numel() == 0 || g.sizes() != x.sizes()) return std::nullopt;
  const std::optional<double> eps_arg = ops::NormalizationEpsOf(c.node, c.dtype);
  if (!eps_arg) return std::nullopt;
  const double eps = std::max(*eps_arg, 0.0);
  std::vector<int64_t> dims;
  bool rms = absl::StrContains(op, "rms_norm");
  if (absl::StrContains(op, "layer_norm") || rms) {
    const Literal* shape = ops::FindArg(c.node, 1, "normalized_shape");
    const int64_t k = shape != nullptr && shape->kind == Literal::Kind::kList
                          ? static_cast<int64_t>(shape->list.size())
                          : 1;
    for (int64_t d = std::max<int64_t>(0, nd - k); d < nd; ++d) dims.push_back(d);
  } else if (absl::StrContains(op, "instance_norm")) {
    for (int64_t d = 2; d < nd; ++d) dims.push_back(d);
  } else if (absl::StrContains(op, "group_norm")) {
    const double groups = FloatArg(c.node, 1, "num_groups", FloatArg(c.node, 6, "group", 1));
    if (nd < 2 || groups < 1 || x.size(1) % static_cast<int64_t>(groups) != 0) return std::nullopt;
    x = x.reshape({x.size(0), static_cast<int64_t>(groups), -1});
    g = g.reshape({g.size(0), static_cast<int64_t>(groups), -1});
    dims = {2};
  } else if (absl::StrContains(op, "batch_norm")) {
    for (int64_t d = 0; d < nd; ++d) {
      if (d != 1) dims.push_back(d);
    }
  } else {
    return std::nullopt;
  }
  if (dims.empty()) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : dims) n *= x.size(d);
  const at::Tensor centered = rms ? x : x - x.mean(dims, /*keepdim=*/true);
  const at::Tensor second = centered.pow(2).mean(dims, /*keepdim=*/true);
  const at::Tensor rstd = (second + eps).rsqrt();
  const at::Tensor xhat = (centered * rstd).abs().amax(dims, /*keepdim=*/true);
  // The mean itself is rounded at max|x|: far from 0 (a mean of 1e4 and a
  // deviation of 0.9, session 39's G4 batch_norm f32: one ulp of the mean
  // moved the gradient by 4.9e-3) that error, times rstd, outweighs xhat's.
  const at::Tensor offset = rms ? at::zeros_like(xhat) : x.abs().amax(dims, /*keepdim=*/true) * rstd;
  const at::Tensor param = g.amax(dims, /*keepdim=*/true) * (1 + xhat + offset);
  const at::Tensor term = rstd * param;
  Stats s{term.max().item<double>(), param.max().item<double>(), n};
  if (!std::isfinite(s.term) || !std::isfinite(s.param)) return std::nullopt;
  return s;
}

}  // namespace

std::optional<RuleMatch> gradient_normalization_statistics(const GradientContext& c) {
  if (!(c.hints & ops::kNormalizes) || c.d.cls != DivergenceClass::kTolerance ||
      c.a.outgoing.is_complex()) {
    return std::nullopt;
  }
  // The normalized input is the op's first argument.
  const Literal* first = ops::FindArg(c.node, 0, "input");
  if (first == nullptr || first->kind != Literal::Kind::kValue) return std::nullopt;
  // A weight's or bias's gradient, sum over its slice of g·xhat (or of g),
  // reads the statistics through every xhat it sums: each term moves by
  // about n eps (|xhat| + max|x| rstd) |g|, with no rstd or w outside
  // (session 40's G5: batch_norm f32's weight gradient, exactly 0, was
  // 5.4e-6 on the CPU and -2.6e-5 on CUDA, a mean 1.7 ulps apart; the input
  // gradient's bound, 2.9e-8 there, was no bound for it; pytorch#82493).
  const bool param = c.wrt != first->s;
  double bound = 0;
  int64_t group = 0;
  for (const GradientSide* s : {&c.a, &c.b}) {
    auto x = s->inputs.find(first->s);
    if (x == s->inputs.end() || !x->second.defined() || !x->second.is_floating_point()) {
      return std::nullopt;
    }
    if (s->incoming.empty() || !s->incoming[0].defined() || s->incoming[0].is_complex()) {
      return std::nullopt;
    }
    if (param) {
      auto p = s->inputs.find(c.wrt);
      if (p == s->inputs.end() || !p->second.defined() || p->second.numel() == 0) {
        return std::nullopt;
      }
      const std::optional<Stats> r = Rstd(c, x->second, s->incoming[0]);
      if (!r) return std::nullopt;
      // The terms each element of the parameter's gradient sums.
      const double terms = static_cast<double>(x->second.numel()) /
                           static_cast<double>(p->second.numel());
      bound = std::max(bound, 2.0 * static_cast<double>(r->n + 4) * c.ComputeEps() *
                                  terms * r->param);
      group = std::max(group, r->n);
      continue;
    }
    // The normalized output's incoming gradient (the first result's).
    if (s->incoming.empty() || !s->incoming[0].defined() || s->incoming[0].is_complex()) {
      return std::nullopt;
    }
    const std::optional<Stats> r = Rstd(c, x->second, s->incoming[0]);
    if (!r) return std::nullopt;
    double w = 1;
    for (const auto& [name, t] : s->inputs) {
      if (name != first->s && t.defined() && t.is_floating_point() && t.numel() > 0) {
        w = std::max(w, Finite(t.to(at::kDouble).abs()).max().item<double>());
      }
    }
    bound = std::max(bound, 2.0 * static_cast<double>(r->n + 4) * c.ComputeEps() *
                                r->term * w);
    group = std::max(group, r->n);
  }
  bound += c.policy.For(c.node.QualifiedName(), c.dtype).atol;
  const at::Tensor diff =
      Finite((c.a.outgoing.to(at::kDouble) - c.b.outgoing.to(at::kDouble)).abs());
  const double worst = diff.max().item<double>();
  if (!(worst <= bound)) return std::nullopt;
  if (param) {
    return RuleMatch{"gradient_normalization_statistics",
                     absl::StrCat("max|A - B| = ", graph::FormatFloat(worst),
                                  " <= 2 (n + 4) eps terms max|g| (1 + max|xhat| + max|x| rstd) = ",
                                  graph::FormatFloat(bound), " (n = ", group, "): ", c.wrt,
                                  "'s gradient sums g·xhat, each xhat from the statistics' "
                                  "rounding")};
  }
  return RuleMatch{"gradient_normalization_statistics",
                   absl::StrCat("max|A - B| = ", graph::FormatFloat(worst),
                                " <= 2 (n + 4) eps rstd max|g| max(|w|, 1) (1 + max|xhat| + max|x| rstd) = ",
                                graph::FormatFloat(bound), " (n = ", group,
                                "): the statistics' rounding, read back by the backward")};
}

}  // namespace divfuzz::oracles::rules
