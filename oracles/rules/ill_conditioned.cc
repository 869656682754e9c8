// ill_conditioned: linear algebra on an ill-conditioned matrix.
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html),
// "Extremal values in linalg": "If provided with ill-conditioned inputs, the
// result of these functions they may vary when using the same inputs on
// different devices or when using different backends via the keyword
// ``driver``."
#include "oracles/rules/rule.h"

#include <ATen/ops/abs.h>
#include <ATen/ops/all.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/linalg_svdvals.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/tril.h>
#include <ATen/ops/triu.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "exec/target.h"
#include "graph/printer.h"
#include "oracles/attribution.h"

namespace divfuzz::oracles::rules {

using graph::DType;
using graph::Literal;

std::optional<RuleMatch> ill_conditioned(const Context& c) {
  if (!(c.spec.hints & ops::kConditioned)) return std::nullopt;
  // Elimination without any rounding (the exact witness checked every
  // intermediate): conditioning cannot excuse a difference.
  if (c.d.rounding_free) return std::nullopt;
  // The matrix as each side had it: a side that inherited other values (a
  // float64 side's upstream ops) solved another, maybe worse, problem.
  auto matrix_of = [&](const exec::RunResult& run) {
    return ConditionedMatrixOf(c.node, c.spec, NodeInputs(c.program, c.d.node_index, run));
  };
  const at::Tensor x = matrix_of(c.a);
  if (!x.defined()) return std::nullopt;
  const at::Tensor xb = matrix_of(c.b);
  for (const at::Tensor& m : {x, xb}) {
    if (m.defined() && !at::all(at::isfinite(m)).item<bool>()) {
      return RuleMatch{"ill_conditioned", "the matrix has non-finite entries: no condition number"};
    }
  }
  const auto it = c.types.find(c.node.args[0].value.s);
  const DType dt = it == c.types.end() ? c.dtype : it->second.dtype;
  double worst = 0;
  try {
    for (const at::Tensor& m : {x, xb}) {
      if (!m.defined() || m.sizes() != x.sizes()) continue;
      const at::Tensor s = at::linalg_svdvals(m);  // descending along the last dim
      const at::Tensor smax = s.select(-1, 0), smin = s.select(-1, s.size(-1) - 1);
      worst = std::max(worst, smax.div(smin).max().item<double>());
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const double limit = 1.0 / graph::Epsilon(dt);
  if (worst > limit || !std::isfinite(worst)) {
    return RuleMatch{"ill_conditioned", absl::StrCat("condition number ", graph::FormatFloat(worst),
                                                     " > 1/eps(", std::string(graph::DTypeName(dt)),
                                                     ") = ", graph::FormatFloat(limit))};
  }
  // Below 1/eps a backward-stable algorithm still loses up to about
  // n * cond * eps of relative accuracy (log|det| loses that much absolutely):
  // two correct results may differ by twice that.
  // A factorization is compared through its invariants, not output 0:
  // normwise_backward_error bounds those.
  if (c.d.cls != DivergenceClass::kTolerance || (c.spec.hints & ops::kDecomposition)) {
    return std::nullopt;
  }
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || ya.numel() == 0) {
    return std::nullopt;
  }
  const double n = static_cast<double>(x.size(-1));
  const double bound = 2 * n * worst * graph::Epsilon(dt);
  const double diff = at::linalg_vector_norm(ya.sub(yb)).item<double>();
  const double scale = at::linalg_vector_norm(yb).item<double>();
  const bool log_scale = absl::StrContains(c.node.op, "logdet");
  const double error = log_scale ? at::abs(ya.sub(yb)).max().item<double>()
                                 : diff / std::max(scale, std::numeric_limits<double>::min());
  if (!(error <= bound)) {
    // The sides' difference also carries what they inherited; what each
    // blamed side owes is its own error against the witness from its own
    // inputs, which is as bounded (half of it: n * cond * eps each).
    const bool blames_a = c.d.wrong_side == "both" || c.d.wrong_side == exec::TargetName(c.a.target);
    const bool blames_b = c.d.wrong_side == "both" || c.d.wrong_side == exec::TargetName(c.b.target);
    const double own = std::max(blames_a ? c.d.rel_a : 0.0, blames_b ? c.d.rel_b : 0.0);
    if (log_scale || (!blames_a && !blames_b) || !(own <= bound / 2)) return std::nullopt;
    return RuleMatch{
        "ill_conditioned",
        absl::StrCat("the blamed side's relative error against the witness from its own inputs, ",
                     graph::FormatFloat(own), ", is within n * cond * eps(",
                     std::string(graph::DTypeName(dt)), ") = ", graph::FormatFloat(bound / 2),
                     " (n = ", static_cast<int64_t>(n), ", cond ", graph::FormatFloat(worst),
                     "); the rest of the difference is inherited")};
  }
  return RuleMatch{
      "ill_conditioned",
      absl::StrCat(log_scale ? "absolute" : "normwise relative", " difference ",
                   graph::FormatFloat(error), " <= 2 * n * cond * eps(",
                   std::string(graph::DTypeName(dt)), ") = ", graph::FormatFloat(bound),
                   " (n = ", static_cast<int64_t>(n), ", cond ", graph::FormatFloat(worst), ")")};
}

}  // namespace divfuzz::oracles::rules
