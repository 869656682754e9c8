// phase_rounding: oscillatory kernels that form their phase in the dtype.
// PhaseBoundOf (oracles/expected_rules.h) is the bound this rule allows between
// the sides and the side check (attribution.cc) allows between a side and its
// witness: one bound for both.
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html):
// "floating point provides limited accuracy (about 7 decimal digits
// for single precision floating point numbers, about 16 decimal digits for
// double precision floating point numbers)" (a phase
// formed in the dtype is known to that accuracy only), and "In particular, CPU and GPU results can be different even for
// bitwise-identical inputs and even after controlling for the sources of
// randomness."
#include "oracles/rules/rule.h"

#include <ATen/ops/all.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/maximum.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "graph/printer.h"

namespace divfuzz::oracles {

using graph::DType;
using graph::Literal;

std::optional<PhaseBound> PhaseBoundOf(const ops::OpSpec& spec, const graph::Node& node,
                                       const std::map<std::string, at::Tensor>& inputs,
                                       DType dtype) {
  const ops::OpSpec::Phase& ph = spec.phase;
  if (ph.arg < 0 || static_cast<size_t>(ph.arg) >= node.args.size()) return std::nullopt;
  const Literal& l = node.args[static_cast<size_t>(ph.arg)].value;
  double v = -1;
  if (l.kind == Literal::Kind::kValue) {
    auto it = inputs.find(l.s);
    if (it == inputs.end() || !it->second.defined() || it->second.numel() == 0) return std::nullopt;
    v = rules::FiniteAbsMax(it->second);
  } else if (l.kind == Literal::Kind::kFloat) {
    v = std::fabs(l.f);
  } else if (l.kind == Literal::Kind::kInt) {
    v = std::fabs(static_cast<double>(l.i));
  }
  if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
  // The kernels compute f16/bf16 in float32.
  return PhaseBound{ph.scale * std::pow(v, ph.power),
                    graph::Epsilon(dtype == DType::kF64 ? DType::kF64 : DType::kF32),
                    ph.amplitude * std::pow(v, ph.amplitude_power)};
}

namespace rules {

// An oscillatory kernel forms its phase in the dtype: a relative rounding
// of eps there is an absolute error of eps·phase in the argument of its
// cos/sin, which the result carries times its amplitude.
std::optional<RuleMatch> phase_rounding(const Context& c) {
  if ((c.d.cls != DivergenceClass::kTolerance && c.d.cls != DivergenceClass::kClassSplit) ||
      !graph::IsFloating(c.dtype)) {
    return std::nullopt;
  }
  const std::optional<PhaseBound> ph = PhaseBoundOf(c.spec, c.node, c.inputs, c.dtype);
  if (!ph) return std::nullopt;
  const double phase = ph->phase;
  const bool f64 = c.dtype == DType::kF64;
  const double acc_max = f64 ? std::numeric_limits<double>::max() : std::numeric_limits<float>::max();
  if (c.d.cls == DivergenceClass::kClassSplit) {
    if (!(phase > acc_max)) return std::nullopt;
    return RuleMatch{"phase_rounding",
                     absl::StrCat("the kernel's phase ", graph::FormatFloat(phase),
                                  " exceeds the dtype's range: its cos/sin is NaN")};
  }
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || ya.is_complex()) {
    return std::nullopt;
  }
  const at::Tensor amplitude = at::maximum(ya.abs(), yb.abs()).clamp_min(ph->floor);
  const at::Tensor bound = amplitude.mul(2 * ph->eps * phase);
  const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
  const at::Tensor diff = ya.sub(yb).abs();
  if (!at::all(at::logical_or(diff.le(bound.add(tol.atol)), at::isfinite(diff).logical_not()))
           .item<bool>()) {
    return std::nullopt;
  }
  return RuleMatch{"phase_rounding",
                   absl::StrCat("|A - B| is within 2 eps·phase·amplitude: the kernel forms a phase "
                                "up to ", graph::FormatFloat(phase),
                                " in the dtype, and its rounding moves the result that much")};
}

}  // namespace rules
}  // namespace divfuzz::oracles
