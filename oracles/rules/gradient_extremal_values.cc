// gradient_extremal_values: PyTorch's numerical-accuracy notes, "Extremal
// values": where intermediate results overflow the range of the dtype, the
// end result may overflow too, though it is representable. A backward kernel
// forms the op's local derivative (cosh(x) for sinh, 1/x^2 for reciprocal)
// before it multiplies by the incoming gradient: where that derivative
// (the float64 backward with unit incoming gradients) exceeds the dtype's
// range, or the gradient itself does, a non-finite side is expected. A
// backward that sums (layer_norm's sum(g * w * xhat), a reduction's, a
// product's) accumulates incoming gradients times input-sized factors in its
// accumulation type (float32 for f16/bf16/f32): where sum|v| times each
// input's max(1, max|x|) exceeds that type's range an intermediate may overflow. A derivative within
// range that a side overflows stays a finding.
#include <ATen/ATen.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {
namespace {

// |x| at the divergence's element (any element for an op that is not
// elementwise), beyond the dtype's range.
bool BeyondRange(const GradientContext& c, const at::Tensor& t) {
  if (!t.defined() || t.is_complex()) return false;
  const at::Tensor big = t.to(at::kDouble).abs() > graph::MaxFinite(c.dtype);
  if (c.pointwise && c.d.element >= 0 && c.d.element < big.numel()) {
    return big.reshape(-1)[c.d.element].item<bool>();
  }
  return big.any().item<bool>();
}

// sum|v| * prod over inputs x of max(1, max|x|), finite values only, in
// float64: a bound on what a summing backward accumulates.
double AccumulatedMagnitude(const GradientSide& s) {
  double v = 0, x = 1;
  for (const at::Tensor& t : s.incoming) {
    if (!t.defined() || !(t.is_floating_point() || t.is_complex())) continue;
    at::Tensor a = t.abs().to(at::kDouble);
    v += at::where(at::isfinite(a), a, at::zeros_like(a)).sum().item<double>();
  }
  // Each input contributes a factor (layer_norm's g * w * x: session 35's
  // bf16 row of 1e18 with a weight of 3.4e38 overflowed float32 in the CPU's
  // sum while the gradient, -781.5, fits; the bound with max|x| alone was
  // 1.46e38).
  for (const auto& [name, t] : s.inputs) {
    if (!t.defined() || !(t.is_floating_point() || t.is_complex()) || t.numel() == 0) continue;
    at::Tensor a = t.abs().to(at::kDouble);
    x *= std::max(1.0, at::where(at::isfinite(a), a, at::zeros_like(a)).max().item<double>());
  }
  return v * x;
}

}  // namespace

std::optional<RuleMatch> gradient_extremal_values(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kClassSplit) return std::nullopt;
  if (BeyondRange(c, c.a.witness) || BeyondRange(c, c.b.witness)) {
    return RuleMatch{"gradient_extremal_values",
                     absl::StrCat("the float64 gradient of ", c.node.QualifiedName(),
                                  " overflows ", std::string(graph::DTypeName(c.dtype)),
                                  " there: the notes leave such a result's non-finite class open")};
  }
  // A pointwise op sums too where the input was broadcast: its backward
  // reduces the incoming gradient over the broadcast dims (session 33's
  // copysign of a scalar broadcast to [9]: CUDA's tree added FLT_MAX to
  // FLT_MAX/2 first).
  bool broadcast = false;
  for (const at::Tensor& t : c.a.incoming) {
    broadcast |= t.defined() && c.a.outgoing.defined() && c.a.outgoing.numel() < t.numel();
  }
  if (!c.pointwise || broadcast) {
    const graph::DType acc = c.dtype == graph::DType::kF64 || c.dtype == graph::DType::kC128
                                 ? graph::DType::kF64
                                 : graph::DType::kF32;
    const double m = std::max(AccumulatedMagnitude(c.a), AccumulatedMagnitude(c.b));
    if (m > graph::MaxFinite(acc)) {
      return RuleMatch{"gradient_extremal_values",
                       absl::StrCat("the backward of ", c.node.QualifiedName(), " accumulates "
                                    "sum|v| * prod max(1, max|x|) = ", m, ", beyond ",
                                    std::string(graph::DTypeName(acc)), "'s range: an "
                                    "intermediate sum may overflow though the gradient fits")};
    }
  }
  std::vector<at::Tensor> unit;
  for (const at::Tensor& t : c.a.incoming) unit.push_back(t.defined() ? at::ones_like(t) : t);
  exec::VjpResult local =
      exec::RunNodeVjp(c.node, c.a.inputs, unit, c.types, exec::Target::kCpuF64);
  if (local.result.error || c.out >= local.result.exact.size()) return std::nullopt;
  if (!BeyondRange(c, local.result.exact[c.out])) return std::nullopt;
  return RuleMatch{"gradient_extremal_values",
                   absl::StrCat("the local derivative of ", c.node.QualifiedName(),
                                " (its float64 backward with unit incoming gradients) overflows ",
                                std::string(graph::DTypeName(c.dtype)),
                                " before the incoming gradient scales it back into range")};
}

}  // namespace divfuzz::oracles::rules
