// extremal_values: an intermediate over- or underflows though the result fits.
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html),
// "Extremal values": "When inputs contain large values such that intermediate
// results may overflow the range of the used datatype, the end result may
// overflow too, even though it is representable in the original datatype."
#include "oracles/rules/rule.h"

#include <ATen/ops/isfinite.h>
#include <ATen/ops/view_as_real.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "graph/printer.h"
#include "ops/kernel_classes.h"

namespace divfuzz::oracles::rules {

using graph::DType;
using graph::Literal;

namespace {

// grid_sampler. With reflection padding a coordinate g is folded into the
// input by its period 2·size after it is unnormalized to (g + 1)·size/2 in
// float (double for f64): where one unit in the last place of that exceeds
// the period, or it overflows, no position is defined by it (pytorch#51911,
// #24823). Zeros and border padding define every out-of-range position (0,
// the border value), huge or infinite, so they are not excused. Bicubic's
// taps sum with weights of up to 1.375 in magnitude per axis (the CPU sums a
// half row in half): past the dtype's range that overflows though the
// sample, a weighted mean of the input, fits.
std::optional<RuleMatch> GridOverflow(const Context& c) {
  if (c.spec.grid.arg < 0 || !graph::IsFloating(c.dtype)) return std::nullopt;
  const at::Tensor input = c.Input(0), grid = c.Input(static_cast<size_t>(c.spec.grid.arg));
  if (!input.defined() || !grid.defined() || input.dim() < 3 || grid.numel() == 0) {
    return std::nullopt;
  }
  auto mode_of = [&](int pos, const char* name) {
    return IntArgOr(c.node, ArgPos(pos), name, -1);
  };
  const double top = graph::MaxFinite(c.dtype);
  if (ReflectsGrid(c.spec, c.node)) {
    int64_t size = 1;
    for (int64_t k = 2; k < input.dim(); ++k) size = std::max(size, input.size(k));
    // The coordinates of the diverging sample: output [n, c, out...] reads
    // grid[n, out..., :] (all of them when the element is unknown).
    at::Tensor g = grid.to(at::kDouble).abs();
    const int64_t k = g.size(-1), batch = g.size(0);
    const int64_t samples = g.numel() / std::max<int64_t>(1, k * batch);
    const int64_t channels = input.size(1);
    const int64_t e = c.d.element;
    if (e >= 0 && samples > 0 && e < batch * channels * samples) {
      g = g.reshape({batch, samples, k})[e / (channels * samples)][e % samples];
    }
    const at::Tensor not_nan = g.masked_select(g.eq(g));
    const double gmax = not_nan.numel() == 0 ? 0 : not_nan.max().item<double>();
    if (const std::optional<double> position = ReflectionLosesPosition(gmax, size, c.dtype)) {
      return RuleMatch{"extremal_values",
                       absl::StrCat("a grid coordinate of magnitude ", graph::FormatFloat(gmax),
                                    " is unnormalized to ", graph::FormatFloat(*position),
                                    ", whose rounding exceeds reflection padding's period 2·",
                                    size, ": the folded position is not defined by it "
                                    "(pytorch#51911)")};
    }
  }
  const double axes = static_cast<double>(input.dim()) - 2;
  if (mode_of(c.spec.grid.mode_arg, "interpolation_mode") != 2) return std::nullopt;
  const double big = FiniteAbsMax(input);
  if (big * std::pow(1.375, axes) > top) {
    return RuleMatch{"extremal_values",
                     absl::StrCat("max|input| = ", graph::FormatFloat(big),
                                  ": bicubic taps weighted up to 1.375 per axis sum past ",
                                  std::string(graph::DTypeName(c.dtype)),
                                  "'s range before they cancel, though the sample fits")};
  }
  return std::nullopt;
}

}  // namespace

// "Extremal values" (PyTorch's numerical-accuracy notes): a square, product
// or quotient inside the op overflows (or all squares underflow) in the
// accumulate dtype (float for f16/bf16/f32, double for f64) though the
// result fits; linear algebra scales by values near the maximum.
std::optional<RuleMatch> extremal_values(const Context& c) {
  if (c.d.cls != DivergenceClass::kTolerance && c.d.cls != DivergenceClass::kClassSplit) {
    return std::nullopt;
  }
  // The result sits at the overflow threshold: within 2 eps of the largest
  // finite value, so an accurate kernel (CUDA's hypot is within 2 ulp) may
  // round it to inf. Not for IEEE's correctly rounded operations, nor for
  // sums, products and scans, whose rounding has its own bound.
  const uint32_t own_bound = ops::kCorrectlyRounded | ops::kSumsInside | ops::kCancellingReduction |
                             ops::kCancellingMatmul | ops::kProductReduction | ops::kScanCarry;
  if (c.d.cls == DivergenceClass::kClassSplit && graph::IsFloating(c.dtype) &&
      !(c.spec.hints & own_bound)) {
    for (const std::string* ref : {&c.d.reference_a, &c.d.reference_b}) {
      char* end = nullptr;
      const double r = std::strtod(ref->c_str(), &end);
      const double top = graph::MaxFinite(c.dtype);
      if (end != ref->c_str() && std::isfinite(r) && std::fabs(r) >= top * (1 - 2 * graph::Epsilon(c.dtype)) &&
          (std::isinf(std::strtod(c.d.value_a.c_str(), nullptr)) ||
           std::isinf(std::strtod(c.d.value_b.c_str(), nullptr)))) {
        return RuleMatch{"extremal_values",
                         absl::StrCat("the exact result ", *ref, " lies within 2 eps of ",
                                      std::string(graph::DTypeName(c.dtype)),
                                      "'s largest value: a kernel within its documented ulp error "
                                      "may round it to inf")};
      }
    }
  }
  if (std::optional<RuleMatch> m = GridOverflow(c)) return m;
  const bool squares = (c.spec.hints & ops::kSquaresInside) ||
                       ((c.spec.hints & ops::kComplexSquares) && graph::IsComplex(c.dtype));
  const bool linalg = (c.spec.hints & (ops::kConditioned | ops::kDecomposition)) ||
                      c.spec.family == "linalg" || c.spec.family == "decomposition";
  // Ops that multiply two of their inputs inside (matrix products,
  // convolutions, attention's q·k, an RNN cell's x·W): two or more floating
  // tensor arguments.
  int floating_args = 0;
  for (DType d : c.ArgDTypes()) floating_args += graph::IsFloating(d) || graph::IsComplex(d);
  const bool products =
      (c.spec.hints & (ops::kSumsInside | ops::kCancellingMatmul | ops::kMultipliesInputs)) &&
      floating_args >= 2;
  double scale = c.spec.inside_scale;
  if (c.spec.inside_scale_pow10_arg >= 0) {
    const Literal* d = ops::FindArg(c.node, c.spec.inside_scale_pow10_arg, "decimals");
    scale = d != nullptr && d->kind == Literal::Kind::kInt ? std::pow(10.0, std::abs(static_cast<double>(d->i)))
                                                           : 0;
  }
  if (!squares && !linalg && !products && scale <= 0) return std::nullopt;
  double big = 0, second = 0;  // the two largest inputs' largest finite |x|
  int64_t n = 1;
  for (const auto& [name, t] : c.inputs) {
    if (!t.defined() || t.numel() == 0) continue;
    at::Tensor v = t.is_complex() ? at::view_as_real(t.contiguous()) : t;
    if (!at::isFloatingType(v.scalar_type())) continue;
    const at::Tensor a = v.abs();
    const at::Tensor finite = a.masked_select(at::isfinite(a));
    if (finite.numel() == 0) continue;
    const double m = finite.max().item<double>();
    second = std::max(second, std::min(big, m));
    big = std::max(big, m);
    n = std::max<int64_t>(n, t.dim() > 0 ? t.size(-1) : 1);
  }
  // One tensor passed twice (matmul(x, x)) multiplies by itself.
  if (products && second == 0) second = big;
  const bool f64 = c.dtype == DType::kF64 || c.dtype == DType::kC128;
  const double acc_max = f64 ? std::numeric_limits<double>::max() : std::numeric_limits<float>::max();
  const char* acc = f64 ? "float64" : "float32";
  if (scale > 0 && c.d.cls == DivergenceClass::kClassSplit && big * scale > acc_max) {
    return RuleMatch{"extremal_values",
                     absl::StrCat("max|x| = ", graph::FormatFloat(big), ": the kernel's ",
                                  graph::FormatFloat(scale), "·x overflows ", acc,
                                  " inside the op though the result may fit")};
  }
  if (products && big * second > acc_max) {
    return RuleMatch{"extremal_values",
                     absl::StrCat("max|x| = ", graph::FormatFloat(big), " and ",
                                  graph::FormatFloat(second), " in two inputs: their product "
                                  "overflows ", acc, " inside the op though the result may fit")};
  }
  // A p-norm (renorm, norm(p=3), dist(x, y, 3)) raises |x| to p, not 2.
  const double power = squares ? ops::NormOrderOf(c.node).value_or(2) : 2;
  if (squares && big > 0 && power * std::log(big) > std::log(acc_max)) {
    return RuleMatch{"extremal_values",
                     absl::StrCat("max|x| = ", graph::FormatFloat(big), ": its ",
                                  power == 2 ? std::string("square") : absl::StrCat("power ", power),
                                  " overflows ", acc, " inside the op though the result may fit")};
  }
  if (squares && big > 0 && big * big < graph::SmallestNormal(f64 ? DType::kF64 : DType::kF32)) {
    return RuleMatch{"extremal_values",
                     absl::StrCat("max|x| = ", graph::FormatFloat(big), ": every square underflows ",
                                  acc, " inside the op")};
  }
  if (linalg && big > acc_max / (4.0 * static_cast<double>(n))) {
    return RuleMatch{"extremal_values",
                     absl::StrCat("max|x| = ", graph::FormatFloat(big), " is within a factor 4n of ",
                                  acc, "'s maximum: elimination and scaling overflow or not "
                                  "depending on the algorithm")};
  }
  return std::nullopt;
}

}  // namespace divfuzz::oracles::rules
