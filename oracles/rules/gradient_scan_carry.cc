// gradient_scan_carry: logcumsumexp's backward (FunctionsManual.cpp,
// logcumsumexp_backward) is composed in the dtype: exp(reverse
// logcumsumexp(log|v| - result) + self). Each side is judged against the
// float64 backward from its own inputs. The formula rounds its exponent about
// three times (log|v| - result, the scan's result, + self), each by u = eps/2
// of a magnitude M <= max|x| + 2 log n + max|log|v|| per scanned slice: a
// relative error expm1(3 u (1 + M)) of the positive and negative parts, which
// the difference may cancel, so the bound is that times the float64 backward
// of |v|. CUDA carries the scan itself in the dtype (scan_dim<scalar_t>):
// pytorch#141802 and #180155, closed as expected ("floating point addition
// and multiplication are not associative"), so a CUDA side may also lose up
// to n carry roundings, capped at half the terms: a result off by more keeps
// no digit, which those issues did not cover.
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
  const double nd = static_cast<double>(n);
  const double u = graph::Epsilon(c.dtype) / 2;
  const at::Tensor m = x + 2 * std::log(nd) + log_v;
  const at::Tensor formula = at::expm1(3 * u * (1 + m));
  const at::Tensor carry = at::clamp_max(at::expm1((3 + nd) * u * (1 + m)), 0.5);
  // The positive and negative parts' sum: the float64 backward of |v|.
  exec::VjpResult parts =
      exec::RunNodeVjp(c.node, c.a.inputs, magnitude, c.types, exec::Target::kCpuF64);
  if (parts.result.error || c.out >= parts.result.exact.size()) return std::nullopt;
  const at::Tensor t = parts.result.exact[c.out].abs();
  const double atol = c.policy.For(c.node.QualifiedName(), c.dtype).atol;
  const at::Tensor diff = (c.a.outgoing.to(at::kDouble) - c.b.outgoing.to(at::kDouble)).abs();
  if (t.sizes() != diff.sizes() || formula.sizes() != diff.sizes()) return std::nullopt;
  const at::Tensor finite = at::isfinite(c.a.outgoing) & at::isfinite(c.b.outgoing);
  // Where the formula's own rounding may double or zero every term, it keeps
  // no digit of the result: that is no ordering difference but a formula
  // that fails in the dtype (session 35's f16 logcumsumexp backward near 3000:
  // CPU -inf, CUDA 0 against -19982; session 38's f32 at 2^24: CPU 2x, CUDA
  // 1/73 of the exact 9.9; judged bugs of both, as the open pytorch#193040
  // for atan2's f16 backward).
  if (((diff > atol) & finite & (formula >= 1)).any().item<bool>()) return std::nullopt;
  double worst = 0;  // the largest share of the terms a side is off by
  for (const GradientSide* s : {&c.a, &c.b}) {
    if (!s->witness.defined() || s->witness.sizes() != diff.sizes()) return std::nullopt;
    const at::Tensor off = (s->outgoing.to(at::kDouble) - s->witness.to(at::kDouble)).abs();
    const at::Tensor allowed = (s->cuda ? at::fmax(formula, carry) : formula) * t + atol;
    const at::Tensor ok = (off <= allowed).logical_or(at::isfinite(off).logical_not());
    if (!ok.all().item<bool>()) return std::nullopt;
    const at::Tensor share = (off / (t + 1e-300)).masked_select(at::isfinite(off));
    if (share.numel() > 0) worst = std::max(worst, share.max().item<double>());
  }
  return RuleMatch{"gradient_scan_carry",
                   absl::StrCat("logcumsumexp's backward composes its exponent in ",
                                std::string(graph::DTypeName(c.dtype)),
                                " (CUDA also carries its scan in it): each side is within "
                                "expm1(3 u (1 + M)) (a CUDA side expm1((n + 3) u (1 + M)), at most "
                                "1/2) of the float64 backward of |v| from its float64 backward "
                                "(n = ", n, ", M per scanned slice, at most ",
                                m.max().item<double>(), "; the farthest side is off by ",
                                std::round(worst * 1000) / 1000, " of it)")};
}

}  // namespace divfuzz::oracles::rules
