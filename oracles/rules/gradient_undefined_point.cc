// gradient_undefined_point: the autograd notes, "Gradients for
// non-differentiable functions", rule 5: "If the function is not defined
// (sqrt(-1), log(-1) or most functions when the input is NaN, for example)
// then the value used as the gradient is arbitrary". The same holds where
// the incoming gradient v is not finite and the float64 gradient is not
// either: L = sum(v * y) is then undefined (inf * 0, inf - inf), and which
// non-finite value (or 0, for a kernel that selects rather than multiplies)
// a side gives is arbitrary.
#include <ATen/ATen.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {
namespace {

// A NaN among the forward node's inputs (an elementwise op: at the element).
bool NanInput(const GradientContext& c, const GradientSide& s) {
  for (const auto& [name, t] : s.inputs) {
    if (!t.defined() || !(t.is_floating_point() || t.is_complex())) continue;
    at::Tensor nan = at::isnan(t);
    if (c.pointwise && t.sizes() == s.outgoing.sizes() && c.d.element >= 0) {
      if (c.d.element < t.numel() && nan.reshape(-1)[c.d.element].item<bool>()) return true;
    } else if (!c.pointwise && nan.any().item<bool>()) {
      return true;
    }
  }
  return false;
}

// A non-finite incoming gradient feeding the divergence's element (an
// elementwise op: at that element) where the float64 gradient is not finite.
bool NonFiniteIncoming(const GradientContext& c, const GradientSide& s) {
  if (std::isfinite(ElementAt(c.a.witness, c.d.element)) &&
      std::isfinite(ElementAt(c.b.witness, c.d.element))) {
    return false;
  }
  for (const at::Tensor& v : s.incoming) {
    if (!v.defined() || !(v.is_floating_point() || v.is_complex())) continue;
    at::Tensor bad = at::isfinite(v).logical_not();
    if (c.pointwise && v.sizes() == s.outgoing.sizes() && c.d.element >= 0) {
      if (c.d.element < v.numel() && bad.reshape(-1)[c.d.element].item<bool>()) return true;
    } else if (!c.pointwise && bad.any().item<bool>()) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<RuleMatch> gradient_undefined_point(const GradientContext& c) {
  if (NanInput(c, c.a) || NanInput(c, c.b)) {
    return RuleMatch{"gradient_undefined_point",
                     absl::StrCat(c.node.QualifiedName(), " reads a NaN there: the autograd notes "
                                  "leave the gradient of a function where it is not defined "
                                  "arbitrary")};
  }
  if (NonFiniteIncoming(c, c.a) || NonFiniteIncoming(c, c.b)) {
    return RuleMatch{"gradient_undefined_point",
                     absl::StrCat("the incoming gradient of ", c.node.QualifiedName(),
                                  " is not finite there and neither is the float64 gradient: "
                                  "sum(v * y) is undefined (inf * 0, inf - inf), so the value "
                                  "used as the gradient is arbitrary")};
  }
  return std::nullopt;
}

}  // namespace divfuzz::oracles::rules
