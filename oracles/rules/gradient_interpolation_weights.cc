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

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/catalogue.h"
#include "ops/infer.h"
#include "oracles/compare.h"
#include "oracles/rules/gradient_rule.h"
#include "oracles/rules/rule.h"

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

// grid_sampler's samples, as its backward reads them: batch, channels,
// samples per batch, spatial dims (sizes innermost first, as the grid's
// coordinates) and (2·reach)^dims taps per sample. nullopt where the shapes
// do not fit or past a size worth judging this way.
struct GridLayout {
  int64_t batch = 0, channels = 0, samples = 0, dims = 0, taps = 0;
  std::vector<int64_t> sizes;
};
std::optional<GridLayout> LayoutOf(const at::Tensor& x, const at::Tensor& grid, const at::Tensor& g,
                                   int reach) {
  GridLayout l;
  l.dims = x.dim() - 2;
  if (grid.dim() != x.dim() || grid.size(-1) != l.dims || g.dim() != x.dim() ||
      g.size(0) != x.size(0) || g.size(1) != x.size(1) || grid.size(0) != x.size(0)) {
    return std::nullopt;
  }
  l.batch = x.size(0), l.channels = x.size(1);
  l.samples = g.numel() / std::max<int64_t>(1, l.batch * l.channels);
  l.taps = static_cast<int64_t>(std::pow(2 * reach, static_cast<double>(l.dims)));
  if (l.batch * l.channels * l.samples * l.taps > 2000000 ||
      grid.numel() != l.batch * l.samples * l.dims) {
    return std::nullopt;
  }
  for (int64_t d = x.dim() - 1; d >= 2; --d) l.sizes.push_back(x.size(d));
  return l;
}

// grid_sample's unnormalization of a coordinate g in [-1, 1] over `size`.
double Unnormalized(double g, double size, bool align_corners) {
  return align_corners ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2;
}

// Each sample's unnormalized coordinates (`sample`), then each of its taps
// (`tap`): the input element it reads (flat, clamped as border padding does;
// taps zeros padding drops only shrink the sums) and its unclamped position
// per dim. false at a sample with no position (a non-finite coordinate).
using SampleVisit = std::function<void(int64_t b, int64_t j, const std::vector<double>& src)>;
using TapVisit = std::function<void(int64_t b, int64_t j, int64_t flat,
                                    const std::vector<int64_t>& position)>;
bool WalkTaps(const GridLayout& l, const at::Tensor& grid, int reach, bool align_corners,
              const SampleVisit& sample, const TapVisit& tap) {
  const at::Tensor gr = grid.to(at::kDouble).contiguous().reshape({l.batch, l.samples, l.dims});
  auto gacc = gr.accessor<double, 3>();
  std::vector<double> src(l.dims);
  std::vector<int64_t> position(l.dims);
  for (int64_t b = 0; b < l.batch; ++b) {
    for (int64_t j = 0; j < l.samples; ++j) {
      for (int64_t d = 0; d < l.dims; ++d) {
        const double gv = gacc[b][j][d];
        const double size = static_cast<double>(l.sizes[d]);
        src[d] = Unnormalized(gv, size, align_corners);
        if (!std::isfinite(src[d])) return false;
      }
      sample(b, j, src);
      for (int64_t t = 0; t < l.taps; ++t) {
        int64_t flat = 0, stride = 1, rest = t;
        for (int64_t d = 0; d < l.dims; ++d) {
          position[d] = static_cast<int64_t>(std::floor(src[d])) + rest % (2 * reach) - reach + 1;
          rest /= 2 * reach;
          flat += std::min<int64_t>(std::max<int64_t>(position[d], 0), l.sizes[d] - 1) * stride;
          stride *= l.sizes[d];
        }
        tap(b, j, flat, position);
      }
    }
  }
  return true;
}

// |g| per batch, channel and sample, non-finite values as 0.
at::Tensor IncomingMagnitudes(const at::Tensor& g, const GridLayout& l) {
  const at::Tensor ga = g.to(at::kDouble).abs().contiguous().reshape({l.batch, l.channels, l.samples});
  return at::where(at::isfinite(ga), ga, at::zeros_like(ga));
}

