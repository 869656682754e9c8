// gradient_interpolation_weights: the upsample kernels (linear, bilinear,
// bicubic, trilinear) compute each source coordinate and its interpolation
// weights in their accumulation type (float32 for f16, bf16 and f32) by
// design: src = (in/out)·(dst + 1/2) - 1/2, t = src - floor(src), and the
// weights as polynomials of t (bicubic's cubic convolution with A = -0.75
// cancels 3.0 - 3.0 in one of them). The float64 backward forms them in
// double. A weight is then off by at most 1.5·3u·(in + 1) + 16u (|dw/dt| <=
// 1.5; the polynomial's own rounding), so input element i's gradient by that
// times S_i = sum|g| over the outputs whose stencil reaches i (counted as
// often as border clamping repeats it), plus the summation bound
// 2·n_i·u·1.25·S_i over its n_i taps.
// Each side within that of its own float64 backward is expected (session 35:
// bicubic f32 buckets where the CPU, without FMA, was 72-228 f32 steps off and
// CUDA, with FMA, 30-173; judged expected, the float weights by design).
#include <ATen/ATen.h>

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/infer.h"
#include "oracles/compare.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {
namespace {

// The interpolating upsample ops, by base name: their spatial dims and the
// stencil's reach (taps within `reach` of the source coordinate).
struct Interpolation {
  const char* base;
  int dims;
  int reach;
};
constexpr Interpolation kInterpolations[] = {
    {"upsample_linear1d", 1, 1},
    {"upsample_bilinear2d", 2, 1},
    {"upsample_trilinear3d", 3, 1},
    {"upsample_bicubic2d", 2, 2},
};

// M[i, j]: how many taps of output j land on input i along one dim of `in`
// inputs and `out` outputs: taps base - reach + 1 .. base + reach around the
// source coordinate's floor (taps past the border clamp onto it).
at::Tensor Support(int64_t in, int64_t out, int reach, bool align_corners) {
  at::Tensor m = at::zeros({in, out}, at::kDouble);
  auto acc = m.accessor<double, 2>();
  for (int64_t j = 0; j < out; ++j) {
    const double src = align_corners ? (out > 1 ? static_cast<double>(j) * (in - 1) / (out - 1) : 0)
                                     : (static_cast<double>(in) / out) * (j + 0.5) - 0.5;
    const int64_t base = static_cast<int64_t>(std::floor(src));
    for (int64_t tap = base - reach + 1; tap <= base + reach; ++tap) {
      const int64_t i = std::min<int64_t>(std::max<int64_t>(tap, 0), in - 1);
      acc[i][j] += 1;
    }
  }
  return m;
}

}  // namespace

std::optional<RuleMatch> gradient_interpolation_weights(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kTolerance || c.node.overload == "vec") return std::nullopt;
  const Interpolation* op = nullptr;
  for (const Interpolation& k : kInterpolations) {
    if (c.node.op == std::string("aten::") + k.base) op = &k;
  }
  const std::vector<std::string> uses = c.node.Uses();
  if (op == nullptr || uses.empty() || c.a.incoming.empty() || !c.a.incoming[0].defined()) {
    return std::nullopt;
  }
  auto x = c.a.inputs.find(uses[0]);
  if (x == c.a.inputs.end() || x->second.dim() != op->dims + 2 ||
      c.a.incoming[0].dim() != op->dims + 2 || c.a.outgoing.sizes() != x->second.sizes()) {
    return std::nullopt;
  }
  const graph::Literal* ac = ops::FindArg(c.node, 2, "align_corners");
  const bool align_corners = ac != nullptr && ac->kind == graph::Literal::Kind::kBool && ac->b;
  // Explicit scales move the source coordinates off in/out: not modelled.
  static const std::vector<std::vector<const char*>> kScales = {
      {"scales"}, {"scales_h", "scales_w"}, {"scales_d", "scales_h", "scales_w"}};
  const std::vector<const char*>& names = kScales[op->dims - 1];
  for (size_t k = 0; k < names.size(); ++k) {
    const graph::Literal* scale = ops::FindArg(c.node, 3 + k, names[k]);
    if (scale != nullptr && scale->kind != graph::Literal::Kind::kNone) return std::nullopt;
  }
  const double u = c.dtype == graph::DType::kF64 ? graph::Epsilon(graph::DType::kF64)
                                                 : graph::Epsilon(graph::DType::kF32);
  // S = sum|g| over each input's stencil and n its number of taps, one
  // spatial dim at a time.
  at::Tensor s = c.a.incoming[0].to(at::kDouble).abs();
  s = at::where(at::isfinite(s), s, at::zeros_like(s));
  at::Tensor n = at::ones_like(s);
  int64_t largest = 1;
  for (int d = 0; d < op->dims; ++d) {
    const int64_t dim = 2 + d;
    const int64_t in = x->second.size(dim), out = s.size(dim);
    largest = std::max(largest, in);
    const at::Tensor m = Support(in, out, op->reach, align_corners).transpose(0, 1);
    s = at::matmul(s.movedim(dim, -1), m).movedim(-1, dim);
    n = at::matmul(n.movedim(dim, -1), m).movedim(-1, dim);
  }
  // A weight is off by 4.5·u·(in + 1) (the source coordinate's rounding
  // through |dw/dt| <= 1.5) plus 16u (its polynomial's); the sum of n terms
  // of |w| <= 1.25 by 2·n·u·1.25·S.
  const double weight_error = 4.5 * u * static_cast<double>(largest + 1) + 16 * u;
  const at::Tensor bound = s * (weight_error + 2.5 * u * n);
  const double atol = c.policy.For(c.node.QualifiedName(), c.dtype).atol;
  for (const GradientSide* side : {&c.a, &c.b}) {
    if (!side->witness.defined() || side->witness.sizes() != bound.sizes()) return std::nullopt;
    const at::Tensor off = (side->outgoing.to(at::kDouble) - side->witness.to(at::kDouble)).abs();
    const at::Tensor ok = (off <= bound + atol) | at::isfinite(off).logical_not();
    if (!ok.all().item<bool>()) return std::nullopt;
  }
  return RuleMatch{"gradient_interpolation_weights",
                   absl::StrCat(c.node.QualifiedName(), " forms its interpolation weights in its "
                                "accumulation type by design: each side is within (4.5·u·(",
                                largest, " + 1) + 16u + 2.5·n·u) times sum|g| over each input's "
                                "stencil of n taps of its own float64 backward")};
}

}  // namespace divfuzz::oracles::rules
