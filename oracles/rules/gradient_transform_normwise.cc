// gradient_transform_normwise: the backward of an FFT is an FFT of the
// incoming gradient (pocketfft/MKL on the CPU, cuFFT on CUDA), so its error
// is normwise like the forward's (transform_normwise): PyTorch's
// numerical-accuracy notes, "floating point addition and multiplication are
// not associative, so the order of the operations affects the results", and
// "Extremal values": intermediate results may overflow though the end result
// is representable (a butterfly's sums reach about sum|v|).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "graph/printer.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {
namespace {

at::Tensor Real(at::Tensor t) {
  if (!t.defined()) return t;
  if (t.is_complex()) t = at::view_as_real(t.contiguous());
  return t.to(at::kDouble);
}

graph::DType PartOf(graph::DType dt) {
  return dt == graph::DType::kC64 ? graph::DType::kF32
         : dt == graph::DType::kC128 ? graph::DType::kF64
                                     : dt;
}

}  // namespace

std::optional<RuleMatch> gradient_transform_normwise(const GradientContext& c) {
  if (!(c.hints & ops::kTransform)) return std::nullopt;
  const graph::DType part = PartOf(c.dtype);
  if (c.d.cls == DivergenceClass::kClassSplit) {
    // A non-finite incoming gradient: every output of the transform sums
    // it with twiddles, and whether inf·0 and inf - inf turn up depends on
    // the algorithm (which twiddles are exact zeros it skips): pytorch#154736,
    // #156020 (session 34's fft_ihfft backward).
    for (const at::Tensor& v : c.a.incoming) {
      if (v.defined() && !at::isfinite(Real(v)).all().item<bool>()) {
        return RuleMatch{"gradient_transform_normwise",
                         "the incoming gradient holds inf or NaN: which outputs of the backward "
                         "transform become NaN rather than inf depends on the algorithm's "
                         "twiddles (inf·0, inf - inf)"};
      }
    }
    double l1 = 0;
    for (const at::Tensor& v : c.a.incoming) {
      if (v.defined()) l1 += Real(v).abs().sum().item<double>();
    }
    if (!std::isfinite(l1) || !(2 * l1 > graph::MaxFinite(part))) return std::nullopt;
    return RuleMatch{"gradient_transform_normwise",
                     absl::StrCat("sum|v| = ", graph::FormatFloat(l1), " of the incoming gradient "
                                  "is within a factor of 2 of ", std::string(graph::DTypeName(part)),
                                  "'s largest value: the backward transform's intermediate sums "
                                  "may overflow though the gradient fits")};
  }
  if (c.d.cls != DivergenceClass::kTolerance) return std::nullopt;
  const at::Tensor ya = Real(c.a.outgoing), yb = Real(c.b.outgoing);
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || ya.numel() == 0) {
    return std::nullopt;
  }
  int64_t n = 2;
  for (const at::Tensor& v : c.a.incoming) {
    if (v.defined()) n = std::max<int64_t>(n, v.numel());
  }
  n = std::max<int64_t>(n, ya.numel());
  // The transform's rounding is relative to what flows through it: the
  // incoming gradient's norm too, which the result may be far below (session
  // 39's G4 FftC2RBackward0: 7.6e30 where the exact bin is 0, 2.5e-8 of an
  // incoming norm of 3e38, judged expected).
  // Over the elements finite on both sides: a batch whose other rows are
  // NaN on both (an incoming inf there) made the bound NaN and the rule
  // decline (session 40's G5 fft_hfft backward, 0.43 off in a row of norm
  // 3.4e7).
  const at::Tensor both = at::isfinite(ya) & at::isfinite(yb);
  if (!both.any().item<bool>()) return std::nullopt;
  double norm = std::max(at::linalg_vector_norm(ya.masked_select(both)).item<double>(),
                         at::linalg_vector_norm(yb.masked_select(both)).item<double>());
  for (const GradientSide* s : {&c.a, &c.b}) {
    for (const at::Tensor& v : s->incoming) {
      if (!v.defined()) continue;
      const at::Tensor r = Real(v);
      norm = std::max(norm, at::linalg_vector_norm(r.masked_select(at::isfinite(r))).item<double>());
    }
  }
  const double bound = 8.0 * std::log2(static_cast<double>(n)) * graph::Epsilon(part) * norm +
                       c.policy.For(c.node.QualifiedName(), c.dtype).atol;
  // Elements not finite on both sides are no tolerance divergence: their
  // class agrees (both NaN), or another verdict judges them.
  const double diff = (ya - yb).abs().masked_select(both).max().item<double>();
  if (!(diff <= bound)) return std::nullopt;
  return RuleMatch{"gradient_transform_normwise",
                   absl::StrCat("max|A - B| = ", graph::FormatFloat(diff),
                                " <= 8 log2(N) eps max(||G||_2, ||v||_2) = ", graph::FormatFloat(bound), " (N = ",
                                n, "): the backward of an FFT is a transform, its error normwise")};
}

}  // namespace divfuzz::oracles::rules
