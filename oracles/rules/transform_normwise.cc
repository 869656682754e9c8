// transform_normwise: FFTs judged by their normwise bound.
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html):
// "floating point addition and multiplication are not
// associative, so the order of the operations affects the results."
// (a transform's butterflies sum in an order each library chooses), and on
// "Extremal values": "intermediate results may overflow the range of the used
// datatype, the end result may overflow too, even though it is representable
// in the original datatype."
#include "oracles/rules/rule.h"

#include <ATen/ops/all.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/view_as_real.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/printer.h"

namespace divfuzz::oracles::rules {

using graph::DType;

// FFTs: the error is normwise, about c log2(N) eps ||X||_2 (Higham 24.1),
// so one element may be far off relatively where the output is small.
std::optional<RuleMatch> transform_normwise(const Context& c) {
  if (!(c.spec.hints & ops::kTransform) || (c.d.cls != DivergenceClass::kTolerance &&
                                            c.d.cls != DivergenceClass::kClassSplit)) {
    return std::nullopt;
  }
  auto real = [](at::Tensor t) {
    if (!t.defined()) return t;
    if (t.is_complex()) t = at::view_as_real(t.contiguous());
    return F64(t);
  };
  if (c.d.cls == DivergenceClass::kClassSplit) {
    // An output's terms may add up past the dtype's range inside the
    // butterflies (then inf - inf is NaN) whenever sum|x| does, although the
    // exact output fits: PyTorch's "extremal values" note.
    const at::Tensor x = real(c.Input(0));
    const DType part = c.dtype == DType::kC64    ? DType::kF32
                       : c.dtype == DType::kC128 ? DType::kF64
                                                 : c.dtype;
    if (!x.defined() || !at::all(at::isfinite(x)).item<bool>()) return std::nullopt;
    // A butterfly's complex products and sums reach up to about
    // sqrt(2)·sum|x|, so within a factor of 2 of the range is enough (on the
    // H100 cuFFT gave NaN for an ifft holding -DBL_MAX beside values near 1,
    // whose sum|x| rounds to DBL_MAX itself).
    double l1 = x.abs().sum().item<double>();
    // A complex-to-real transform (irfft*, hfft*) reads a half spectrum and
    // counts each interior bin twice (session 47's irfftn of one bin at
    // FLT_MAX/2, judged expected: the CPU's inf where the exact output fits).
    if (absl::StrContains(c.spec.name, "irfft") || absl::StrContains(c.spec.name, "fft_hfft")) {
      l1 *= 2;
    }
    if (!(2 * l1 > graph::MaxFinite(part))) return std::nullopt;
    return RuleMatch{"transform_normwise",
                     absl::StrCat("sum|x| = ", graph::FormatFloat(l1), " is within a factor of 2 "
                                  "of ", std::string(graph::DTypeName(part)),
                                  "'s largest value: a transform's intermediate sums and twiddle "
                                  "products may overflow (then inf - inf is NaN) though the exact "
                                  "output fits")};
  }
  const at::Tensor ya = real(Context::Output(c.a, c.d.node_index, c.d.output_index));
  const at::Tensor yb = real(Context::Output(c.b, c.d.node_index, c.d.output_index));
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || ya.numel() == 0) {
    return std::nullopt;
  }
  int64_t n = 2;
  for (const auto& [name, t] : c.inputs) {
    if (t.defined()) n = std::max<int64_t>(n, t.numel());
  }
  const DType real_dtype = c.dtype == DType::kC64 ? DType::kF32
                           : c.dtype == DType::kC128 ? DType::kF64
                                                     : c.dtype;
  const double norm = std::max(at::linalg_vector_norm(ya).item<double>(),
                               at::linalg_vector_norm(yb).item<double>());
  const double bound = 8.0 * std::log2(static_cast<double>(n)) * graph::Epsilon(real_dtype) * norm +
                       c.policy.For(c.node.QualifiedName(), c.dtype).atol;
  const double diff = ya.sub(yb).abs().max().item<double>();
  if (!(diff <= bound)) return std::nullopt;
  return RuleMatch{"transform_normwise",
                   absl::StrCat("max|A - B| = ", graph::FormatFloat(diff),
                                " <= 8 log2(N) eps ||X||_2 = ", graph::FormatFloat(bound),
                                " (N = ", n, "): an FFT's error bound is normwise")};
}

}  // namespace divfuzz::oracles::rules
