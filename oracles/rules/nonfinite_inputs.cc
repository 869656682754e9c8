// nonfinite_inputs: non-finite inputs where PyTorch gives no guarantee.
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html), "Linear
// algebra (torch.linalg)", "Non-finite values": "The external libraries
// (backends) that ``torch.linalg`` uses provide no guarantees on their
// behaviour when the inputs have non-finite values like ``inf`` or ``NaN``.
// As such, neither does PyTorch. The operations may return a tensor with
// non-finite values, or raise an exception, or even segfault." FFTs hand
// their input to such libraries too (MKL/pocketfft, cuFFT). For reductions it
// rests on the notes' opening: "floating point addition and multiplication
// are not associative, so the order of the operations affects the results":
// with infinities of both signs, inf - inf appears in some orders, and an
// exponential normalizer or a statistic subtracts an intermediate (its max,
// its mean) that turns inf into inf - inf or not by the algorithm.
//
// Nothing in the notes excuses a matrix product or a convolution (not
// torch.linalg) whose terms are defined in IEEE arithmetic whatever the
// order: where no term can be NaN (no NaN, no 0·inf) and every infinite term
// has one sign, each output element is that infinity or finite, so -inf
// convolved with positive weights is -inf and NaN there is a bug. They are
// excused only where a term may be NaN or infinite terms of both signs meet.
#include "oracles/rules/rule.h"

#include <ATen/ops/isnan.h>
#include <ATen/ops/view_as_real.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <vector>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "exec/target.h"
#include "ops/kernel_classes.h"

namespace divfuzz::oracles::rules {

namespace {

// Floating inputs of the root, as side A had them: which non-finite kinds.
struct NonFinite {
  bool nan = false, pos_inf = false, neg_inf = false;
  bool Any() const { return nan || pos_inf || neg_inf; }
};
NonFinite ScanNonFinite(const Context& c) {
  NonFinite n;
  for (const auto& [name, t] : c.inputs) {
    if (!t.defined() || t.numel() == 0) continue;
    at::Tensor v = t;
    if (v.is_complex()) v = at::view_as_real(v.contiguous());
    if (!at::isFloatingType(v.scalar_type())) continue;
    n.nan = n.nan || at::isnan(v).any().item<bool>();
    n.pos_inf = n.pos_inf || v.eq(std::numeric_limits<double>::infinity()).any().item<bool>();
    n.neg_inf = n.neg_inf || v.eq(-std::numeric_limits<double>::infinity()).any().item<bool>();
  }
  return n;
}


// Whether a blamed side returned a finite value at the diverging element
// where the witness computed from its own inputs is NaN.
bool BlamedFiniteWhereWitnessIsNan(const Context& c) {
  auto parse = [](const std::string& text) -> std::optional<double> {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str()) return std::nullopt;
    return v;
  };
  bool any = false;
  for (int side = 0; side < 2; ++side) {
    const exec::RunResult& run = side == 0 ? c.a : c.b;
    if (c.d.wrong_side != "both" && c.d.wrong_side != exec::TargetName(run.target)) continue;
    const std::optional<double> value = parse(side == 0 ? c.d.value_a : c.d.value_b);
    const std::optional<double> ref = parse(side == 0 ? c.d.reference_a : c.d.reference_b);
    if (!value || !ref || !std::isfinite(*value) || !std::isnan(*ref)) return false;
    any = true;
  }
  return any;
}

// Which signs of infinity the product terms of a matrix product or a
// convolution may take, from its floating operands (each argument position
// pairs with every other: a bias is counted as a factor, which only widens
// the set), or nullopt where some term may be NaN (a NaN operand, an infinity
// beside a zero, a complex operand) and no sign is fixed. A convolution's
// input may be padded with zeros.
std::optional<std::set<int>> InfiniteTermSigns(const Context& c) {
  struct Signs {
    bool neg = false, zero = false, pos = false, ninf = false, pinf = false, nan = false;
  };
  std::vector<Signs> operands;
  for (const graph::Argument& arg : c.node.args) {
    std::vector<const graph::Literal*> items{&arg.value};
    for (const graph::Literal& item : arg.value.list) items.push_back(&item);
    for (const graph::Literal* l : items) {
      if (l->kind != graph::Literal::Kind::kValue) continue;
      auto it = c.inputs.find(l->s);
      if (it == c.inputs.end() || !it->second.defined()) continue;
      const at::Tensor& t = it->second;
      if (t.is_complex()) return std::nullopt;
      if (!at::isFloatingType(t.scalar_type())) continue;
      const double inf = std::numeric_limits<double>::infinity();
      Signs s;
      s.nan = at::isnan(t).any().item<bool>();
      s.pinf = t.eq(inf).any().item<bool>();
      s.ninf = t.eq(-inf).any().item<bool>();
      s.zero = t.eq(0).any().item<bool>();
      s.pos = t.gt(0).logical_and(t.lt(inf)).any().item<bool>();
      s.neg = t.lt(0).logical_and(t.gt(-inf)).any().item<bool>();
      if (operands.empty() && c.spec.family == "conv") s.zero = true;  // padding
      operands.push_back(s);
    }
  }
  std::set<int> signs;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Signs& x = operands[i];
    if (x.nan) return std::nullopt;
    if (!x.pinf && !x.ninf) continue;
    for (size_t j = 0; j < operands.size(); ++j) {
      if (j == i) continue;
      const Signs& y = operands[j];
      if (y.zero || y.nan) return std::nullopt;  // 0·inf
      for (int s : {x.pinf ? 1 : 0, x.ninf ? -1 : 0}) {
        if (s == 0) continue;
        if (y.pos || y.pinf) signs.insert(s);
        if (y.neg || y.ninf) signs.insert(-s);
      }
    }
  }
  return signs;
}

