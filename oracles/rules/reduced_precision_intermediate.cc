// reduced_precision_intermediate: f16/bf16 intermediates rounded to the dtype (ReducedPrecisionIntermediate),
// and histc's bin position rounded in the dtype (BinEdges).
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html), "Reduced
// Precision Reduction for FP16 and BF16 GEMMs": "Half-precision GEMM
// operations are typically done with intermediate accumulations (reduction)
// in single-precision for numerical accuracy and improved resilience to
// overflow. For performance, certain GPU architectures, especially more recent
// ones, allow a few truncations of the intermediate accumulation results to
// the reduced precision (e.g., half-precision)." How far such a truncation
// may move a result is what PyTorch's own OpInfo entries accept for the op
// and dtype (their toleranceOverride/precisionOverride, imported into the
// policy's overrides by scripts/import_opinfo_tolerances.py; PyTorch's
// default tolerance for the dtype where the op has none): beyond it PyTorch's
// own tests fail, and maintainers have fixed such kernels as bugs. So the
// difference is expected only within that tolerance of the narrow dtype the
// op meets, and never beyond 2·eps·(|B| + 1) of it; where the narrow dtype is
// the output's own, the comparison already used that tolerance, and nothing
// beyond it is excused.
#include "oracles/rules/rule.h"

#include <ATen/ops/all.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/minimum.h>

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"

namespace divfuzz::oracles::rules {

using graph::DType;
using graph::Literal;

namespace {

// f16/bf16: one intermediate rounded to the dtype (log_softmax's CPU
// last-dim path keeps its sum in Half) moves the result by about eps
// relative to |B| + 1, where the other side carries it in float32.
std::optional<RuleMatch> ReducedPrecisionIntermediate(const Context& c) {
  // The narrowest floating dtype the op meets: a composite computes some
  // intermediates in an input's dtype before promoting (kl_div's
  // target·log(target), trapezoid's dx = diff(x) in a bf16 x).
  DType narrow = c.dtype;
  for (DType d : c.ArgDTypes()) {
    if ((d == DType::kF16 || d == DType::kBF16) && graph::IsFloating(c.dtype) &&
        graph::Epsilon(d) > graph::Epsilon(narrow)) {
      narrow = d;
    }
  }
  if (!(c.spec.hints & (ops::kSumsInside | ops::kNormalizes)) ||
      (narrow != DType::kF16 && narrow != DType::kBF16) ||
      c.d.cls != DivergenceClass::kTolerance) {
    return std::nullopt;
  }
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || ya.is_complex()) {
    return std::nullopt;
  }
  // PyTorch's OpInfo tolerance for the op in the narrow dtype, capped by
  // what one rounding to it can do.
  const Tolerance opinfo = c.policy.For(c.node.QualifiedName(), narrow);
  const at::Tensor one_rounding = yb.abs().add(1).mul(2.0 * graph::Epsilon(narrow));
  const at::Tensor accepted = yb.abs().mul(opinfo.rtol).add(opinfo.atol);
  const at::Tensor bound = at::minimum(one_rounding, accepted);
  const at::Tensor ok =
      at::logical_or(ya.sub(yb).abs().le(bound), at::isfinite(ya.sub(yb)).logical_not());
  if (!at::all(ok).item<bool>()) return std::nullopt;
  const std::string in(graph::DTypeName(narrow));
  return RuleMatch{"reduced_precision_intermediate",
                   absl::StrCat("|A - B| <= min(2 eps (|B| + 1), atol + rtol |B|) in ", in,
                                narrow == c.dtype ? "" : " (an input's dtype)", ", atol ",
                                opinfo.atol, " and rtol ", opinfo.rtol,
                                " being what PyTorch's OpInfo accepts for ", c.node.QualifiedName(),
                                " in ", in, ": one intermediate rounded to ", in, " on one side")};
}

// histc computes an element's bin position (x - min)·bins/(max - min) in
// the dtype (HistogramKernel.cpp): a few roundings there move an element that
// sits within a few eps of an edge into the neighbouring bin. Expected when
// the counts differ by no more than twice the number of such elements.
std::optional<RuleMatch> BinEdges(const Context& c) {
  if (!(c.spec.hints & ops::kBinning) || c.d.cls != DivergenceClass::kTolerance) {
    return std::nullopt;
  }
  const at::Tensor x = c.Input(0);
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  if (!x.defined() || !ya.defined() || !yb.defined() || ya.sizes() != yb.sizes()) {
    return std::nullopt;
  }
  const at::Tensor finite = x.masked_select(at::isfinite(x));
  if (finite.numel() == 0) return std::nullopt;
  auto float_arg = [&](size_t pos, const char* name, double fallback) {
    const Literal* l = ops::FindArg(c.node, pos, name);
    if (l == nullptr) return fallback;
    if (l->kind == Literal::Kind::kFloat) return l->f;
    if (l->kind == Literal::Kind::kInt) return static_cast<double>(l->i);
    return fallback;
  };
  const double bins = static_cast<double>(IntArgOr(c.node, 1, "bins", 100));
  double lo = float_arg(2, "min", 0), hi = float_arg(3, "max", 0);
  if (lo == 0 && hi == 0) {
    lo = finite.min().item<double>();
    hi = finite.max().item<double>();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  if (!(hi > lo) || bins <= 0) return std::nullopt;
  const at::Tensor pos = finite.sub(lo).mul(bins / (hi - lo));
  // A few roundings in the dtype: of pos (relative eps) and of the edges
  // min and max (up to eps·bins in position). In f16/bf16 a position near 100
  // has an ulp of 1/16 or 1/2 itself: the kernel cannot place finer.
  const double eps = graph::Epsilon(c.dtype);
  const at::Tensor edge_distance = pos.sub(pos.round()).abs();
  const int64_t near = edge_distance.le(pos.abs().add(bins).mul(2 * eps)).sum().item<int64_t>();
  const double moved = ya.sub(yb).abs().sum().item<double>();
  // Elements moved between bins, none lost or gained.
  if (near == 0 || moved > 2.0 * static_cast<double>(near) ||
      ya.sum().item<double>() != yb.sum().item<double>()) {
    return std::nullopt;
  }
  return RuleMatch{"reduced_precision_intermediate",
                   absl::StrCat(near, " element(s) lie within a few eps of a bin edge: histc "
                                      "computes the bin position in ",
                                c.d.dtype, ", and its rounding puts them on either side")};
}

}  // namespace

std::optional<RuleMatch> reduced_precision_intermediate(const Context& c) {
  if (auto m = ReducedPrecisionIntermediate(c)) return m;
  return BinEdges(c);
}

}  // namespace divfuzz::oracles::rules