// grid_sampler's input gradient: for each input element, S = sum|g| over the
// samples whose stencil reaches it, n its number of taps, and the largest
// |coordinate| + size any sample forms; from `grid` and the incoming
// gradient `g`. nullopt past a size worth judging this way.
struct GridStencil {
  at::Tensor s, n;
  double reach_of_coordinates = 0;
};
std::optional<GridStencil> GridSupport(const at::Tensor& x, const at::Tensor& grid,
                                       const at::Tensor& g, int reach, bool align_corners) {
  const std::optional<GridLayout> l = LayoutOf(x, grid, g, reach);
  if (!l) return std::nullopt;
  const at::Tensor ga = IncomingMagnitudes(g, *l);
  at::Tensor s = at::zeros({l->batch, l->channels, x[0][0].numel()}, at::kDouble);
  at::Tensor n = at::zeros_like(s);
  auto aacc = ga.accessor<double, 3>();
  auto sacc = s.accessor<double, 3>();
  auto nacc = n.accessor<double, 3>();
  GridStencil out;
  const bool positioned = WalkTaps(
      *l, grid, reach, align_corners,
      [&](int64_t, int64_t, const std::vector<double>& src) {
        for (int64_t d = 0; d < l->dims; ++d) {
          out.reach_of_coordinates = std::max(out.reach_of_coordinates,
                                              std::fabs(src[d]) + static_cast<double>(l->sizes[d]));
        }
      },
      [&](int64_t b, int64_t j, int64_t flat, const std::vector<int64_t>&) {
        for (int64_t ch = 0; ch < l->channels; ++ch) {
          sacc[b][ch][flat] += aacc[b][ch][j];
          nacc[b][ch][flat] += 1;
        }
      });
  if (!positioned) return std::nullopt;  // no position: not this rule's
  out.s = s.reshape(x.sizes());
  out.n = n.reshape(x.sizes());
  return out;
}

// One tap's weight along one dim at distance s from the coordinate: |w|, the
// magnitude sums H(w) and H(w') of its polynomials' terms (their evaluation
// in float rounds by up to about 4u of those), |w'| and |w''|. Bicubic is
// the cubic convolution with A = -0.75 (GridSampler.h's
// cubic_convolution1/2), linear is 1 - s.
struct TapWeight {
  double w, hw, d, hd, dd;
};
TapWeight WeightAt(double s, bool cubic) {
  s = std::fabs(s);
  if (!cubic) return {std::max(0.0, 1 - s), 1 + s, 1, 0, 0};
  if (s <= 1) {
    return {1.25 * s * s * s - 2.25 * s * s + 1, 1.25 * s * s * s + 2.25 * s * s + 1,
            std::fabs(3.75 * s * s - 4.5 * s), 3.75 * s * s + 4.5 * s, std::fabs(7.5 * s - 4.5)};
  }
  return {std::fabs(-0.75 * s * s * s + 3.75 * s * s - 6 * s + 3),
          0.75 * s * s * s + 3.75 * s * s + 6 * s + 3, std::fabs(-2.25 * s * s + 7.5 * s - 6),
          2.25 * s * s + 7.5 * s + 6, std::fabs(-4.5 * s + 7.5)};
}

