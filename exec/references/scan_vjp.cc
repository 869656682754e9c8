// logcumsumexp's exact backward: the gradient of sum(g * logcumsumexp(x))
// with respect to x, grad_i = sum_{j >= i} g_j exp(x_i - r_j), r_j the
// running log-sum-exp. PyTorch's formula (FunctionsManual.cpp's
// logcumsumexp_backward) forms exp(reverse_lcse(log|g| - r) + x) without a
// shift, so its float64 run rounds exponents at |x| (1e15: to 0.125) and
// cannot witness itself; this one never forms r. It keeps each prefix as
// (running max m_j, S_j = sum_{k <= j} exp(x_k - m_j)), so that
//   exp(x_i - r_i)   = exp(x_i - m_i) / S_i
//   exp(r_j - r_j+1) = S_j exp(m_j - m_j+1) / S_j+1
// and grad_i = exp(x_i - r_i) U_i with U_i = g_i + exp(r_i - r_i+1) U_i+1:
// every exponent is a difference of two input values (at most 0), in MPFR.
// With the result the forward saved (rounded to its dtype: the backward
// reads it, and its rounding is the forward's), r is those values:
// exp(x_i - r_i) and exp(r_i - r_i+1) are then differences of saved values.
#include <ATen/ATen.h>

#include <cmath>

#include "exec/references/references.h"

namespace divfuzz::exec::exact_internal {
namespace {
constexpr mpfr_rnd_t N = MPFR_RNDN;
}  // namespace

std::optional<at::Tensor> LogcumsumexpVjp(const at::Tensor& x, const at::Tensor& g, int64_t dim,
                                          const at::Tensor& saved) {
  if (!x.defined() || !g.defined() || x.is_complex() || g.is_complex() ||
      x.sizes() != g.sizes() || x.numel() > kMaxElements) {
    return std::nullopt;
  }
  const bool from_saved = saved.defined() && !saved.is_complex() && saved.sizes() == x.sizes();
  WidenExponentRange();
  std::optional<Rows> xr = ToRows(x.to(at::kDouble), {dim}, /*keepdim=*/true);
  std::optional<Rows> gr = ToRows(g.to(at::kDouble), {dim}, /*keepdim=*/true);
  std::optional<Rows> sr;
  if (from_saved) sr = ToRows(saved.to(at::kDouble), {dim}, /*keepdim=*/true);
  if (!xr || !gr || (from_saved && !sr)) return std::nullopt;
  const int64_t inner = xr->m.size(1);
  const double* xp = xr->m.data_ptr<double>();
  const double* gp = gr->m.data_ptr<double>();
  const double* sp = from_saved ? sr->m.data_ptr<double>() : nullptr;
  Sink sink;
  Mp t, u, next_u, lead;
  std::vector<Mp> s(inner), lead_of(inner), ratio(inner);
  std::vector<double> m(inner);
  for (int64_t row = 0; row < xr->m.size(0); ++row) {
    const double* xs = xp + row * inner;
    const double* gs = gp + row * inner;
    // A non-finite value leaves the gradient of its row undefined or a
    // matter of convention (inf - inf): the reference declines there.
    const double* ss = from_saved ? sp + row * inner : nullptr;
    bool finite = true;
    for (int64_t k = 0; k < inner; ++k) {
      finite = finite && std::isfinite(xs[k]) && std::isfinite(gs[k]) &&
               (ss == nullptr || std::isfinite(ss[k]));
    }
    if (!finite) {
      PutNans(inner, sink);
      continue;
    }
    for (int64_t k = 0; ss != nullptr && k < inner; ++k) {
      mpfr_set_d(t.v, xs[k], N);  // exp(x_k - r_k)
      mpfr_sub_d(t.v, t.v, ss[k], N);
      mpfr_exp(lead_of[k].v, t.v, N);
      if (k > 0) {  // exp(r_k-1 - r_k)
        mpfr_set_d(t.v, ss[k - 1], N);
        mpfr_sub_d(t.v, t.v, ss[k], N);
        mpfr_exp(ratio[k - 1].v, t.v, N);
      }
    }
    for (int64_t k = 0; ss == nullptr && k < inner; ++k) {
      m[k] = k == 0 ? xs[0] : std::max(m[k - 1], xs[k]);
      if (k == 0) {
        mpfr_set_ui(s[0].v, 1, N);
      } else {  // S_k = S_k-1 exp(m_k-1 - m_k) + exp(x_k - m_k)
        mpfr_set_d(t.v, m[k - 1], N);
        mpfr_sub_d(t.v, t.v, m[k], N);
        mpfr_exp(t.v, t.v, N);
        mpfr_mul(s[k].v, s[k - 1].v, t.v, N);
        mpfr_set_d(t.v, xs[k], N);
        mpfr_sub_d(t.v, t.v, m[k], N);
        mpfr_exp(t.v, t.v, N);
        mpfr_add(s[k].v, s[k].v, t.v, N);
      }
      mpfr_set_d(t.v, xs[k], N);  // exp(x_k - r_k)
      mpfr_sub_d(t.v, t.v, m[k], N);
      mpfr_exp(t.v, t.v, N);
      mpfr_div(lead_of[k].v, t.v, s[k].v, N);
      if (k > 0) {  // exp(r_k-1 - r_k)
        mpfr_set_d(t.v, m[k - 1], N);
        mpfr_sub_d(t.v, t.v, m[k], N);
        mpfr_exp(t.v, t.v, N);
        mpfr_mul(t.v, t.v, s[k - 1].v, N);
        mpfr_div(ratio[k - 1].v, t.v, s[k].v, N);
      }
    }
    std::vector<double> out(inner);
    for (int64_t k = inner - 1; k >= 0; --k) {
      if (k == inner - 1) {
        mpfr_set_d(u.v, gs[k], N);
      } else {
        mpfr_mul(next_u.v, ratio[k].v, u.v, N);
        mpfr_add_d(u.v, next_u.v, gs[k], N);
      }
      mpfr_mul(t.v, lead_of[k].v, u.v, N);
      out[k] = mpfr_get_d(t.v, N);
    }
    for (int64_t k = 0; k < inner; ++k) {
      mpfr_set_d(t.v, out[k], N);
      sink.Put(t.v);
    }
  }
  return FromRows(sink, *xr, graph::DType::kF64).exact[0];
}

}  // namespace divfuzz::exec::exact_internal
