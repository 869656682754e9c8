// gradient_undefined_point: the autograd notes, "Gradients for
// non-differentiable functions", rule 5: "If the function is not defined
// (sqrt(-1), log(-1) or most functions when the input is NaN, for example)
// then the value used as the gradient is arbitrary".
#include <ATen/ATen.h>

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

}  // namespace

std::optional<RuleMatch> gradient_undefined_point(const GradientContext& c) {
  if (NanInput(c, c.a) || NanInput(c, c.b)) {
    return RuleMatch{"gradient_undefined_point",
                     absl::StrCat(c.node.QualifiedName(), " reads a NaN there: the autograd notes "
                                  "leave the gradient of a function where it is not defined "
                                  "arbitrary")};
  }
  return std::nullopt;
}

}  // namespace divfuzz::oracles::rules