// grid_sampler's grid gradient, per sample and coordinate d: a bound on its
// rounding, in units of u. Each term g·x·w'_d·(the other dims' w) is off by
// its polynomials' evaluation, 4·(H(w'_d)·Π|w| + |w'_d|·Σ H(w_e)·Π|w|), by
// the coordinates' rounding 4.5·(|src| + size) through |w''_d| and the
// other dims' |w'_e|, and the terms' sum over n of them by 2·n·|term|; all
// times d(src)/d(grid) (size/2, or (size-1)/2 with align_corners). Taps
// clamp as border padding does. nullopt past a size worth judging this way,
// or a sample with no position.
std::optional<at::Tensor> GridGradientBound(const at::Tensor& x, const at::Tensor& grid,
                                            const at::Tensor& g, bool cubic, bool align_corners) {
  const int reach = cubic ? 2 : 1;
  const std::optional<GridLayout> l = LayoutOf(x, grid, g, reach);
  if (!l) return std::nullopt;
  const int64_t dims = l->dims;
  const at::Tensor ga = IncomingMagnitudes(g, *l);
  const at::Tensor xa = x.to(at::kDouble).abs().contiguous().reshape({l->batch, l->channels, -1});
  at::Tensor t = at::zeros({l->batch, l->samples, dims}, at::kDouble);
  auto aacc = ga.accessor<double, 3>();
  auto xacc = xa.accessor<double, 3>();
  auto tacc = t.accessor<double, 3>();
  std::vector<double> src(dims);
  std::vector<TapWeight> tw(dims);
  const double n = static_cast<double>(l->channels * l->taps);
  double delta = 0;  // the sample's coordinates' rounding, in units of u
  const bool positioned = WalkTaps(
      *l, grid, reach, align_corners,
      [&](int64_t, int64_t, const std::vector<double>& s) {
        src = s;
        delta = 0;
        for (int64_t d = 0; d < dims; ++d) {
          delta = std::max(delta, 4.5 * (std::fabs(src[d]) + static_cast<double>(l->sizes[d])));
        }
      },
      [&](int64_t b, int64_t j, int64_t flat, const std::vector<int64_t>& position) {
        for (int64_t d = 0; d < dims; ++d) {
          tw[d] = WeightAt(src[d] - static_cast<double>(position[d]), cubic);
        }
        double gx = 0;
        for (int64_t ch = 0; ch < l->channels; ++ch) gx += aacc[b][ch][j] * xacc[b][ch][flat];
        for (int64_t d = 0; d < dims; ++d) {
          double others = 1, eval = 0, moved = 0;
          for (int64_t e = 0; e < dims; ++e) {
            if (e == d) continue;
            double rest_w = 1;
            for (int64_t f = 0; f < dims; ++f) {
              if (f != d && f != e) rest_w *= tw[f].w;
            }
            others *= tw[e].w;
            eval += tw[e].hw * rest_w;
            moved += tw[e].d * rest_w;
          }
          const double term = tw[d].d * others;
          const double bound = 4 * (tw[d].hd * others + tw[d].d * eval) +
                               delta * (tw[d].dd * others + tw[d].d * moved) + 2 * n * term;
          const double size = static_cast<double>(l->sizes[d]);
          tacc[b][j][d] += gx * bound * (align_corners ? (size - 1) / 2 : size / 2);
        }
      });
  if (!positioned) return std::nullopt;
  return t.reshape(grid.sizes());
}

