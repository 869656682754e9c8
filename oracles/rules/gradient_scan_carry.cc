// gradient_scan_carry: logcumsumexp's backward (FunctionsManual.cpp,
// logcumsumexp_backward) is composed in the dtype: exp(reverse
// logcumsumexp(log|v| - result) + self). Each side is judged against the
// float64 backward from its own inputs. The formula rounds its exponent about
// three times (log|v| - result, the scan's result, + self), each by u = eps/2
// of a magnitude M, per element (below): a
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
#include <limits>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "oracles/compare.h"
#include "oracles/rules/gradient_rule.h"
#include "oracles/rules/rule.h"

namespace divfuzz::oracles::rules {
namespace {


}  // namespace

std::optional<RuleMatch> gradient_scan_carry(const GradientContext& c) {
  if (!c.ScanCarryKernel() || c.d.cls != DivergenceClass::kTolerance ||
      c.a.outgoing.is_complex() || c.a.outgoing.dim() == 0) {
    return std::nullopt;
  }
  const int64_t dim = at::maybe_wrap_dim(IntArgOr(c.node, 1, "dim", 0), c.a.outgoing.dim());
  const int64_t n = c.a.outgoing.size(dim);
  const double nd = static_cast<double>(n);
  const double u = graph::Epsilon(c.dtype) / 2;
  std::vector<at::Tensor> magnitude;
  for (const at::Tensor& v : c.a.incoming) magnitude.push_back(v.defined() ? v.abs() : v);
  // The magnitude each element's exponent is rounded at, per element: the
  // reverse scan's terms a_j = log|v_j| - result_j weigh in as the scan
  // weighs them (softmax weights over j >= i), so a planted 89 far down a
  // row of 129 bf16 values, whose weight is nil, does not make every element
  // of the row undecidable (session 38's G2: a per-slice M of 106 declined
  // where each element's is about 6). M_i is the largest magnitude rounded:
  // max(sum_j w_ij max(|log|v_j||, |result_j|, |a_j|), |L_i|, |L_i + x_i|),
  // L the reverse scan of a.
  auto x_it = c.a.inputs.find(c.node.Uses().empty() ? "" : c.node.Uses()[0]);
  if (x_it == c.a.inputs.end() || !x_it->second.defined() || magnitude.empty() ||
      !magnitude[0].defined() || x_it->second.sizes() != c.a.outgoing.sizes() ||
      magnitude[0].sizes() != c.a.outgoing.sizes()) {
    return std::nullopt;
  }
  const at::Tensor x = x_it->second.to(at::kDouble);
  auto reverse_scan = [&](const at::Tensor& t) {
    return at::flip(at::logcumsumexp(at::flip(t, {dim}), dim), {dim});
  };
  const double inf = std::numeric_limits<double>::infinity();
  const at::Tensor result = at::logcumsumexp(x, dim);
  const at::Tensor lg = at::log(magnitude[0].to(at::kDouble));
  const at::Tensor a = lg - result;
  const at::Tensor finite_a = at::isfinite(a);
  const at::Tensor size =
      at::where(finite_a, at::fmax(at::fmax(lg.abs(), result.abs()), a.abs()), at::ones_like(a));
  const at::Tensor l = reverse_scan(at::where(finite_a, a, at::full_like(a, -inf)));
  const at::Tensor weighted = reverse_scan(
      at::where(finite_a, a + at::log(size + 1e-300), at::full_like(a, -inf)));
  at::Tensor m = at::fmax(at::fmax(at::exp(weighted - l), l.abs()), (l + x).abs());
  // Nothing flows back to an element whose reverse scan is empty (-inf);
  // a non-finite x or v is no rounding: such elements keep M at infinity.
  m = at::where(at::isneginf(l), at::zeros_like(m), m);
  m = at::where(at::isnan(m), at::full_like(m, inf), m);
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
  // Each side is judged where the sides differ: elsewhere they agree, and an
  // element both get equally wrong (x = 10000 in f32, both 0 against 1.15:
  // session 39's G3) is no part of this divergence.
  const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
  const at::Tensor differing = DifferingElements(c.a.outgoing, c.b.outgoing, c.dtype, tol);
  for (const GradientSide* s : {&c.a, &c.b}) {
    if (!s->witness.defined() || s->witness.sizes() != diff.sizes()) return std::nullopt;
    const at::Tensor off = (s->outgoing.to(at::kDouble) - s->witness.to(at::kDouble)).abs();
    const at::Tensor allowed = (s->cuda ? at::fmax(formula, carry) : formula) * t + atol;
    at::Tensor ok = (off <= allowed).logical_or(at::isfinite(off).logical_not()).reshape(-1);
    if (differing.defined() && differing.numel() == ok.numel()) {
      ok = ok.logical_or(differing.logical_not());
    }
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
                                "(n = ", n, ", M per element, at most ",
                                m.max().item<double>(), "; the farthest side is off by ",
                                std::round(worst * 1000) / 1000, " of it)")};
}

}  // namespace divfuzz::oracles::rules
