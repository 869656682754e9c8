// gradient_conditioning: the backward of linear algebra (solves with A, or
// with a factor of A: inverse, det, slogdet, cholesky, qr, svd, eigh ...)
// inherits the forward's conditioning: PyTorch's numerical-accuracy notes,
// "Linear algebra (torch.linalg)": results on ill-conditioned inputs carry
// large errors, and spectral functions' gradients blow up where values are
// close. The sides may differ by 8·n·eps·cond(A)·max|gradient| (normwise), and
// by class where cond(A)·eps >= 1 (singular within the dtype).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "ops/catalogue.h"
#include "oracles/rules/gradient_rule.h"
#include "oracles/rules/rule.h"

namespace divfuzz::oracles::rules {
namespace {

// The 2-norm condition number of the op's matrix input (ops::OpSpec::
// conditioned), largest over its batch; inf for a singular or non-finite one.
std::optional<double> Condition(const GradientContext& c, const graph::Node& node,
                                const ops::OpSpec& spec) {
  const at::Tensor m = ConditionedMatrixOf(node, spec, c.a.inputs);
  if (!m.defined() || m.numel() == 0) return std::nullopt;
  if (!at::isfinite(m).all().item<bool>()) return std::numeric_limits<double>::infinity();
  at::Tensor s = at::linalg_svdvals(m);  // descending along the last dim
  at::Tensor hi = s.select(-1, 0), lo = s.select(-1, s.size(-1) - 1);
  at::Tensor cond = at::where(lo > 0, hi / lo, at::full_like(hi, INFINITY));
  return cond.max().item<double>();
}

}  // namespace

std::optional<RuleMatch> gradient_conditioning(const GradientContext& c) {
  // A step inside an earlier statement (a double backward) inherits its
  // forward op's conditioning too (session 39's nuclear_norm double
  // backwards, named PermuteBackward0, judged normwise rounding).
  const graph::Node* inner = exec::VjpInner(c.node);
  const graph::Node& op = inner != nullptr ? *inner : c.node;
  const ops::OpSpec* spec = ops::FindOp(op.QualifiedName());
  if (spec == nullptr) return std::nullopt;
  const bool linalg = spec->family == "linalg" || spec->family == "decomposition" ||
                      (spec->hints & (ops::kConditioned | ops::kDecomposition |
                                      ops::kNormwiseSpectrum | ops::kMatrixFunction)) != 0;
  if (!linalg) return std::nullopt;
  std::optional<double> cond = Condition(c, op, *spec);
  if (!cond) return std::nullopt;
  const double eps = c.ProductEps();  // TF32 under +tf32: the backward's matmuls
  const auto uses = c.node.Uses();
  const int64_t n = std::max<int64_t>(1, c.a.outgoing.dim() >= 1 ? c.a.outgoing.size(-1) : 1);
  if (*cond * eps >= 1) {
    return RuleMatch{"gradient_conditioning",
                     absl::StrCat("the backward of ", c.node.QualifiedName(), " solves with a "
                                  "matrix singular within ",
                                  std::string(graph::DTypeName(c.dtype)), " (cond ", *cond,
                                  " >= 1/eps): its gradient is not determined there")};
  }
  if (c.d.cls != DivergenceClass::kTolerance || !c.a.witness.defined()) return std::nullopt;
  const at::Tensor w = c.a.witness.abs();
  const double scale = at::where(at::isfinite(w), w, at::zeros_like(w)).max().item<double>();
  const double bound = 8.0 * static_cast<double>(n) * eps * *cond * scale;
  const auto wide = c.a.outgoing.is_complex() ? at::kComplexDouble : at::kDouble;
  at::Tensor diff = (c.a.outgoing.to(wide) - c.b.outgoing.to(wide)).abs();
  // Non-finite elements are in the same class on both sides here.
  diff = at::where(at::isfinite(diff), diff, at::zeros_like(diff));
  if (!std::isfinite(bound) || diff.max().item<double>() > bound) return std::nullopt;
  return RuleMatch{"gradient_conditioning",
                   absl::StrCat("the backward of ", c.node.QualifiedName(), " inherits its "
                                "conditioning: the sides differ within 8·n·eps·cond·max|g| = ",
                                bound, " (cond ", *cond, ", n = ", n, ")")};
}

}  // namespace divfuzz::oracles::rules