// grid_sampler's input gradient in nearest mode (no weights): each sample's
// gradient goes whole to the input element its coordinate rounds to. A
// kernel forms the coordinate in its accumulation type and CUDA's returns it
// in the dtype (grid_sampler_compute_source_index returns scalar_t), so a
// coordinate within that rounding of a half-way point may go to either
// neighbour: 4.5·u·(|src| + size) of the unnormalization in float and, in
// f16/bf16, half a step of the dtype, uh/2·|src| (session 52's 9f253f39: a
// bf16 coordinate 2.50195 correctly rounded to 2.5, which nearbyint sends to
// 2, where the float64 backward's goes to 3; judged expected, while the
// CPU's 2.5137 chained to 2.5 in bf16 stays beyond it, judged real). Each
// element of a side may differ from its own float64 backward by the |g| of
// the samples that may land on it either way, and the summation bound of
// all samples that may land on it. Zeros and border padding only (a
// reflected coordinate's neighbourhood is another element's); nullopt at a
// sample with no position (a non-finite coordinate).
std::optional<at::Tensor> NearestTieAllowance(const at::Tensor& x, const at::Tensor& grid,
                                              const at::Tensor& g, bool align_corners,
                                              bool border, double u, double uh) {
  const std::optional<GridLayout> l = LayoutOf(x, grid, g, 1);
  if (!l) return std::nullopt;
  const at::Tensor ga = IncomingMagnitudes(g, *l);
  auto aacc = ga.accessor<double, 3>();
  const int64_t elements = x[0][0].numel();
  at::Tensor tie = at::zeros({l->batch, l->channels, elements}, at::kDouble);
  at::Tensor s = at::zeros_like(tie), n = at::zeros_like(tie);
  auto tacc = tie.accessor<double, 3>();
  auto sacc = s.accessor<double, 3>();
  auto nacc = n.accessor<double, 3>();
  const at::Tensor gr = grid.to(at::kDouble).contiguous().reshape({l->batch, l->samples, l->dims});
  auto gacc = gr.accessor<double, 3>();
  std::vector<std::vector<int64_t>> candidates(l->dims);
  for (int64_t b = 0; b < l->batch; ++b) {
    for (int64_t j = 0; j < l->samples; ++j) {
      bool ambiguous = false;
      for (int64_t d = 0; d < l->dims; ++d) {
        const double gv = gacc[b][j][d];
        const double size = static_cast<double>(l->sizes[d]);
        const double src = Unnormalized(gv, size, align_corners);
        if (!std::isfinite(src)) return std::nullopt;
        const double half_way = std::floor(src) + 0.5;
        const double reach = 4.5 * u * (std::fabs(src) + size) + uh / 2 * std::fabs(src);
        candidates[d].clear();
        if (std::fabs(src - half_way) <= reach) {
          ambiguous = true;
          candidates[d] = {static_cast<int64_t>(std::floor(src)),
                           static_cast<int64_t>(std::floor(src)) + 1};
        } else {
          candidates[d] = {static_cast<int64_t>(std::nearbyint(src))};
        }
      }
      // Every combination of the dims' candidates.
      int64_t combos = 1;
      for (const auto& cd : candidates) combos *= static_cast<int64_t>(cd.size());
      for (int64_t t = 0; t < combos; ++t) {
        int64_t flat = 0, stride = 1, rest = t;
        bool inside = true;
        for (int64_t d = 0; d < l->dims; ++d) {
          const auto& cd = candidates[d];
          int64_t p = cd[rest % static_cast<int64_t>(cd.size())];
          rest /= static_cast<int64_t>(cd.size());
          if (p < 0 || p >= l->sizes[d]) {
            if (!border) inside = false;
            p = std::min<int64_t>(std::max<int64_t>(p, 0), l->sizes[d] - 1);
          }
          flat += p * stride;
          stride *= l->sizes[d];
        }
        if (!inside) continue;  // zeros padding drops it
        for (int64_t ch = 0; ch < l->channels; ++ch) {
          if (ambiguous) tacc[b][ch][flat] += aacc[b][ch][j];
          sacc[b][ch][flat] += aacc[b][ch][j];
          nacc[b][ch][flat] += 1;
        }
      }
    }
  }
  return (tie + s * (2.5 * uh * n)).reshape(x.sizes());
}

// One side's sampled input and grid, where its incoming gradient and float64
// backward are there to judge it and its outgoing gradient has the shape of
// the one judged (c.out 0: the input's, 1: the grid's).
std::optional<std::pair<at::Tensor, at::Tensor>> SampledBy(const GradientContext& c,
                                                           const GradientSide& side,
                                                           const ops::OpSpec& spec) {
  auto x = side.inputs.find(c.node.args[0].value.s);
  auto grid = side.inputs.find(c.node.args[spec.grid.arg].value.s);
  if (x == side.inputs.end() || grid == side.inputs.end() || side.incoming.empty() ||
      !side.incoming[0].defined() || !side.witness.defined() ||
      side.outgoing.sizes() != (c.out == 0 ? x->second : grid->second).sizes()) {
    return std::nullopt;
  }
  return std::make_pair(x->second, grid->second);
}

bool AlignsCorners(const graph::Node& node) {
  const graph::Literal* ac = ops::FindArg(node, 4, "align_corners");
  return ac != nullptr && ac->kind == graph::Literal::Kind::kBool && ac->b;
}

