#include "exec/exact_reference.h"

#include <ATen/ops/broadcast_tensors.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/scalar_tensor.h>
#include <gmp.h>
#include <mpfr.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "absl/strings/string_view.h"
#include "exec/dtype_convert.h"
#include "exec/exact_internal.h"
#include "exec/references/references.h"
#include "ops/catalogue.h"

namespace divfuzz::exec {
namespace {

using graph::DType;
using graph::Literal;
using namespace exact_internal;

constexpr double kMaxSpecialSteps = 4e6;

// r = f(x) for the unary functions; false when the name is not unary.
bool Unary(absl::string_view f, mpfr_t r, const mpfr_t x) {
  const mpfr_rnd_t N = MPFR_RNDN;
  Mp t, u;
  if (f == "exp") return mpfr_exp(r, x, N), true;
  if (f == "exp2") return mpfr_exp2(r, x, N), true;
  if (f == "expm1") return mpfr_expm1(r, x, N), true;
  if (f == "log") return mpfr_log(r, x, N), true;
  if (f == "log2") return mpfr_log2(r, x, N), true;
  if (f == "log10") return mpfr_log10(r, x, N), true;
  if (f == "log1p") return mpfr_log1p(r, x, N), true;
  if (f == "sqrt") return mpfr_sqrt(r, x, N), true;
  if (f == "rsqrt") {  // 1/sqrt: -0 gives -inf as IEEE division does
    mpfr_sqrt(t.v, x, N);
    return mpfr_ui_div(r, 1, t.v, N), true;
  }
  if (f == "reciprocal") return mpfr_ui_div(r, 1, x, N), true;
  if (f == "sin") return mpfr_sin(r, x, N), true;
  if (f == "cos") return mpfr_cos(r, x, N), true;
  if (f == "tan") return mpfr_tan(r, x, N), true;
  if (f == "asin") return mpfr_asin(r, x, N), true;
  if (f == "acos") return mpfr_acos(r, x, N), true;
  if (f == "atan") return mpfr_atan(r, x, N), true;
  if (f == "sinh") return mpfr_sinh(r, x, N), true;
  if (f == "cosh") return mpfr_cosh(r, x, N), true;
  if (f == "tanh") return mpfr_tanh(r, x, N), true;
  if (f == "asinh") return mpfr_asinh(r, x, N), true;
  if (f == "acosh") return mpfr_acosh(r, x, N), true;
  if (f == "atanh") return mpfr_atanh(r, x, N), true;
  if (f == "erf") return mpfr_erf(r, x, N), true;
  if (f == "erfc") return mpfr_erfc(r, x, N), true;
  if (f == "j0") return mpfr_j0(r, x, N), true;
  if (f == "j1") return mpfr_j1(r, x, N), true;
  if (f == "y0") return mpfr_y0(r, x, N), true;
  if (f == "y1") return mpfr_y1(r, x, N), true;
  if (f == "lgamma") {
    int sign = 0;
    return mpfr_lgamma(r, &sign, x, N), true;
  }
  if (f == "digamma") {
    // PyTorch: digamma(+-0) = -+inf (documented since 1.8), NaN at negative integers.
    if (mpfr_zero_p(x)) return mpfr_set_inf(r, mpfr_signbit(x) ? 1 : -1), true;
    return mpfr_digamma(r, x, N), true;
  }
  if (f == "sigmoid") {  // 1 / (1 + exp(-x))
    mpfr_neg(t.v, x, N);
    mpfr_exp(t.v, t.v, N);
    mpfr_add_ui(t.v, t.v, 1, N);
    return mpfr_ui_div(r, 1, t.v, N), true;
  }
  // x * g(x) with g(-inf) = 0: the limit at -inf is 0, not -inf * 0.
  const bool neg_inf = mpfr_inf_p(x) && mpfr_signbit(x);
  if (f == "gelu") {  // x/2 (1 + erf(x / sqrt 2))
    if (neg_inf) return mpfr_set_zero(r, -1), true;
    mpfr_sqrt_ui(t.v, 2, N);
    mpfr_div(t.v, x, t.v, N);
    mpfr_erf(t.v, t.v, N);
    mpfr_add_ui(t.v, t.v, 1, N);
    mpfr_mul(t.v, t.v, x, N);
    return mpfr_div_ui(r, t.v, 2, N), true;
  }
  if (f == "silu") {  // x sigmoid(x)
    if (neg_inf) return mpfr_set_zero(r, -1), true;
    Unary("sigmoid", t.v, x);
    return mpfr_mul(r, t.v, x, N), true;
  }
  if (f == "mish") {  // x tanh(log1p(exp(x)))
    if (neg_inf) return mpfr_set_zero(r, -1), true;
    mpfr_exp(t.v, x, N);
    mpfr_log1p(t.v, t.v, N);
    mpfr_tanh(t.v, t.v, N);
    return mpfr_mul(r, t.v, x, N), true;
  }
  if (f == "sinc") {  // sin(pi x) / (pi x), 1 at 0
    if (mpfr_zero_p(x)) return mpfr_set_ui(r, 1, N), true;
    mpfr_const_pi(t.v, N);
    mpfr_mul(t.v, t.v, x, N);
    mpfr_sin(u.v, t.v, N);
    return mpfr_div(r, u.v, t.v, N), true;
  }
  if (f == "ndtr" || f == "log_ndtr") {  // erfc(-x / sqrt 2) / 2
    mpfr_sqrt_ui(t.v, 2, N);
    mpfr_div(t.v, x, t.v, N);
    mpfr_neg(t.v, t.v, N);
    mpfr_erfc(t.v, t.v, N);
    mpfr_div_ui(t.v, t.v, 2, N);
    if (f == "log_ndtr" && mpfr_zero_p(t.v) && mpfr_number_p(x) && mpfr_sgn(x) < 0) {
      // erfc underflowed MPFR's exponent range (x below about -4e9; a GPU
      // campaign's log_ndtr(-5.2e12) came out -inf, where it is -1.357e25):
      // log(phi(x) / -x * (1 - 1/x^2)), whose next term, 3/x^4, is far below
      // the precision here.
      mpfr_sqr(t.v, x, N);
      mpfr_ui_div(u.v, 1, t.v, N);
      mpfr_neg(u.v, u.v, N);
      mpfr_log1p(u.v, u.v, N);  // log(1 - 1/x^2)
      mpfr_div_ui(t.v, t.v, 2, N);
      mpfr_sub(u.v, u.v, t.v, N);  // - x^2/2
      mpfr_neg(t.v, x, N);
      mpfr_log(t.v, t.v, N);
      mpfr_sub(u.v, u.v, t.v, N);  // - log(-x)
      mpfr_const_pi(t.v, N);
      mpfr_mul_ui(t.v, t.v, 2, N);
      mpfr_log(t.v, t.v, N);
      mpfr_div_ui(t.v, t.v, 2, N);
      return mpfr_sub(r, u.v, t.v, N), true;  // - log(2 pi) / 2
    }
    return f == "ndtr" ? mpfr_set(r, t.v, N) : mpfr_log(r, t.v, N), true;
  }
  if (f == "erfcx") {  // exp(x^2) erfc(x); 1 / (x sqrt(pi)) (1 - 1/(2x^2)) far out
    if (mpfr_inf_p(x)) {  // erfcx(+inf) = 0, erfcx(-inf) = +inf
      if (mpfr_signbit(x)) return mpfr_set_inf(r, 1), true;
      return mpfr_set_zero(r, 1), true;
    }
    if (mpfr_cmp_d(x, 1e4) > 0) {  // asymptotic; the next term is below 2^-70 relative
      mpfr_sqr(u.v, x, N);
      mpfr_mul_ui(u.v, u.v, 2, N);
      mpfr_ui_div(u.v, 1, u.v, N);
      mpfr_ui_sub(u.v, 1, u.v, N);  // 1 - 1/(2x^2)
      mpfr_const_pi(t.v, N);
      mpfr_sqrt(t.v, t.v, N);
      mpfr_mul(t.v, t.v, x, N);
      mpfr_div(r, u.v, t.v, N);
      return true;
    }
    mpfr_sqr(t.v, x, N);
    mpfr_exp(t.v, t.v, N);
    mpfr_erfc(u.v, x, N);
    return mpfr_mul(r, t.v, u.v, N), true;
  }
  if (f == "entr") {  // -x ln x; 0 at 0; -inf below 0
    if (mpfr_nan_p(x)) return mpfr_set_nan(r), true;
    if (mpfr_sgn(x) < 0) return mpfr_set_inf(r, -1), true;
    if (mpfr_zero_p(x)) return mpfr_set_zero(r, 1), true;
    mpfr_log(t.v, x, N);
    mpfr_mul(t.v, t.v, x, N);
    return mpfr_neg(r, t.v, N), true;
  }
  if (f == "deg2rad" || f == "rad2deg") {
    mpfr_const_pi(t.v, N);
    if (f == "deg2rad") {
      mpfr_mul(r, x, t.v, N);
      return mpfr_div_ui(r, r, 180, N), true;
    }
    mpfr_mul_ui(u.v, x, 180, N);
    return mpfr_div(r, u.v, t.v, N), true;
  }
  return false;
}

// r = f(x, y) (alpha scales y for add/sub, x for rsub); false when not binary
// or outside what the reference models (`dtype`: the result's).
bool Binary(absl::string_view f, mpfr_t r, const mpfr_t x, const mpfr_t y, double alpha,
            DType dtype) {
  const mpfr_rnd_t N = MPFR_RNDN;
  if (IsSpecialBinary(f)) return SpecialBinary(f, x, y, dtype, r);
  Mp t, u;
  if (f == "add" || f == "sub" || f == "rsub") {
    const bool rsub = f == "rsub";
    mpfr_mul_d(t.v, rsub ? x : y, alpha, N);
    if (f == "add") return mpfr_add(r, x, t.v, N), true;
    return mpfr_sub(r, rsub ? y : x, t.v, N), true;
  }
  if (f == "mul") return mpfr_mul(r, x, y, N), true;
  if (f == "div") return mpfr_div(r, x, y, N), true;
  if (f == "atan2") return mpfr_atan2(r, x, y, N), true;
  if (f == "hypot") return mpfr_hypot(r, x, y, N), true;
  if (f == "pow") return mpfr_pow(r, x, y, N), true;
  if (f == "fmod") return mpfr_fmod(r, x, y, N), true;
  if (f == "remainder") {  // Python's %: the sign of the divisor
    mpfr_fmod(t.v, x, y, N);
    if (!mpfr_zero_p(t.v) && !mpfr_nan_p(t.v) && (mpfr_signbit(t.v) != mpfr_signbit(y))) {
      mpfr_add(t.v, t.v, y, N);
    }
    return mpfr_set(r, t.v, N), true;
  }
  if (f == "xlogy" || f == "xlog1py") {  // 0 where x == 0, unless y is NaN
    if (mpfr_nan_p(y)) return mpfr_set_nan(r), true;
    if (mpfr_zero_p(x)) return mpfr_set_zero(r, 1), true;
    f == "xlogy" ? mpfr_log(t.v, y, N) : mpfr_log1p(t.v, y, N);
    return mpfr_mul(r, x, t.v, N), true;
  }
  if (f == "logaddexp" || f == "logaddexp2") {
    const bool two = f == "logaddexp2";
    if (mpfr_inf_p(x) && mpfr_inf_p(y) && mpfr_signbit(x) == mpfr_signbit(y)) {
      return mpfr_set(r, x, N), true;
    }
    if (mpfr_nan_p(x) || mpfr_nan_p(y)) return mpfr_set_nan(r), true;
    // max + log(1 + exp(-|x - y|)): exp(x) itself overflows even MPFR's
    // exponent range past |x| ~ 3e18 (the H100 campaign's logaddexp of
    // -1.27e308, which the CPU got right, was blamed on it).
    const bool x_larger = mpfr_cmp(x, y) >= 0;
    mpfr_srcptr big = x_larger ? x : y;
    if (mpfr_inf_p(big)) return mpfr_set(r, big, N), true;  // +inf; -inf both is above
    mpfr_sub(t.v, x_larger ? y : x, big, N);                // -|x - y| <= 0
    two ? mpfr_exp2(u.v, t.v, N) : mpfr_exp(u.v, t.v, N);   // in (0, 1]
    mpfr_log1p(u.v, u.v, N);
    if (two) mpfr_const_log2(t.v, N), mpfr_div(u.v, u.v, t.v, N);  // log2(1 + 2^d)
    return mpfr_add(r, big, u.v, N), true;
  }
  return false;
}

bool IsBinary(absl::string_view f) {
  return f == "add" || f == "sub" || f == "rsub" || f == "mul" || f == "div" || f == "atan2" ||
         f == "hypot" || f == "pow" || f == "fmod" || f == "remainder" || f == "xlogy" ||
         f == "xlog1py" || f == "logaddexp" || f == "logaddexp2" || IsSpecialBinary(f);
}

// ExactOptions::only as a contiguous bool mask over `n` elements, or undefined
// (every element wanted).
at::Tensor WantedMask(const ExactOptions& options, int64_t n) {
  if (!options.only.defined() || options.only.numel() != n) return at::Tensor();
  return options.only.to(at::kBool).contiguous();
}

std::optional<ExactResult> Elementwise(absl::string_view f, const graph::Node& node,
                                       const std::map<std::string, at::Tensor>& values,
                                       DType dtype, const ExactOptions& options) {
  const bool binary = IsBinary(f);
  const std::optional<DType> round_to =
      options.round_scalars ? std::optional<DType>(dtype) : std::nullopt;
  bool lit0 = false, lit1 = false, lit_alpha = false;
  std::optional<at::Tensor> x = Operand(node, 0, "self", values, round_to, &lit0);
  if (!x && node.args.size() > 0) x = Operand(node, 0, "input", values, round_to, &lit0);
  if (!x && node.args.size() > 0) x = Operand(node, 0, "x", values, round_to, &lit0);
  if (!x) return std::nullopt;
  std::optional<at::Tensor> y;
  if (binary) {
    y = Operand(node, 1, "other", values, round_to, &lit1);
    if (!y) y = Operand(node, 1, "exponent", values, round_to, &lit1);
    if (!y) y = Operand(node, 1, "n", values, round_to, &lit1);
    if (!y) return std::nullopt;
  } else {
    // gelu's tanh approximation, logit's eps and the like are not modelled.
    for (size_t i = 1; i < node.args.size(); ++i) {
      const Literal& l = node.args[i].value;
      if (f == "gelu" && l.kind == Literal::Kind::kString && l.s == "none") continue;
      if (l.kind != Literal::Kind::kNone) return std::nullopt;
    }
  }
  double alpha = 1;
  if (f == "add" || f == "sub" || f == "rsub") {
    std::optional<at::Tensor> a = Operand(node, 2, "alpha", values, round_to, &lit_alpha);
    if (a) {
      if (a->numel() != 1) return std::nullopt;
      alpha = a->item<double>();
    }
  } else if (binary && node.args.size() > 2) {
    return std::nullopt;  // rounding modes and other extras
  }
  std::vector<at::Tensor> parts = {*x};
  if (y) parts.push_back(*y);
  std::vector<at::Tensor> b = at::broadcast_tensors(parts);
  const at::Tensor xs = b[0].contiguous();
  const at::Tensor ys = binary ? b[1].contiguous() : at::Tensor();
  const int64_t n = xs.numel();
  if (n > kMaxElements) return std::nullopt;
  WidenExponentRange();
  std::vector<double> exact(n);
  std::vector<float> as_float(dtype == DType::kF32 ? n : 0);
  const double* px = xs.data_ptr<double>();
  const double* py = binary ? ys.data_ptr<double>() : nullptr;
  const at::Tensor only = WantedMask(options, n);
  const bool* wanted = only.defined() ? only.data_ptr<bool>() : nullptr;
  if (IsSpecialBinary(f)) {
    // A recurrence per element: within a budget of MPFR steps (about a
    // second), or no witness.
    double cost = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (wanted == nullptr || wanted[i]) cost += SpecialCost(f, px[i], py[i]);
    }
    if (cost > kMaxSpecialSteps) return std::nullopt;
  }
  Mp r, mx, my;
  // Which operands read the value differentiated by (derivative_wrt).
  bool moves_x = false, moves_y = false;
  if (!options.derivative_wrt.empty()) {
    auto reads = [&](size_t pos, absl::string_view a, absl::string_view b) {
      const Literal* l = ops::FindArg(node, pos, a);
      if (l == nullptr) l = ops::FindArg(node, pos, b);
      return l != nullptr && l->kind == Literal::Kind::kValue && l->s == options.derivative_wrt;
    };
    moves_x = reads(0, "self", "input");
    moves_y = binary && reads(1, "other", "exponent");
    if (!moves_x && !moves_y) return std::nullopt;
    if ((moves_x && x->sizes() != xs.sizes()) || (moves_y && y->sizes() != xs.sizes())) {
      return std::nullopt;  // broadcast: its gradient sums over the broadcast dims
    }
  }
  // f at the operands moved by t * h (h an MPFR number), into `out`.
  Mp ax, ay;
  auto at_moved = [&](Mp& out, int64_t i, const Mp& h, int t) {
    mpfr_set_d(ax.v, px[i], MPFR_RNDN);
    if (moves_x) mpfr_mul_si(ay.v, h.v, t, MPFR_RNDN), mpfr_add(ax.v, ax.v, ay.v, MPFR_RNDN);
    if (binary) {
      Mp step;
      mpfr_set_d(ay.v, py[i], MPFR_RNDN);
      if (moves_y) mpfr_mul_si(step.v, h.v, t, MPFR_RNDN), mpfr_add(ay.v, ay.v, step.v, MPFR_RNDN);
      return Binary(f, out.v, ax.v, ay.v, alpha, dtype);
    }
    return Unary(f, out.v, ax.v);
  };
  // (f(x + h) - f(x - h)) / 2h as a double; nullopt when f is not modelled.
  auto quotient = [&](int64_t i, double base, int shift) -> std::optional<double> {
    Mp h, fp, fm;
    mpfr_set_d(h.v, base, MPFR_RNDN);
    mpfr_mul_2si(h.v, h.v, -shift, MPFR_RNDN);
    if (!at_moved(fp, i, h, 1) || !at_moved(fm, i, h, -1)) return std::nullopt;
    // At least 2^-100 of |f| must survive the subtraction, or the quotient
    // is rounding residue (exp(1e-300 +- h) both round to 1 at 160 bits).
    Mp scale;
    mpfr_abs(scale.v, fp.v, MPFR_RNDN);
    if (mpfr_cmpabs(fm.v, scale.v) > 0) mpfr_abs(scale.v, fm.v, MPFR_RNDN);
    mpfr_mul_2si(scale.v, scale.v, -100, MPFR_RNDN);
    mpfr_sub(fp.v, fp.v, fm.v, MPFR_RNDN);
    if (mpfr_cmpabs(fp.v, scale.v) < 0) return std::numeric_limits<double>::quiet_NaN();
    mpfr_div(fp.v, fp.v, h.v, MPFR_RNDN);
    mpfr_div_2si(fp.v, fp.v, 1, MPFR_RNDN);
    return mpfr_get_d(fp.v, MPFR_RNDN);
  };
  auto derivative = [&](int64_t i) -> std::optional<double> {
    const double x0 = moves_x ? px[i] : py[i];
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (!std::isfinite(x0) || (binary && !(std::isfinite(px[i]) && std::isfinite(py[i])))) {
      return nan;
    }
    for (double base : {std::fabs(x0), 1.0}) {
      if (base == 0) continue;
      std::optional<double> d1 = quotient(i, base, 64), d2 = quotient(i, base, 72);
      if (!d1 || !d2) return std::nullopt;
      if (std::isfinite(*d1) && std::isfinite(*d2) &&
          std::fabs(*d1 - *d2) <= 0x1p-40 * std::max(std::fabs(*d1), std::fabs(*d2))) {
        return *d2;
      }
    }
    return nan;
  };
  for (int64_t i = 0; i < n; ++i) {
    if (wanted != nullptr && !wanted[i]) {
      exact[i] = std::numeric_limits<double>::quiet_NaN();
      if (!as_float.empty()) as_float[i] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    if (moves_x || moves_y) {
      std::optional<double> d = derivative(i);
      if (!d) return std::nullopt;
      exact[i] = *d;
      if (!as_float.empty()) as_float[i] = static_cast<float>(*d);
      continue;
    }
    mpfr_set_d(mx.v, px[i], MPFR_RNDN);
    bool ok = false;
    if (binary) {
      mpfr_set_d(my.v, py[i], MPFR_RNDN);
      ok = Binary(f, r.v, mx.v, my.v, alpha, dtype);
    } else {
      ok = Unary(f, r.v, mx.v);
    }
    if (!ok) return std::nullopt;
    exact[i] = mpfr_get_d(r.v, MPFR_RNDN);
    if (!as_float.empty()) as_float[i] = mpfr_get_flt(r.v, MPFR_RNDN);
  }
  ExactResult er;
  er.result = Finish(xs.sizes().vec(), exact, as_float, dtype);
  return er;
}

// polygamma(n, x) at its poles, the non-positive integers: +inf for odd n
// (every term of (-1)^(n+1) n! sum 1/(x+k)^(n+1) is positive), undefined
// (NaN) for even n, whose sign flips across the pole. Known exactly only
// there (MPFR has no polygamma): nullopt when a wanted element is no pole.
// The float64 reference runs the same reflection formula and returns
// rounding residue of pi^2/sin^2(pi x) there (pytorch#55357).
std::optional<ExactResult> PolygammaPoles(const graph::Node& node,
                                          const std::map<std::string, at::Tensor>& values,
                                          DType dtype, const ExactOptions& options) {
  const Literal* order = ops::FindArg(node, 0, "n");
  if (order == nullptr || order->kind != Literal::Kind::kInt || order->i < 1) return std::nullopt;
  bool literal = false;
  std::optional<at::Tensor> x = Operand(node, 1, "self", values, std::nullopt, &literal);
  if (!x) return std::nullopt;
  const at::Tensor xs = x->contiguous();
  const int64_t n = xs.numel();
  if (n > kMaxElements) return std::nullopt;
  const at::Tensor only = WantedMask(options, n);
  const bool* wanted = only.defined() ? only.data_ptr<bool>() : nullptr;
  const double* px = xs.data_ptr<double>();
  const double pole = order->i % 2 == 1 ? std::numeric_limits<double>::infinity()
                                        : std::numeric_limits<double>::quiet_NaN();
  std::vector<double> exact(n, std::numeric_limits<double>::quiet_NaN());
  std::vector<float> as_float(dtype == DType::kF32 ? n : 0, std::numeric_limits<float>::quiet_NaN());
  for (int64_t i = 0; i < n; ++i) {
    if (wanted != nullptr && !wanted[i]) continue;
    if (!(std::isfinite(px[i]) && px[i] <= 0 && px[i] == std::floor(px[i]))) return std::nullopt;
    exact[i] = pole;
    if (!as_float.empty()) as_float[i] = static_cast<float>(pole);
  }
  ExactResult er;
  er.result = Finish(xs.sizes().vec(), exact, as_float, dtype);
  return er;
}

}  // namespace

namespace exact_internal {

void WidenExponentRange() {
  static const bool done = [] {
    mpfr_set_emax(mpfr_get_emax_max());
    mpfr_set_emin(mpfr_get_emin_min());
    return true;
  }();
  (void)done;
}

// Argument `pos` (or `name`) as a float64 tensor: a value or a number literal.
std::optional<at::Tensor> Operand(const graph::Node& node, size_t pos, absl::string_view name,
                                  const std::map<std::string, at::Tensor>& values,
                                  std::optional<DType> round_to, bool* is_literal) {
  const Literal* l = ops::FindArg(node, pos, name);
  if (l == nullptr) return std::nullopt;
  *is_literal = l->kind != Literal::Kind::kValue;
  switch (l->kind) {
    case Literal::Kind::kValue: {
      auto it = values.find(l->s);
      if (it == values.end() || !it->second.defined()) return std::nullopt;
      const at::ScalarType st = it->second.scalar_type();
      if (at::isComplexType(st) || st == at::kLong) return std::nullopt;
      return it->second.detach().cpu().to(at::kDouble);
    }
    case Literal::Kind::kFloat:
      return at::scalar_tensor(round_to ? RoundToDType(l->f, *round_to) : l->f, at::kDouble);
    case Literal::Kind::kInt:
      if (std::fabs(static_cast<double>(l->i)) > 9007199254740992.0) return std::nullopt;
      return at::scalar_tensor(
          round_to ? RoundToDType(static_cast<double>(l->i), *round_to) : static_cast<double>(l->i),
          at::kDouble);
    case Literal::Kind::kBool:
      return at::scalar_tensor(l->b ? 1.0 : 0.0, at::kDouble);
    default:
      return std::nullopt;
  }
}

// The double values as a tensor of `dtype` (f32 rounded once from MPFR).
NodeResult Finish(const std::vector<int64_t>& shape, const std::vector<double>& exact,
                  const std::vector<float>& as_float, DType dtype) {
  NodeResult nr;
  at::Tensor e = at::from_blob(const_cast<double*>(exact.data()),
                               {static_cast<int64_t>(exact.size())}, at::kDouble)
                     .clone()
                     .reshape(shape);
  at::Tensor out;
  if (dtype == DType::kF32 && as_float.size() == exact.size()) {
    out = at::from_blob(const_cast<float*>(as_float.data()),
                        {static_cast<int64_t>(as_float.size())}, at::kFloat)
              .clone()
              .reshape(shape);
  } else {
    out = e.to(ToScalarType(dtype));
  }
  nr.exact.push_back(e);
  nr.outputs.push_back(out);
  return nr;
}

}  // namespace exact_internal

std::string ExactMethod(absl::string_view exact_name) {
  return std::string(exact_internal::ReferenceMethod(exact_name));
}

bool ExactUpToBackwardError(absl::string_view exact_name) {
  return exact_internal::IsSpecialBinary(exact_name) && exact_name != "zeta";
}

double RoundToDType(double x, DType dtype) {
  if (dtype == DType::kF64) return x;
  return at::scalar_tensor(x, at::kDouble).to(ToScalarType(dtype)).to(at::kDouble).item<double>();
}

bool HasRoundableScalars(const graph::Node& node, DType dtype) {
  if (!graph::IsFloating(dtype) || dtype == DType::kF64) return false;
  for (const graph::Argument& a : node.args) {
    const Literal& l = a.value;
    if (l.kind == Literal::Kind::kFloat && RoundToDType(l.f, dtype) != l.f) return true;
    if (l.kind == Literal::Kind::kInt &&
        RoundToDType(static_cast<double>(l.i), dtype) != static_cast<double>(l.i)) {
      return true;
    }
  }
  return false;
}

std::optional<at::Tensor> RunExactVjp(const graph::Node& node,
                                      const std::map<std::string, at::Tensor>& values,
                                      const at::Tensor& incoming, const std::string& wrt,
                                      const at::Tensor& saved) {
  const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
  if (spec == nullptr || spec->exact_vjp.empty() || node.results.size() != 1 ||
      node.Uses().empty() || node.Uses()[0] != wrt) {
    return std::nullopt;
  }
  auto x = values.find(wrt);
  if (x == values.end() || !incoming.defined()) return std::nullopt;
  try {
    if (spec->exact_vjp == "logcumsumexp") {
      std::optional<double> dim = exact_internal::NumberArg(node, 1, "dim", 0);
      if (!dim || !std::isfinite(*dim)) return std::nullopt;
      return exact_internal::LogcumsumexpVjp(x->second, incoming, static_cast<int64_t>(*dim),
                                             saved);
    }
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::optional<ExactResult> RunExact(const graph::Node& node,
                                    const std::map<std::string, at::Tensor>& values,
                                    const ops::TypeEnv& types, const ExactOptions& options) {
  const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
  if (spec == nullptr || spec->exact.empty() || node.results.empty()) return std::nullopt;
  auto it = types.find(node.results[0]);
  if (it == types.end() ||
      !(graph::IsFloating(it->second.dtype) || graph::IsComplex(it->second.dtype))) {
    return std::nullopt;
  }
  const DType dtype = it->second.dtype;
  try {
    const absl::string_view f = spec->exact;
    // Derivatives are elementwise only: a reduction's or a structured op's
    // values are no derivative (the gradient oracle would take them as one).
    if (!options.derivative_wrt.empty() &&
        (exact_internal::IsLinearName(f) || IsStructuredName(f))) {
      return std::nullopt;
    }
    if (exact_internal::IsLinearName(f)) {
      return exact_internal::RunExactLinear(f, node, values, dtype);
    }
    if (graph::IsComplex(dtype)) return std::nullopt;
    // Operands rounded to the result dtype first, as PyTorch casts them.
    std::map<std::string, at::Tensor> promoted = values;
    for (auto& [name, t] : promoted) {
      if (auto type = types.find(name); type != types.end()) {
        t = RoundedToResultDType(t, type->second.dtype, dtype);
      }
    }
    if (f == "polygamma_pole") return PolygammaPoles(node, promoted, dtype, options);
    std::optional<ExactResult> er = IsStructuredName(f)
                                         ? RunStructured(f, node, promoted, dtype, options.only)
                                         : Elementwise(f, node, promoted, dtype, options);
    // A reference whose shape is not the op's (an argument it reads
    // otherwise than ATen) judges nothing.
    if (er && (IsStructuredName(f) || IsSpecialBinary(f)) && !er->result.outputs.empty() &&
        er->result.outputs[0].defined() &&
        er->result.outputs[0].sizes().vec() != it->second.shape) {
      return std::nullopt;
    }
    return er;
  } catch (const std::exception&) {
    return std::nullopt;  // inputs the reference cannot take (shapes that do not broadcast)
  }
}

}  // namespace divfuzz::exec