// Interpolation (upsample, grid_sampler): each sample is a weighted sum of
// taps of the input (argument 0), and a tap weighted exactly 0 (a sample on a
// grid node) times an infinite input element is NaN in IEEE arithmetic;
// which zero-weight taps a kernel reads is its own choice (the CPU's
// same-size trilinear path reads the node itself, CUDA the next one). Not
// nearest neighbour, which has no weights, and not for infinite coordinates
// in grid_sampler's grid, whose padding modes define the sample.
std::optional<RuleMatch> InterpolationZeroWeights(const Context& c) {
  // NaN on a side is what 0·inf makes; a finite value off by a fifth is not
  // (session 46's CPU bf16 grid_sampler without float intermediates).
  auto nan = [](const std::string& v) { return std::isnan(std::strtod(v.c_str(), nullptr)); };
  if (c.spec.family != "interpolation" || c.d.cls != DivergenceClass::kClassSplit ||
      !(nan(c.d.value_a) || nan(c.d.value_b))) {
    return std::nullopt;
  }
  const bool nearest =
      absl::StrContains(c.node.op, "nearest") ||
      (c.spec.grid.mode_arg >= 0 &&
       IntArgOr(c.node, ArgPos(c.spec.grid.mode_arg), "interpolation_mode", -1) == 1);
  const at::Tensor input = c.Input(0);
  if (nearest || !input.defined() || !at::isFloatingType(input.scalar_type())) {
    return std::nullopt;
  }
  const bool pos = input.eq(std::numeric_limits<double>::infinity()).any().item<bool>();
  const bool neg = input.eq(-std::numeric_limits<double>::infinity()).any().item<bool>();
  if (!pos && !neg) return std::nullopt;
  return RuleMatch{"nonfinite_inputs",
                   absl::StrCat("the interpolated input holds ",
                                pos && neg ? "+-inf" : pos ? "+inf" : "-inf",
                                ": each sample weighs its taps, and a tap weighted exactly 0 "
                                "times an infinity is NaN (IEEE), read or skipped as each "
                                "kernel chooses")};
}

}  // namespace

// Linear algebra and FFTs: any failure class. Reductions: infinities of both
// signs in a plain sum; any infinity through an intermediate an exponential
// normalizer or a statistic subtracts. Matrix products and convolutions:
// only where a term may be NaN or infinite terms of both signs meet. A NaN
// term makes a sum, a dot product or a normalizer NaN in every order: outside
// linear algebra and FFTs, a side that returns a finite value where the
// agreeing witnesses say NaN is not excused.
std::optional<RuleMatch> nonfinite_inputs(const Context& c) {
  // An interpolation subtracts no max or mean: only its zero-weight taps.
  if (c.spec.family == "interpolation") return InterpolationZeroWeights(c);
  if (!(c.spec.hints & ops::kNoNonFiniteGuarantee)) return std::nullopt;
  const NonFinite n = ScanNonFinite(c);
  if (!n.Any()) return std::nullopt;
  const std::string what =
      absl::StrCat(n.nan ? "NaN" : "", n.nan && (n.pos_inf || n.neg_inf) ? " and " : "",
                   n.pos_inf && n.neg_inf ? "+-inf" : n.pos_inf ? "+inf" : n.neg_inf ? "-inf" : "");
  const bool linalg = ops::NonFiniteMayFailAnyway(c.spec);
  if (linalg) {
    return RuleMatch{"nonfinite_inputs",
                     absl::StrCat("the input holds ", what, ": PyTorch's numerical-accuracy notes: "
                                  "the backends of linear algebra (and FFTs) \"provide no "
                                  "guarantees on their behaviour when the inputs have non-finite "
                                  "values like inf or NaN. As such, neither does PyTorch.\"")};
  }
  if (n.nan && !n.pos_inf && !n.neg_inf && BlamedFiniteWhereWitnessIsNan(c)) {
    return std::nullopt;
  }
  const bool products = (c.spec.hints & (ops::kCancellingMatmul | ops::kTf32Sensitive)) ||
                        c.spec.family == "matmul" || c.spec.family == "conv";
  if (products) {
    const std::optional<std::set<int>> signs = InfiniteTermSigns(c);
    if (signs && signs->size() <= 1) return std::nullopt;  // IEEE fixes every element
    return RuleMatch{"nonfinite_inputs",
                     absl::StrCat("the input holds ", what, ": ",
                                  signs ? "infinite product terms of both signs meet (inf - inf), "
                                          "in an order each kernel chooses"
                                        : "a product term may be NaN (0 * inf, a NaN), which "
                                          "libraries may skip or keep (BLAS skips zero factors)")};
  }
  const bool plain_sum = c.spec.hints & (ops::kCancellingReduction | ops::kProductReduction);
  if (plain_sum ? (n.pos_inf && n.neg_inf) : (n.pos_inf || n.neg_inf)) {
    return RuleMatch{"nonfinite_inputs",
                     absl::StrCat("the input holds ", what, ": ",
                                  plain_sum ? "inf - inf appears or not depending on the order"
                                            : "the op's intermediate (a max subtracted, a mean "
                                              "removed) turns inf into inf - inf or not "
                                              "depending on the algorithm")};
  }
  return std::nullopt;
}

}  // namespace divfuzz::oracles::rules