std::optional<RuleMatch> GridSamplerNearest(const GradientContext& c, const ops::OpSpec& spec,
                                            bool half) {
  if (c.out != 0) return std::nullopt;  // nearest's grid gradient is 0
  const int64_t padding = IntArgOr(c.node, ArgPos(spec.grid.padding_arg), "padding_mode", -1);
  if (padding != 0 && padding != 1) return std::nullopt;
  const bool align_corners = AlignsCorners(c.node);
  const double u = c.dtype == graph::DType::kF64 ? graph::Epsilon(graph::DType::kF64)
                                                 : graph::Epsilon(graph::DType::kF32);
  const double uh = half ? graph::Epsilon(c.dtype) : u;
  const double atol = c.policy.For(c.node.QualifiedName(), c.dtype).atol;
  for (const GradientSide* side : {&c.a, &c.b}) {
    const auto sampled = SampledBy(c, *side, spec);
    if (!sampled) return std::nullopt;
    const std::optional<at::Tensor> bound = NearestTieAllowance(
        sampled->first, sampled->second, side->incoming[0], align_corners, padding == 1, u, uh);
    if (!bound || bound->sizes() != side->witness.sizes()) return std::nullopt;
    const at::Tensor off = (side->outgoing.to(at::kDouble) - side->witness.to(at::kDouble)).abs();
    const at::Tensor ok = (off <= *bound + atol) | at::isfinite(off).logical_not();
    if (!ok.all().item<bool>()) return std::nullopt;
  }
  return RuleMatch{"gradient_interpolation_weights",
                   absl::StrCat(c.node.QualifiedName(), " in nearest mode forms its sampling "
                                "coordinates in its accumulation type by design (in the dtype on "
                                "return): each side is within its own float64 backward but for "
                                "the samples whose coordinate lies within that rounding "
                                "(4.5·u·(|src| + size)", half ? " + uh/2·|src|" : "",
                                ") of a half-way point, and the sum's rounding")};
}

