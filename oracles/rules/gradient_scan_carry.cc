// gradient_scan_carry: logcumsumexp's backward (FunctionsManual.cpp,
// logcumsumexp_backward) is composed in the dtype: exp(reverse
// logcumsumexp(log|v| - result) + self), and the reverse logcumsumexp is the
// forward's scan, which CUDA carries in the dtype (scan_carry, pytorch#141802,
// closed as expected with the numerical-accuracy notes: "floating point
// addition and multiplication are not associative, so the order of the
// operations affects the results"). The exponent's absolute error is about
// (n + 4) u (1 + M), u = eps / 2 the unit roundoff, M = 2 max|x| + log n +
// max|log|v|| (a bound on the running value's magnitude: n roundings of it); exp turns it into
// a relative error of the positive and negative parts, which the difference
// may cancel: |A - B| <= expm1(delta) * (float64 backward of |v|) + atol.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "oracles/rules/gradient_rule.h"
#include "oracles/rules/rule.h"

namespace divfuzz::oracles::rules {
namespace {


}  // namespace

std::optional<RuleMatch> gradient_scan_carry(const GradientContext& c) {
  if (!(c.hints & ops::kScanCarry) || c.d.cls != DivergenceClass::kTolerance ||
      c.d.op.rfind("LogcumsumexpBackward", 0) != 0 || c.a.outgoing.is_complex() ||
      c.a.outgoing.dim() == 0) {
    return std::nullopt;
  }
  // Per scanned slice: its carry runs over its own n values, of its own
  // magnitudes (session 35: a 180 in another row had made the bound decline
  // for rows of 1).
  const int64_t dim = at::maybe_wrap_dim(IntArgOr(c.node, 1, "dim", 0), c.a.outgoing.dim());
  const int64_t n = c.a.outgoing.size(dim);
  auto slice_max = [&](const at::Tensor& t) {
    at::Tensor a = t.to(at::kDouble).abs();
    a = at::where(at::isfinite(a), a, at::zeros_like(a));
    return a.sizes() == c.a.outgoing.sizes() ? a.amax({dim}, /*keepdim=*/true).expand_as(a)
                                             : at::full_like(c.a.outgoing, 0, at::kDouble)
                                                   .fill_(a.numel() ? a.max().item<double>() : 0);
  };
  at::Tensor x = at::zeros(c.a.outgoing.sizes(), at::kDouble);
  for (const GradientSide* s : {&c.a, &c.b}) {
    for (const auto& [name, t] : s->inputs) {
      if (t.defined() && (t.is_floating_point())) x = at::fmax(x, slice_max(t));
    }
  }
  at::Tensor log_v = at::zeros_like(x);
  std::vector<at::Tensor> magnitude;
  for (const at::Tensor& v : c.a.incoming) {
    if (v.defined() && !v.is_complex()) log_v = at::fmax(log_v, slice_max(at::log(v.to(at::kDouble).abs())));
    magnitude.push_back(v.defined() ? v.abs() : v);
  }
  const at::Tensor m = 2 * x + std::log(static_cast<double>(n)) + log_v;
  const at::Tensor delta = static_cast<double>(n + 4) * graph::Epsilon(c.dtype) / 2 * (1 + m);
  // Where the carry's rounding may double or zero every term, the formula
  // keeps no digit of the result: that is no ordering difference but a
  // formula that fails in the dtype (session 35's f16 logcumsumexp backward
  // near 3000: CPU -inf, CUDA 0 against -19982; judged a bug of both, as the
  // open pytorch#193040 for atan2's f16 backward).
  const at::Tensor growth = at::expm1(delta);
  // The positive and negative parts' sum: the float64 backward of |v|.
  exec::VjpResult parts =
      exec::RunNodeVjp(c.node, c.a.inputs, magnitude, c.types, exec::Target::kCpuF64);
  if (parts.result.error || c.out >= parts.result.exact.size()) return std::nullopt;
  const at::Tensor t = parts.result.exact[c.out].abs();
  const at::Tensor diff = (c.a.outgoing.to(at::kDouble) - c.b.outgoing.to(at::kDouble)).abs();
  if (t.sizes() != diff.sizes() || growth.sizes() != diff.sizes()) return std::nullopt;
  const double atol = c.policy.For(c.node.QualifiedName(), c.dtype).atol;
  const at::Tensor finite = at::isfinite(c.a.outgoing) & at::isfinite(c.b.outgoing);
  const at::Tensor differing = diff > atol;
  if ((differing & finite & (growth >= 1)).any().item<bool>()) return std::nullopt;
  const at::Tensor ok = (diff <= t * growth + atol).logical_or(finite.logical_not());
  if (!ok.all().item<bool>()) return std::nullopt;
  return RuleMatch{"gradient_scan_carry",
                   absl::StrCat("logcumsumexp's backward composes its scan in ",
                                std::string(graph::DTypeName(c.dtype)), ": the sides differ within "
                                "expm1((n + 4) (eps / 2) (1 + M)) times the float64 backward of |v| "
                                "(n = ", n, ", M per scanned slice, at most ",
                                m.max().item<double>(), ")")};
}

}  // namespace divfuzz::oracles::rules
