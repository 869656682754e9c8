// The orthogonal polynomials and Hurwitz zeta in MPFR, from their
// definitions. PyTorch's float64 run of these is the CPU's own kernel (so a
// float64 program had no independent witness: the kernels' uninitialised
// result at a NaN x, pytorch#187761, stayed undecided), and CUDA's float32
// zeta accumulates in float32 (NaN where the answer underflows to 0).
//
// Conventions, where the documentation is silent, are the ones both the CPU
// and the CUDA kernels implement (ATen/native/Math.h): the degree n is
// truncated to an integer, a negative degree gives 0, zeta(x, q) is +inf at
// x = 1 and at a non-positive integer q, and NaN for x < 1 or a negative q
// with a non-integer x (complex terms). Points those kernels leave to
// implementation choices are declined (no witness), never guessed: a
// non-finite degree (an undefined int64 cast), Hermite degrees past the
// kernels' cut-off (they return NaN there by design), an infinite x of degree
// two or more (the recurrences give inf - inf).
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/strip.h"
#include "exec/exact_internal.h"
#include "exec/references/references.h"

namespace divfuzz::exec::exact_internal {
namespace {

using graph::DType;
constexpr mpfr_rnd_t N = MPFR_RNDN;

// An MPFR number of a given precision.
struct MpP {
  mpfr_t v;
  explicit MpP(mpfr_prec_t p) { mpfr_init2(v, p); }
  ~MpP() { mpfr_clear(v); }
  MpP(const MpP&) = delete;
  MpP& operator=(const MpP&) = delete;
};

using Eval = std::function<bool(mpfr_prec_t prec, mpfr_t out)>;

// Whether a and b round to the same value of `dtype` (NaNs alike; zeros of
// either sign alike).
bool SameRounding(const mpfr_t a, const mpfr_t b, DType dtype) {
  const double da = mpfr_get_d(a, N), db = mpfr_get_d(b, N);
  if (std::isnan(da) || std::isnan(db)) return std::isnan(da) && std::isnan(db);
  if (da != db) return false;
  return dtype != DType::kF32 || mpfr_get_flt(a, N) == mpfr_get_flt(b, N);
}

// Ziv's strategy: evaluate at doubling precisions until two successive
// values round alike to the dtype (a recurrence's or a closed form's
// cancellation needs more bits the closer the value is to a root). At the
// widest precision the value is kept: its error is far below any tolerance.
bool Ziv(const Eval& eval, DType dtype, mpfr_t r) {
  mpfr_prec_t p = kPrecision + 32;
  MpP prev(p);
  if (!eval(p, prev.v)) return false;
  for (int round = 0; round < 5; ++round) {
    p *= 2;
    MpP next(p);
    if (!eval(p, next.v)) return false;
    const bool agree = SameRounding(prev.v, next.v, dtype);
    mpfr_set_prec(prev.v, p);
    mpfr_set(prev.v, next.v, N);
    if (agree) break;
  }
  mpfr_set(r, prev.v, N);
  return true;
}

// --- The orthogonal polynomials -------------------------------------------

enum class Family { kT, kU, kV, kW, kH, kHe, kL, kP };
struct Poly {
  Family family;
  bool shifted = false;  // of 2x - 1
};

std::optional<Poly> PolyOf(absl::string_view f) {
  const bool shifted = absl::ConsumePrefix(&f, "shifted_");
  if (f == "chebyshev_t") return Poly{Family::kT, shifted};
  if (f == "chebyshev_u") return Poly{Family::kU, shifted};
  if (f == "chebyshev_v") return Poly{Family::kV, shifted};
  if (f == "chebyshev_w") return Poly{Family::kW, shifted};
  if (shifted) return std::nullopt;
  if (f == "hermite_h") return Poly{Family::kH};
  if (f == "hermite_he") return Poly{Family::kHe};
  if (f == "laguerre_l") return Poly{Family::kL};
  if (f == "legendre_p") return Poly{Family::kP};
  return std::nullopt;
}

bool IsChebyshev(Family f) {
  return f == Family::kT || f == Family::kU || f == Family::kV || f == Family::kW;
}

// Degrees up to this use the recurrence; Chebyshev beyond it its closed
// form (the recurrence would cost n steps at each precision).
constexpr int64_t kChebyshevRecurrence = 32;
// The degree bound past which divfuzz does not run the polynomials
// (exec/index_precheck.cc): the recurrence's length is bounded by it.
constexpr double kMaxDegree = 65536;

// The degree as the kernels take it (truncated to int64), or nullopt where
// that cast is undefined or past the bound.
std::optional<int64_t> Degree(double n) {
  if (!std::isfinite(n) || std::fabs(n) > kMaxDegree) return std::nullopt;
  return static_cast<int64_t>(n);
}

// Degree 1 of each family at x.
void DegreeOne(Family f, const mpfr_t x, mpfr_t out) {
  switch (f) {
    case Family::kT:
    case Family::kHe:
    case Family::kP:
      mpfr_set(out, x, N);
      return;
    case Family::kU:
    case Family::kH:
      mpfr_mul_2ui(out, x, 1, N);
      return;
    case Family::kV:
      mpfr_mul_2ui(out, x, 1, N);
      mpfr_sub_ui(out, out, 1, N);
      return;
    case Family::kW:
      mpfr_mul_2ui(out, x, 1, N);
      mpfr_add_ui(out, out, 1, N);
      return;
    case Family::kL:
      mpfr_ui_sub(out, 1, x, N);
      return;
  }
}

// The three-term recurrence from degrees 0 and 1 up to n.
void Recurrence(Family f, const mpfr_t x, int64_t n, mpfr_prec_t p, mpfr_t out) {
  MpP prev(p), cur(p), next(p), t(p);
  mpfr_set_ui(prev.v, 1, N);
  DegreeOne(f, x, cur.v);
  for (int64_t k = 1; k < n; ++k) {
    switch (f) {
      case Family::kT:
      case Family::kU:
      case Family::kV:
      case Family::kW:  // 2x P_k - P_{k-1}
        mpfr_mul(t.v, x, cur.v, N);
        mpfr_mul_2ui(t.v, t.v, 1, N);
        mpfr_sub(next.v, t.v, prev.v, N);
        break;
      case Family::kH:  // 2x H_k - 2k H_{k-1}
        mpfr_mul(t.v, x, cur.v, N);
        mpfr_mul_si(next.v, prev.v, k, N);
        mpfr_sub(next.v, t.v, next.v, N);
        mpfr_mul_2ui(next.v, next.v, 1, N);
        break;
      case Family::kHe:  // x He_k - k He_{k-1}
        mpfr_mul(t.v, x, cur.v, N);
        mpfr_mul_si(next.v, prev.v, k, N);
        mpfr_sub(next.v, t.v, next.v, N);
        break;
      case Family::kL:  // ((2k + 1 - x) L_k - k L_{k-1}) / (k + 1)
        mpfr_si_sub(t.v, 2 * k + 1, x, N);
        mpfr_mul(t.v, t.v, cur.v, N);
        mpfr_mul_si(next.v, prev.v, k, N);
        mpfr_sub(next.v, t.v, next.v, N);
        mpfr_div_si(next.v, next.v, k + 1, N);
        break;
      case Family::kP:  // ((2k + 1) x P_k - k P_{k-1}) / (k + 1)
        mpfr_mul(t.v, x, cur.v, N);
        mpfr_mul_si(t.v, t.v, 2 * k + 1, N);
        mpfr_mul_si(next.v, prev.v, k, N);
        mpfr_sub(next.v, t.v, next.v, N);
        mpfr_div_si(next.v, next.v, k + 1, N);
        break;
    }
    mpfr_swap(prev.v, cur.v);
    mpfr_swap(cur.v, next.v);
  }
  mpfr_set(out, cur.v, N);
}

// Chebyshev's closed forms at y (already shifted): with y = cos(theta) on
// [-1, 1] and y = cosh(t) beyond, T = cos(n theta), U = sin((n+1) theta) /
// sin(theta), V = cos((n+1/2) theta) / cos(theta/2), W = sin((n+1/2) theta) /
// sin(theta/2); below -1 by parity (V_n(-z) = (-1)^n W_n(z) and back).
void ChebyshevClosed(Family f, const mpfr_t y, int64_t n, mpfr_prec_t p, mpfr_t out) {
  const bool odd = n % 2 != 0;
  if (mpfr_cmp_si(y, 1) == 0 || mpfr_cmp_si(y, -1) == 0) {
    const bool minus = mpfr_sgn(y) < 0;
    // At 1: T 1, U n+1, V 1, W 2n+1; at -1, (-1)^n times T 1, U n+1, V 2n+1, W 1.
    int64_t v = 1;
    if (f == Family::kU) v = n + 1;
    if ((f == Family::kW && !minus) || (f == Family::kV && minus)) v = 2 * n + 1;
    mpfr_set_si(out, minus && odd ? -v : v, N);
    return;
  }
  MpP a(p), num(p), den(p), z(p);
  const bool inside = mpfr_cmpabs_ui(y, 1) < 0;
  Family g = f;
  bool negate = false;
  mpfr_set(z.v, y, N);
  if (!inside && mpfr_sgn(y) < 0) {  // parity
    mpfr_neg(z.v, y, N);
    negate = odd;
    if (f == Family::kV) g = Family::kW;
    else if (f == Family::kW) g = Family::kV;
  }
  inside ? mpfr_acos(a.v, z.v, N) : mpfr_acosh(a.v, z.v, N);
  auto c = [&](mpfr_t r, const mpfr_t u) { inside ? mpfr_cos(r, u, N) : mpfr_cosh(r, u, N); };
  auto s = [&](mpfr_t r, const mpfr_t u) { inside ? mpfr_sin(r, u, N) : mpfr_sinh(r, u, N); };
  MpP m(p), half(p);
  switch (g) {
    case Family::kT:
      mpfr_mul_si(m.v, a.v, n, N);
      c(num.v, m.v);
      mpfr_set_ui(den.v, 1, N);
      break;
    case Family::kU:
      mpfr_mul_si(m.v, a.v, n + 1, N);
      s(num.v, m.v);
      s(den.v, a.v);
      break;
    case Family::kV:
    case Family::kW:
      mpfr_div_2ui(half.v, a.v, 1, N);
      mpfr_mul_si(m.v, a.v, n, N);
      mpfr_add(m.v, m.v, half.v, N);
      if (g == Family::kV) {
        c(num.v, m.v);
        c(den.v, half.v);
      } else {
        s(num.v, m.v);
        s(den.v, half.v);
      }
      break;
    default:
      break;
  }
  mpfr_div(out, num.v, den.v, N);
  if (negate) mpfr_neg(out, out, N);
}

bool PolynomialAt(Poly poly, mpfr_srcptr xin, int64_t n, mpfr_prec_t p, mpfr_t out) {
  if (n < 0) return mpfr_set_zero(out, 1), true;  // both kernels: 0 for a negative degree
  if (n == 0) return mpfr_set_ui(out, 1, N), true;  // whatever x, NaN too
  if (mpfr_nan_p(xin)) return mpfr_set_nan(out), true;
  if (mpfr_inf_p(xin) && n >= 2) return false;
  MpP x(p);
  mpfr_set(x.v, xin, N);
  if (poly.shifted) {
    mpfr_mul_2ui(x.v, x.v, 1, N);
    mpfr_sub_ui(x.v, x.v, 1, N);
  }
  if (n == 1) return DegreeOne(poly.family, x.v, out), true;
  if (IsChebyshev(poly.family) && n > kChebyshevRecurrence) {
    ChebyshevClosed(poly.family, x.v, n, p, out);
  } else {
    Recurrence(poly.family, x.v, n, p, out);
  }
  return true;
}

// --- Hurwitz zeta ---------------------------------------------------------

// B_2j / (2j)! = (-1)^(j+1) 2 zeta(2j) / (2 pi)^(2j), j = 1..count, at p bits.
const std::vector<std::unique_ptr<MpP>>& BernoulliTerms(mpfr_prec_t p, int count) {
  thread_local std::map<mpfr_prec_t, std::vector<std::unique_ptr<MpP>>> cache;
  std::vector<std::unique_ptr<MpP>>& terms = cache[p];
  if (static_cast<int>(terms.size()) >= count) return terms;
  MpP two_pi(p), pw(p);
  mpfr_const_pi(two_pi.v, N);
  mpfr_mul_2ui(two_pi.v, two_pi.v, 1, N);
  for (int j = static_cast<int>(terms.size()) + 1; j <= count; ++j) {
    auto c = std::make_unique<MpP>(p);
    mpfr_zeta_ui(c->v, 2 * j, N);
    mpfr_mul_2ui(c->v, c->v, 1, N);
    mpfr_pow_ui(pw.v, two_pi.v, 2 * j, N);
    mpfr_div(c->v, c->v, pw.v, N);
    if (j % 2 == 0) mpfr_neg(c->v, c->v, N);
    terms.push_back(std::move(c));
  }
  return terms;
}

constexpr int64_t kMaxZetaTerms = 20000;

// zeta(s, q) = sum_k (q + k)^-s. (s and q are MPFR numbers: the exact
// derivative witness moves them off the doubles.)
bool ZetaAt(mpfr_srcptr ms, mpfr_srcptr mq, mpfr_prec_t p, mpfr_t out) {
  if (mpfr_nan_p(ms) || mpfr_nan_p(mq)) return mpfr_set_nan(out), true;
  if (mpfr_cmp_ui(ms, 1) == 0) return mpfr_set_inf(out, 1), true;  // the pole
  if (mpfr_cmp_ui(ms, 1) < 0) return mpfr_set_nan(out), true;      // the series diverges
  if (mpfr_sgn(mq) <= 0) {
    if (mpfr_integer_p(mq) || mpfr_inf_p(mq)) return mpfr_set_inf(out, 1), true;  // a term 1/0
    if (!mpfr_integer_p(ms) && !mpfr_inf_p(ms)) return mpfr_set_nan(out), true;  // complex terms
  }
  if (mpfr_inf_p(mq)) return mpfr_set_zero(out, 1), true;  // q = +inf: every term 0
  if (mpfr_inf_p(ms)) {  // each term 0, 1 or inf by q + k against 1
    if (mpfr_sgn(mq) < 0) return false;
    if (mpfr_cmp_ui(mq, 1) < 0) return mpfr_set_inf(out, 1), true;
    mpfr_cmp_ui(mq, 1) == 0 ? mpfr_set_ui(out, 1, N) : (mpfr_set_zero(out, 1), 0);
    return true;
  }
  const double s = mpfr_get_d(ms, N), q = mpfr_get_d(mq, N);  // for sizing only
  // Euler-Maclaurin from w = q + terms: each correction is below the last
  // by (s + 2j)^2 / (2 pi w)^2 < 1/39 once w > s + 2J, so J = p/5 of them
  // take the remainder below 2^-p of the sum.
  const int J = static_cast<int>(p / 5) + 4;
  const double start = s + 2.0 * J + 1;
  const double shift = q >= start ? 0 : std::ceil(start - q);
  MpP sum(p), base(p), term(p), negs(p), sp(p);
  mpfr_set(sp.v, ms, N);
  mpfr_neg(negs.v, ms, N);
  mpfr_set_zero(sum.v, 1);
  if (shift > kMaxZetaTerms) {
    // s is huge: the terms fall off as ((q + k) / (q + k + 1))^s, and the
    // direct sum ends once the tail, below term (1 + (q + k) / (s - 1)), is.
    for (int64_t k = 0; k < 10 * kMaxZetaTerms; ++k) {
      mpfr_add_si(base.v, mq, k, N);
      mpfr_pow(term.v, base.v, negs.v, N);
      mpfr_add(sum.v, sum.v, term.v, N);
      if (mpfr_sgn(base.v) > 0 && !mpfr_zero_p(sum.v)) {
        MpP tail(p);
        MpP s1(p);
        mpfr_sub_ui(s1.v, sp.v, 1, N);
        mpfr_div(tail.v, base.v, s1.v, N);
        mpfr_add_ui(tail.v, tail.v, 1, N);
        mpfr_mul(tail.v, tail.v, term.v, N);
        mpfr_div(tail.v, tail.v, sum.v, N);
        if (mpfr_zero_p(tail.v) || mpfr_get_exp(tail.v) < -static_cast<mpfr_exp_t>(p) - 8) {
          return mpfr_set(out, sum.v, N), true;
        }
      }
    }
    return false;
  }
  const int64_t terms = static_cast<int64_t>(shift);
  std::vector<Mp> parts;  // summed once, correctly rounded
  for (int64_t k = 0; k < terms; ++k) {
    mpfr_add_si(base.v, mq, k, N);
    parts.emplace_back();
    mpfr_set_prec(parts.back().v, p);
    mpfr_pow(parts.back().v, base.v, negs.v, N);
  }
  MpP w(p), wp(p), poch(p), t(p), w2(p);
  mpfr_add_si(w.v, mq, terms, N);
  // w^(1-s) / (s-1) + w^-s / 2
  mpfr_pow(wp.v, w.v, negs.v, N);
  parts.emplace_back();
  mpfr_set_prec(parts.back().v, p);
  mpfr_mul(parts.back().v, wp.v, w.v, N);
  MpP s1(p);
  mpfr_sub_ui(s1.v, sp.v, 1, N);
  mpfr_div(parts.back().v, parts.back().v, s1.v, N);
  parts.emplace_back();
  mpfr_set_prec(parts.back().v, p);
  mpfr_div_2ui(parts.back().v, wp.v, 1, N);
  // + sum_j B_2j/(2j)! s (s+1)...(s+2j-2) w^(-s-2j+1)
  const auto& bern = BernoulliTerms(p, J);
  mpfr_div(wp.v, wp.v, w.v, N);  // w^(-s-1)
  mpfr_sqr(w2.v, w.v, N);
  mpfr_set(poch.v, sp.v, N);
  for (int j = 1; j <= J; ++j) {
    parts.emplace_back();
    mpfr_set_prec(parts.back().v, p);
    mpfr_mul(t.v, bern[j - 1]->v, poch.v, N);
    mpfr_mul(parts.back().v, t.v, wp.v, N);
    mpfr_add_si(t.v, sp.v, 2 * j - 1, N);
    mpfr_mul(poch.v, poch.v, t.v, N);
    mpfr_add_si(t.v, sp.v, 2 * j, N);
    mpfr_mul(poch.v, poch.v, t.v, N);
    mpfr_div(wp.v, wp.v, w2.v, N);
  }
  std::vector<mpfr_ptr> ptrs;
  for (Mp& m : parts) ptrs.push_back(m.v);
  mpfr_sum(out, ptrs.data(), ptrs.size(), N);
  return true;
}

}  // namespace

bool IsSpecialBinary(absl::string_view f) { return f == "zeta" || PolyOf(f).has_value(); }

double SpecialCost(absl::string_view f, double x, double y) {
  if (f == "zeta") {
    if (!std::isfinite(x) || !std::isfinite(y)) return 1;
    return std::min<double>(kMaxZetaTerms, std::max(0.0, x + 80 - y)) + 80;
  }
  const std::optional<Poly> poly = PolyOf(f);
  const std::optional<int64_t> n = Degree(y);
  if (!poly || !n) return 1;
  if (IsChebyshev(poly->family) && *n > kChebyshevRecurrence) return 10;
  return static_cast<double>(std::max<int64_t>(*n, 1));
}

bool SpecialBinary(absl::string_view f, mpfr_srcptr x, mpfr_srcptr y, DType dtype, mpfr_t r) {
  if (f == "zeta") {
    return Ziv([&](mpfr_prec_t p, mpfr_t out) { return ZetaAt(x, y, p, out); }, dtype, r);
  }
  const std::optional<Poly> poly = PolyOf(f);
  const std::optional<int64_t> n = Degree(mpfr_get_d(y, MPFR_RNDZ));  // truncated, as the cast
  if (!poly || !n) return false;
  // The Hermite kernels return NaN past degree 128 (float) or 512 (double)
  // by design, where the value overflows anyway: not modelled.
  if ((poly->family == Family::kH || poly->family == Family::kHe) &&
      *n > (dtype == DType::kF64 ? 512 : 128)) {
    return false;
  }
  return Ziv([&](mpfr_prec_t p, mpfr_t out) { return PolynomialAt(*poly, x, *n, p, out); }, dtype,
             r);
}

}  // namespace divfuzz::exec::exact_internal