// grid_sampler's input gradient: as the upsample kernels, coordinates and
// weights in the accumulation type by design (session 46's bicubic
// GridSampler2DBackward0 f32 buckets, CPU without FMA and CUDA with: judged
// expected three times); in f16/bf16 for a CUDA side only (below). Its grid
// gradient in f32/f64.
std::optional<RuleMatch> GridSamplerWeights(const GradientContext& c) {
  const ops::OpSpec* spec = ops::FindOp(c.node.QualifiedName());
  const bool half = c.dtype == graph::DType::kF16 || c.dtype == graph::DType::kBF16;
  if (spec == nullptr || spec->grid.arg < 0 || c.out > 1 ||
      (c.dtype != graph::DType::kF32 && c.dtype != graph::DType::kF64 && !half) ||
      c.a.incoming.empty() ||
      c.node.args.size() <= static_cast<size_t>(spec->grid.arg) ||
      c.node.args[0].value.kind != graph::Literal::Kind::kValue ||
      c.node.args[spec->grid.arg].value.kind != graph::Literal::Kind::kValue) {
    return std::nullopt;
  }
  const int64_t mode = IntArgOr(c.node, ArgPos(spec->grid.mode_arg), "interpolation_mode", -1);
  if (mode == 1) return GridSamplerNearest(c, *spec, half);
  if (mode != 0 && mode != 2) return std::nullopt;
  const int reach = mode == 2 ? 2 : 1;
  const bool align_corners = AlignsCorners(c.node);
  const double u = c.dtype == graph::DType::kF64 ? graph::Epsilon(graph::DType::kF64)
                                                 : graph::Epsilon(graph::DType::kF32);
  const double atol = c.policy.For(c.node.QualifiedName(), c.dtype).atol;
  double widest = 0;
  if (c.out == 1) {
    // The grid gradient (session 47's 6423be44: a bicubic derivative
    // cancelling 113x, the CPU without FMA, CUDA with; judged expected).
    // Not a coordinate that crosses a cell, a jump nothing here bounds. In
    // f16/bf16 a CUDA side's coordinates, terms and sums round to the dtype
    // (its 3-d kernel accumulates in scalar_t): the bound in uh (session 52's
    // 3b30062b, 24 terms cancelling 90x, 0.33·uh of their sum; judged
    // expected). A CPU side there only where correctly rounded or within
    // the tolerance of its own float64 backward.
    for (const GradientSide* side : {&c.a, &c.b}) {
      const auto sampled = SampledBy(c, *side, *spec);
      if (!sampled) return std::nullopt;
      const std::optional<at::Tensor> bound = GridGradientBound(
          sampled->first, sampled->second, side->incoming[0], mode == 2, align_corners);
      if (!bound || bound->sizes() != side->witness.sizes()) return std::nullopt;
      const at::Tensor off = (side->outgoing.to(at::kDouble) - side->witness.to(at::kDouble)).abs();
      const double us = half ? graph::Epsilon(c.dtype) : u;
      // A CPU side: correctly rounded, or within the tolerance itself.
      const double rtol = c.policy.For(c.node.QualifiedName(), c.dtype).rtol;
      const at::Tensor allowed = !half || side->cuda
                                     ? *bound * us
                                     : side->witness.to(at::kDouble).abs() *
                                           std::max(us / 2, rtol);
      const at::Tensor ok = (off <= allowed + atol) | at::isfinite(off).logical_not();
      if (!ok.all().item<bool>()) return std::nullopt;
    }
    return RuleMatch{"gradient_interpolation_weights",
                     absl::StrCat(c.node.QualifiedName(), " forms its sampling coordinates and "
                                  "the weights' derivatives in its accumulation type by design: "
                                  "each side's grid gradient is within its terms' rounding (the "
                                  "weight polynomials' evaluation, the coordinates' rounding "
                                  "through w'', their sum) of its own float64 backward")};
  }
  for (const GradientSide* side : {&c.a, &c.b}) {
    const auto sampled = SampledBy(c, *side, *spec);
    if (!sampled) return std::nullopt;
    const std::optional<GridStencil> st =
        GridSupport(sampled->first, sampled->second, side->incoming[0], reach, align_corners);
    if (!st || st->s.sizes() != side->witness.sizes()) return std::nullopt;
    // A weight is off by 4.5·u·(|src| + size) (the coordinate's rounding
    // through |dw/dt| <= 1.5) plus 16u (its polynomial's); n taps of
    // |w| <= 1.25 sum within 2·n·u·1.25·S. In f16/bf16 only a CUDA side,
    // whose coordinates and weights are float32's but whose weights, their
    // products with g and atomic sums round to the dtype (pytorch#90427:
    // "the backward kernels are thus unchanged"): two roundings of uh per
    // term and the sum's in uh. The CPU's half kernel rounds its coordinates
    // in the dtype (judged real, sessions 46-47): only a side correctly
    // rounded from its float64 backward (the witness side SideExcused pairs
    // with) passes there.
    const double uh = half ? graph::Epsilon(c.dtype) : u;
    const double weight_error = 4.5 * u * st->reach_of_coordinates + 16 * u + (half ? 2 * uh : 0);
    widest = std::max(widest, st->reach_of_coordinates);
    at::Tensor bound = st->s * (weight_error + 2.5 * uh * st->n);
    if (half && !side->cuda) bound = side->witness.to(at::kDouble).abs() * (uh / 2);
    const at::Tensor off = (side->outgoing.to(at::kDouble) - side->witness.to(at::kDouble)).abs();
    const at::Tensor ok = (off <= bound + atol) | at::isfinite(off).logical_not();
    if (!ok.all().item<bool>()) return std::nullopt;
  }
  return RuleMatch{"gradient_interpolation_weights",
                   absl::StrCat(c.node.QualifiedName(), " forms its sampling coordinates and "
                                "interpolation weights in its accumulation type by design: each "
                                "side is within (4.5·u·", widest, " + 16u + 2.5·n·u) times "
                                "sum|g| over each input's stencil of n taps of its own float64 "
                                "backward")};
}

}  // namespace

std::optional<RuleMatch> gradient_interpolation_weights(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kTolerance || c.node.overload == "vec") return std::nullopt;
  if (std::optional<RuleMatch> m = GridSamplerWeights(c)) return m;
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
