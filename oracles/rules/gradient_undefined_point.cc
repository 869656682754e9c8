// gradient_undefined_point: the autograd notes, "Gradients for
// non-differentiable functions", rule 5: "If the function is not defined
// (sqrt(-1), log(-1) or most functions when the input is NaN, for example)
// then the value used as the gradient is arbitrary". The same holds where
// the incoming gradient v is not finite and the float64 gradient is not
// either: L = sum(v * y) is then undefined (inf * 0, inf - inf), and which
// non-finite value (or 0, for a kernel that selects rather than multiplies)
// a side gives is arbitrary.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "ops/catalogue.h"
#include "ops/op_spec.h"
#include "oracles/rules/gradient_rule.h"
#include "oracles/rules/rule.h"

namespace divfuzz::oracles::rules {
namespace {

// A NaN among the forward node's inputs (an elementwise op: at the element);
// for any other op, a NaN or an infinity among its inputs where the float64
// gradient at the element is NaN: the non-finite input reached that element
// (session 35: a layer_norm weight of inf makes the gradient inf - inf; a
// NaN in another channel of a batch_norm does not excuse this channel).
bool NonFiniteInput(const GradientContext& c, const GradientSide& s) {
  const bool nan_gradient = std::isnan(ElementAt(c.a.witness, c.d.element)) ||
                            std::isnan(ElementAt(c.b.witness, c.d.element));
  for (const auto& [name, t] : s.inputs) {
    if (!t.defined() || !(t.is_floating_point() || t.is_complex())) continue;
    if (c.pointwise && t.sizes() == s.outgoing.sizes() && c.d.element >= 0) {
      if (c.d.element < t.numel() && at::isnan(t).reshape(-1)[c.d.element].item<bool>()) {
        return true;
      }
    } else if (!c.pointwise && nan_gradient && at::isfinite(t).logical_not().any().item<bool>()) {
      return true;
    }
  }
  return false;
}

// A non-finite incoming gradient feeding the divergence's element (an
// elementwise op: at that element) where the float64 gradient is not finite.
bool NonFiniteIncoming(const GradientContext& c, const GradientSide& s) {
  // An op that selects input elements (max, min, median: FunctionsManual's
  // evenly_distribute_backward) gives the unselected ones 0 on the CPU
  // (masked_fill) and 0 * NaN on CUDA (mask * grad): the float64 witness
  // runs the CPU's branch, so a side's non-finite value there is judged
  // against the incoming gradient alone (session 35: six Max/Min/Median
  // class splits, judged expected).
  const bool selects = (c.hints & ops::kSelectsInputs) != 0 &&
                       (!std::isfinite(ElementAt(c.a.outgoing, c.d.element)) ||
                        !std::isfinite(ElementAt(c.b.outgoing, c.d.element)));
  if (!selects && std::isfinite(ElementAt(c.a.witness, c.d.element)) &&
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

// An elementwise op whose forward result is NaN at the element on both sides
// from inputs that are not: the function is not defined there (log(-1) in
// xlogy's other argument, digamma at a pole), rule 5's own examples
// (session 36: DigammaBackward0 at -3 and XlogyBackward1 at y = -2.03,
// judged expected; the float64 gradient at a pole runs the same reflection
// formula and is no witness).
bool NotDefinedThere(const GradientContext& c) {
  if (!c.pointwise || c.d.element < 0) return false;
  auto nan_at = [&](const GradientSide& s) {
    for (const at::Tensor& r : s.results) {
      if (r.defined() && !r.is_complex() && r.numel() == s.outgoing.numel() &&
          std::isnan(ElementAt(r, c.d.element))) {
        return true;
      }
    }
    return false;
  };
  return nan_at(c.a) && nan_at(c.b);
}

// A convolution's or matrix product's backward is one too (a transposed
// convolution, a product with the other operand): with a NaN operand, a term
// NaN·0 arises where its algorithm multiplies zeros it inserts (stride gaps,
// padding) or not, as the forward's products (nonfinite_inputs). Session 46's
// oneDNN bf16 ConvolutionBackward0 gave NaN at an input element no tap reads,
// where the float64 gradient is 0 (judged expected; pytorch#12484, #157237
// open). Only a NaN side: a finite value off is no NaN term.
// Whether a floating input of either side, by name, holds what `holds` looks for.
static bool AnySideInput(const GradientContext& c,
                         const std::function<bool(const std::string&, const at::Tensor&)>& holds) {
  for (const GradientSide* s : {&c.a, &c.b}) {
    for (const auto& [name, t] : s->inputs) {
      if (t.defined() && t.is_floating_point() && holds(name, t)) return true;
    }
  }
  return false;
}

static bool NanOperandOfAProduct(const GradientContext& c) {
  const ops::OpSpec* spec = ops::FindOp(c.node.QualifiedName());
  if (spec == nullptr || (spec->family != "conv" && spec->family != "matmul") ||
      c.d.cls != DivergenceClass::kClassSplit ||
      !(std::isnan(ElementAt(c.a.outgoing, c.d.element)) ||
        std::isnan(ElementAt(c.b.outgoing, c.d.element)))) {
    return false;
  }
  return AnySideInput(c, [](const std::string&, const at::Tensor& t) {
    return at::isnan(t).any().item<bool>();
  });
}

// grid_sampler with reflection padding reading a non-finite coordinate:
// reflecting +-inf or NaN defines no position (pytorch#24823, open: "No idea
// what the correct behavior should be. Maybe NaN"; the forward's
// extremal_values), so the forward is not defined there and rule 5 leaves
// its gradient arbitrary. Session 51's 89ab920e, judged expected: the CPU's
// bf16 backward wrote NaN through an index cast from NaN where its f32 and
// CUDA's skip the tap. Zeros and border padding define every position (0,
// the border value): a NaN there stays a finding (session 48's
// cpu-gridsampler-nonfinite-grid-nan, judged real), as does a crash.
// Likewise a finite coordinate whose unnormalized position rounds by more
// than reflection's period (the forward's extremal_values, pytorch#51911):
// session 52's e5478719, a grid x of 3.0e38 that CUDA's (x + 1)·W overflows
// to inf and drops, judged expected.
static bool ReflectedUndefinedCoordinate(const GradientContext& c) {
  const ops::OpSpec* spec = ops::FindOp(c.node.QualifiedName());
  if (spec == nullptr || !ReflectsGrid(*spec, c.node) ||
      (c.d.cls != DivergenceClass::kClassSplit && c.d.cls != DivergenceClass::kTolerance)) {
    return false;
  }
  const size_t pos = static_cast<size_t>(spec->grid.arg);
  if (pos >= c.node.args.size() || c.node.args[pos].value.kind != graph::Literal::Kind::kValue) {
    return false;
  }
  const std::string& grid = c.node.args[pos].value.s;
  const std::string& input = c.node.args[0].value.s;
  int64_t size = 0;  // the largest spatial size of the sampled input
  for (const GradientSide* s : {&c.a, &c.b}) {
    auto x = s->inputs.find(input);
    for (int64_t k = 2; x != s->inputs.end() && k < x->second.dim(); ++k) {
      size = std::max(size, x->second.size(k));
    }
  }
  return AnySideInput(c, [&](const std::string& name, const at::Tensor& t) {
    if (name != grid || t.numel() == 0) return false;
    if (at::isfinite(t).logical_not().any().item<bool>()) return true;
    const double gmax = t.to(at::kDouble).abs().max().item<double>();
    return size > 0 && ReflectionLosesPosition(gmax, size, c.dtype).has_value();
  });
}

std::optional<RuleMatch> gradient_undefined_point(const GradientContext& c) {
  if (ReflectedUndefinedCoordinate(c)) {
    return RuleMatch{"gradient_undefined_point",
                     absl::StrCat(c.node.QualifiedName(), " reflects a non-finite grid "
                                  "coordinate, or one whose unnormalized position rounds by more "
                                  "than the period, which defines no position (pytorch#24823, "
                                  "pytorch#51911): the "
                                  "autograd notes leave the gradient of a function where it is "
                                  "not defined arbitrary")};
  }
  if (NanOperandOfAProduct(c)) {
    return RuleMatch{"gradient_undefined_point",
                     absl::StrCat("the backward of ", c.node.QualifiedName(), " is itself a "
                                  "product of an operand that holds a NaN: a NaN·0 term is "
                                  "multiplied or skipped as each algorithm chooses (zeros it "
                                  "inserts for strides and padding)")};
  }
  if (NotDefinedThere(c)) {
    return RuleMatch{"gradient_undefined_point",
                     absl::StrCat(c.node.QualifiedName(), " is NaN there on both sides from "
                                  "inputs that are not (the function is not defined there: "
                                  "log(-1), a pole): the autograd notes leave its gradient "
                                  "arbitrary")};
  }
  if (NonFiniteInput(c, c.a) || NonFiniteInput(c, c.b)) {
    return RuleMatch{"gradient_undefined_point",
                     absl::StrCat(c.node.QualifiedName(), " reads a NaN there, or an infinity "
                                  "that makes the float64 gradient there NaN: the autograd notes "
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
