// References for ops that are not elementwise, from their documented
// definitions with correctly rounded sums (mpfr_sum): renorm and
// embedding_renorm (p-norms of |x|: CUDA's embedding_renorm sums pow(x, p)
// without abs for p other than 1 and 2, in float64 too, so cuda-f64 shared
// its bug), softmax and log_softmax, avg_pool1d/2d/3d (every window's
// divisor as ATen defines it: count_include_pad, ceil_mode, divisor_override),
// and mode; the normalization layers are in normalization.cc.
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "exec/dtype_convert.h"
#include "exec/exact_internal.h"
#include "exec/references/references.h"
#include "ops/infer.h"

namespace divfuzz::exec::exact_internal {
namespace {

using graph::DType;
using graph::Literal;
constexpr mpfr_rnd_t N = MPFR_RNDN;
constexpr int64_t kMaxTerms = int64_t{1} << 20;  // window terms a pooling reference sums

// The accumulate dtype's epsilon (float for f16/bf16/f32, as both devices
// compute the norms of renorm and embedding_renorm).
double AccEpsilon(DType dtype) {
  return dtype == DType::kF64 ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23);
}

// Whether a norm that decides by `norm > max_norm` is too close to call: a
// kernel's rounded norm (about n eps relative) may fall either side. There
// the two choices differ by about as much, so nothing is lost.
bool TooCloseToCall(const mpfr_t norm, double max_norm, int64_t n, DType dtype) {
  if (!mpfr_number_p(norm)) return false;
  const double v = mpfr_get_d(norm, N);
  return std::fabs(v - max_norm) <= 8.0 * static_cast<double>(n) * AccEpsilon(dtype) * std::fabs(v);
}

// x * (norm > max_norm ? max_norm / (norm + 1e-7) : 1), rounded once: the
// scale both devices apply (the 1e-7 is in both kernels).
void PutScaled(const double* row, int64_t n, const mpfr_t norm, double max_norm, Sink& sink) {
  Mp scale, t, v;
  const bool shrink = mpfr_cmp_d(norm, max_norm) > 0;  // false for NaN, as in the kernels
  if (shrink) {
    mpfr_add_d(t.v, norm, 1e-7, N);
    Mp top(max_norm);
    mpfr_div(scale.v, top.v, t.v, N);
  }
  for (int64_t k = 0; k < n; ++k) {
    mpfr_set_d(v.v, row[k], N);
    if (shrink) mpfr_mul(v.v, v.v, scale.v, N);
    sink.Put(v.v);
  }
}

// renorm(self, p, dim, maxnorm): each slice along dim whose p-norm exceeds
// maxnorm is scaled to it.
std::optional<ExactResult> Renorm(const graph::Node& node, const at::Tensor& x, DType dtype,
                                  const at::Tensor& only) {
  std::optional<double> p = NumberArg(node, 1, "p", std::nan(""));
  std::optional<double> dim = NumberArg(node, 2, "dim", std::nan(""));
  std::optional<double> maxnorm = NumberArg(node, 3, "maxnorm", std::nan(""));
  if (!p || !dim || !maxnorm || !(*p > 0) || !(*maxnorm >= 0) || std::isnan(*dim) || x.dim() == 0) {
    return std::nullopt;  // the kernels raise; float64 shows that
  }
  const int64_t nd = x.dim();
  int64_t d = static_cast<int64_t>(*dim);
  if (d < -nd || d >= nd) return std::nullopt;
  if (d < 0) d += nd;
  // Slices as rows: dim first, the rest flattened.
  const at::Tensor m = x.movedim(d, 0).contiguous();
  const int64_t rows = m.size(0), inner = rows == 0 ? 0 : m.numel() / rows;
  if (m.numel() > kMaxElements) return std::nullopt;
  std::vector<int64_t> others;
  for (int64_t k = 0; k < nd; ++k) {
    if (k != d) others.push_back(k);
  }
  const std::vector<bool> wanted = WantedRows(only, x, others);
  Sink sink{dtype == DType::kF32};
  const double* px = m.data_ptr<double>();
  Mp norm;
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = px + r * inner;
    if (Skipped(wanted, r)) {
      PutNans(inner, sink);
      continue;
    }
    if (!PNorm(row, inner, *p, norm.v) || TooCloseToCall(norm.v, *maxnorm, inner, dtype)) {
      return std::nullopt;
    }
    PutScaled(row, inner, norm.v, *maxnorm, sink);
  }
  ExactResult er;
  er.result = sink.Result(m.sizes().vec(), dtype);
  for (at::Tensor& t : er.result.outputs) t = t.movedim(0, d).contiguous();
  for (at::Tensor& t : er.result.exact) t = t.movedim(0, d).contiguous();
  return er;
}

// embedding_renorm(self, indices, max_norm, norm_type): each distinct row
// that `indices` names, whose norm exceeds max_norm, scaled to it; the other
// rows as they were.
std::optional<ExactResult> EmbeddingRenorm(const graph::Node& node, const at::Tensor& x,
                                           const std::map<std::string, at::Tensor>& values,
                                           DType dtype, const at::Tensor& only) {
  const Literal* il = ops::FindArg(node, 1, "indices");
  std::optional<double> max_norm = NumberArg(node, 2, "max_norm", std::nan(""));
  std::optional<double> p = NumberArg(node, 3, "norm_type", std::nan(""));
  if (il == nullptr || il->kind != Literal::Kind::kValue || !max_norm || !p || std::isnan(*p) ||
      std::isnan(*max_norm) || x.dim() != 2) {
    return std::nullopt;
  }
  auto it = values.find(il->s);
  if (it == values.end() || !it->second.defined() ||
      !at::isIntegralType(it->second.scalar_type(), /*includeBool=*/false)) {
    return std::nullopt;
  }
  const at::Tensor idx = it->second.detach().cpu().to(at::kLong).contiguous().reshape({-1});
  const int64_t rows = x.size(0), inner = x.size(1);
  if (x.numel() > kMaxElements) return std::nullopt;
  std::set<int64_t> named;
  for (int64_t i = 0; i < idx.numel(); ++i) {
    // -rows <= v < 0 names row v + rows, as the CPU kernel and Python's
    // indexing read it (CUDA's kernel reads before the weight: pytorch#88563,
    // session 46's embedding_renorm f64, judged real); beyond, the kernels
    // raise or read out of bounds.
    const int64_t v = idx.data_ptr<int64_t>()[i];
    if (v < -rows || v >= rows) return std::nullopt;
    named.insert(v < 0 ? v + rows : v);
  }
  const at::Tensor m = x.contiguous();
  const double* px = m.data_ptr<double>();
  const std::vector<bool> wanted = WantedRows(only, m, {1});
  Sink sink{dtype == DType::kF32};
  Mp norm;
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = px + r * inner;
    if (Skipped(wanted, r)) {
      PutNans(inner, sink);
      continue;
    }
    if (named.count(r) == 0) {
      mpfr_set_d(norm.v, 0, N);
      PutScaled(row, inner, norm.v, std::numeric_limits<double>::infinity(), sink);
      continue;
    }
    if (!PNorm(row, inner, *p, norm.v) || TooCloseToCall(norm.v, *max_norm, inner, dtype)) {
      return std::nullopt;
    }
    PutScaled(row, inner, norm.v, *max_norm, sink);
  }
  ExactResult er;
  er.result = sink.Result(m.sizes().vec(), dtype);
  return er;
}

// softmax: exp(x_i - max) / sum_j exp(x_j - max); log_softmax: x_i - max -
// log(sum_j exp(x_j - max)). The max is subtracted as the kernels do, so an
// infinite input gives what they give (+inf: NaN; -inf: 0 or -inf).
std::optional<ExactResult> Softmax(const graph::Node& node, const at::Tensor& x, bool log,
                                   DType dtype, const at::Tensor& only) {
  std::optional<double> dim = NumberArg(node, 1, "dim", std::nan(""));
  if (!dim || std::isnan(*dim)) return std::nullopt;
  std::optional<Rows> rows = ToRows(x, {static_cast<int64_t>(*dim)}, /*keepdim=*/true);
  if (!rows || rows->m.numel() > kMaxElements) return std::nullopt;
  const int64_t inner = rows->m.size(1);
  const std::vector<bool> wanted = WantedRows(only, x, {static_cast<int64_t>(*dim)});
  Sink sink{dtype == DType::kF32};
  const double* p = rows->m.data_ptr<double>();
  Mp top, shifted, total, out;
  for (int64_t i = 0; i < rows->m.size(0); ++i) {
    const double* row = p + i * inner;
    if (Skipped(wanted, i)) {
      PutNans(inner, sink);
      continue;
    }
    double mx = -std::numeric_limits<double>::infinity();
    bool nan = false;
    for (int64_t k = 0; k < inner; ++k) {
      nan = nan || std::isnan(row[k]);
      mx = std::max(mx, row[k]);
    }
    mpfr_set_d(top.v, mx, N);
    std::vector<Mp> terms(inner);
    for (int64_t k = 0; k < inner; ++k) {
      mpfr_set_d(shifted.v, row[k], N);
      mpfr_sub(shifted.v, shifted.v, top.v, N);
      mpfr_exp(terms[k].v, shifted.v, N);
    }
    Sum(terms, total.v);
    if (log) mpfr_log(total.v, total.v, N);
    for (int64_t k = 0; k < inner; ++k) {
      if (nan) {
        mpfr_set_nan(out.v);
      } else if (log) {
        mpfr_set_d(shifted.v, row[k], N);
        mpfr_sub(shifted.v, shifted.v, top.v, N);
        mpfr_sub(out.v, shifted.v, total.v, N);
      } else {
        mpfr_div(out.v, terms[k].v, total.v, N);
      }
      sink.Put(out.v);
    }
  }
  ExactResult er;
  er.result = FromRows(sink, *rows, dtype);
  return er;
}

// An int-list argument of `k` entries (a single int repeats); `fallback`
// when absent or []; nullopt when malformed.
std::optional<std::vector<int64_t>> IntsArg(const graph::Node& node, size_t pos,
                                            absl::string_view name, size_t k,
                                            std::vector<int64_t> fallback) {
  const Literal* l = ops::FindArg(node, pos, name);
  if (l == nullptr || l->kind == Literal::Kind::kNone) return fallback;
  if (l->kind == Literal::Kind::kInt) return std::vector<int64_t>(k, l->i);
  if (l->kind != Literal::Kind::kList) return std::nullopt;
  if (l->list.empty()) return fallback;
  std::vector<int64_t> v;
  for (const Literal& item : l->list) {
    if (item.kind != Literal::Kind::kInt) return std::nullopt;
    v.push_back(item.i);
  }
  if (v.size() == 1) v.resize(k, v[0]);
  if (v.size() != k) return std::nullopt;
  return v;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// The mean of every window of the last k dims of x over the output sizes
// `out`: window(d, o, &lo, &hi) gives output o's input range along dim d
// (clipped to the input) and returns its extent as the divisor counts it;
// divisor(extents' product, clipped product) the number it divides by. An
// empty window is 0. Windows `only` does not want are NaN.
using WindowFn = std::function<int64_t(size_t d, int64_t o, int64_t* lo, int64_t* hi)>;
using DivisorFn = std::function<int64_t(int64_t pool, int64_t inside)>;
std::optional<ExactResult> PoolWindows(const at::Tensor& x, const std::vector<int64_t>& out,
                                       int64_t window, DType dtype, const at::Tensor& only,
                                       const WindowFn& window_of, const DivisorFn& divisor_of) {
  const size_t k = out.size();
  std::vector<int64_t> in(k);
  int64_t plane_size = 1, outputs = 1;
  for (size_t d = 0; d < k; ++d) {
    in[d] = x.size(x.dim() - k + d);
    plane_size *= in[d];
    outputs *= out[d];
  }
  const at::Tensor m = x.contiguous();
  if (m.numel() == 0 || plane_size == 0) return std::nullopt;
  const int64_t planes = m.numel() / plane_size;
  if (planes * outputs * window > kMaxTerms) return std::nullopt;
  const double* px = m.data_ptr<double>();
  const at::Tensor wanted = only.defined() && only.numel() == planes * outputs
                                ? only.to(at::kBool).contiguous().reshape({-1})
                                : at::Tensor();
  Sink sink{dtype == DType::kF32};
  Mp out_v;
  std::vector<int64_t> o(k, 0), lo(k), hi(k), at(k);
  for (int64_t b = 0; b < planes; ++b) {
    for (int64_t flat = 0; flat < outputs; ++flat) {
      if (wanted.defined() && !wanted.data_ptr<bool>()[b * outputs + flat]) {
        PutNans(1, sink);
        continue;
      }
      int64_t rest = flat;
      for (size_t d = k; d-- > 0;) o[d] = rest % out[d], rest /= out[d];
      int64_t pool = 1, inside = 1;
      bool empty = false;
      for (size_t d = 0; d < k; ++d) {
        pool *= window_of(d, o[d], &lo[d], &hi[d]);
        if (lo[d] >= hi[d]) empty = true;
        inside *= std::max<int64_t>(hi[d] - lo[d], 0);
      }
      if (empty) {
        mpfr_set_zero(out_v.v, 1);
        sink.Put(out_v.v);
        continue;
      }
      std::vector<Mp> terms;
      at = lo;
      while (true) {
        int64_t offset = 0;
        for (size_t d = 0; d < k; ++d) offset = offset * in[d] + at[d];
        terms.emplace_back(px[b * plane_size + offset]);
        size_t d = k;
        while (d-- > 0) {
          if (++at[d] < hi[d]) break;
          at[d] = lo[d];
        }
        if (d == static_cast<size_t>(-1)) break;
      }
      Sum(terms, out_v.v);
      const int64_t divide = divisor_of(pool, inside);
      if (divide == 0) return std::nullopt;  // the kernels raise
      mpfr_div_si(out_v.v, out_v.v, divide, N);
      sink.Put(out_v.v);
    }
  }
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - k);
  shape.insert(shape.end(), out.begin(), out.end());
  ExactResult er;
  er.result = sink.Result(shape, dtype);
  return er;
}

// avg_pool{k}d(self, kernel_size, stride, padding, ceil_mode,
// count_include_pad[, divisor_override]) as ATen's pooling_output_shape and
// avg_pool kernels define each window and its divisor.
std::optional<ExactResult> AvgPool(const graph::Node& node, const at::Tensor& x, size_t k,
                                   DType dtype, const at::Tensor& only) {
  std::optional<std::vector<int64_t>> kernel = IntsArg(node, 1, "kernel_size", k, {});
  if (!kernel || kernel->empty()) return std::nullopt;
  std::optional<std::vector<int64_t>> stride = IntsArg(node, 2, "stride", k, *kernel);
  std::optional<std::vector<int64_t>> pad = IntsArg(node, 3, "padding", k, std::vector<int64_t>(k, 0));
  std::optional<double> ceil_mode = NumberArg(node, 4, "ceil_mode", 0);
  std::optional<double> include_pad = NumberArg(node, 5, "count_include_pad", 1);
  std::optional<double> divisor = k == 1 ? std::optional<double>(0)
                                         : NumberArg(node, 6, "divisor_override", 0);
  if (!stride || !pad || !ceil_mode || !include_pad || !divisor) return std::nullopt;
  if (x.dim() != static_cast<int64_t>(k) + 1 && x.dim() != static_cast<int64_t>(k) + 2) {
    return std::nullopt;
  }
  std::vector<int64_t> in(k), out(k);
  int64_t window = 1;
  for (size_t d = 0; d < k; ++d) {
    const int64_t K = (*kernel)[d], S = (*stride)[d], P = (*pad)[d];
    in[d] = x.size(x.dim() - k + d);
    if (K <= 0 || S <= 0 || P < 0 || P > K / 2) return std::nullopt;  // the kernels raise
    int64_t o = FloorDiv(in[d] + 2 * P - (K - 1) - 1 + (*ceil_mode != 0 ? S - 1 : 0), S) + 1;
    if (*ceil_mode != 0 && (o - 1) * S >= in[d] + P) --o;
    if (o <= 0) return std::nullopt;
    out[d] = o;
    window *= K;
  }
  return PoolWindows(
      x, out, window, dtype, only,
      [&](size_t d, int64_t o, int64_t* lo, int64_t* hi) {
        const int64_t start = o * (*stride)[d] - (*pad)[d];
        const int64_t end = std::min(start + (*kernel)[d], in[d] + (*pad)[d]);
        *lo = std::max<int64_t>(start, 0);
        *hi = std::min(end, in[d]);
        return end - start;  // the padded window's extent
      },
      [&](int64_t pool, int64_t inside) {
        return *divisor != 0 ? static_cast<int64_t>(*divisor) : *include_pad != 0 ? pool : inside;
      });
}

// adaptive_avg_pool{k}d(self, output_size): window o of a dim of size `in`
// is [floor(o in / out), ceil((o + 1) in / out)), its size the divisor.
std::optional<ExactResult> AdaptiveAvgPool(const graph::Node& node, const at::Tensor& x, size_t k,
                                           DType dtype, const at::Tensor& only) {
  std::optional<std::vector<int64_t>> out = IntsArg(node, 1, "output_size", k, {});
  if (!out || out->size() != k ||
      (x.dim() != static_cast<int64_t>(k) + 1 && x.dim() != static_cast<int64_t>(k) + 2)) {
    return std::nullopt;
  }
  std::vector<int64_t> in(k);
  int64_t window = 1;
  for (size_t d = 0; d < k; ++d) {
    in[d] = x.size(x.dim() - k + d);
    if ((*out)[d] <= 0 || in[d] <= 0) return std::nullopt;
    window *= (in[d] + (*out)[d] - 1) / (*out)[d] + 1;
  }
  return PoolWindows(
      x, *out, window, dtype, only,
      [&](size_t d, int64_t o, int64_t* lo, int64_t* hi) {
        *lo = o * in[d] / (*out)[d];
        *hi = ((o + 1) * in[d] + (*out)[d] - 1) / (*out)[d];
        return *hi - *lo;
      },
      [](int64_t pool, int64_t) { return pool; });
}

// mode(self, dim, keepdim): the most frequent value of each row (NaNs
// counted together, as the kernels group them). Rows outside `only` are
// not evaluated (NaN); a wanted row whose most frequent value is tied has
// no single answer (index_ties judges those), so there is no witness.
std::optional<ExactResult> Mode(const graph::Node& node, const at::Tensor& x, DType dtype,
                                const at::Tensor& only) {
  std::optional<double> dim = NumberArg(node, 1, "dim", -1);
  std::optional<double> keepdim = NumberArg(node, 2, "keepdim", 0);
  if (!dim || !keepdim) return std::nullopt;
  std::optional<Rows> rows = ToRows(x, {static_cast<int64_t>(*dim)}, *keepdim != 0);
  if (!rows || rows->m.size(1) == 0 || rows->m.numel() > kMaxElements) return std::nullopt;
  const int64_t outer = rows->m.size(0), inner = rows->m.size(1);
  const at::Tensor wanted = only.defined() && only.numel() == outer
                                ? only.to(at::kBool).contiguous().reshape({-1})
                                : at::Tensor();
  const double* p = rows->m.data_ptr<double>();
  Sink sink{dtype == DType::kF32};
  Mp out;
  for (int64_t i = 0; i < outer; ++i) {
    if (wanted.defined() && !wanted.data_ptr<bool>()[i]) {
      mpfr_set_nan(out.v);
      sink.Put(out.v);
      continue;
    }
    std::vector<double> v(p + i * inner, p + (i + 1) * inner);
    std::sort(v.begin(), v.end(), [](double a, double b) {
      return !std::isnan(a) && (std::isnan(b) || a < b);
    });
    int64_t best = 0, ties = 0;
    double value = v[0];
    for (int64_t k = 0; k < inner;) {
      int64_t e = k + 1;
      while (e < inner && (v[e] == v[k] || (std::isnan(v[e]) && std::isnan(v[k])))) ++e;
      if (e - k > best) {
        best = e - k, value = v[k], ties = 0;
      } else if (e - k == best) {
        ++ties;
      }
      k = e;
    }
    if (ties > 0) return std::nullopt;
    mpfr_set_d(out.v, value, N);
    sink.Put(out.v);
  }
  ExactResult er;
  er.result = sink.Result(rows->reduced, dtype);
  return er;
}

// var_mean and std_mean (every overload): (the variance or standard
// deviation with its correction, the mean), from the exact mean. Both
// outputs are compared, so every row is evaluated.
std::optional<ExactResult> VarMean(absl::string_view overload, const graph::Node& node,
                                   const at::Tensor& x, bool root, DType dtype) {
  std::optional<std::vector<int64_t>> dims = std::vector<int64_t>{};
  std::optional<double> correction = 1, keepdim = 0;
  if (overload.empty()) {  // (self, unbiased=True)
    correction = NumberArg(node, 1, "unbiased", 1);
  } else if (overload == "dim") {  // (self, dim, unbiased=True, keepdim=False)
    dims = DimsArg(node, 1, "dim");
    correction = NumberArg(node, 2, "unbiased", 1);
    keepdim = NumberArg(node, 3, "keepdim", 0);
  } else if (overload == "correction") {  // (self, dim=None, *, correction=None, keepdim=False)
    dims = DimsArg(node, 1, "dim");
    correction = NumberArg(node, 1000, "correction", 1);
    keepdim = NumberArg(node, 1000, "keepdim", 0);
  } else {
    return std::nullopt;
  }
  if (!dims || !correction || !keepdim) return std::nullopt;
  std::optional<Rows> rows = ToRows(x, *dims, *keepdim != 0);
  if (!rows || rows->m.size(1) == 0 || rows->m.numel() > kMaxElements) return std::nullopt;
  const int64_t inner = rows->m.size(1);
  if (!(inner - *correction > 0)) return std::nullopt;  // inf or NaN by max(0, n - c)
  const double* p = rows->m.data_ptr<double>();
  Sink spread{dtype == DType::kF32}, centre{dtype == DType::kF32};
  Mp mean, var, divisor(inner - *correction);
  for (int64_t i = 0; i < rows->m.size(0); ++i) {
    MeanAndSquaredDeviations(p + i * inner, inner, mean.v, var.v);
    mpfr_div(var.v, var.v, divisor.v, N);
    if (root) mpfr_sqrt(var.v, var.v, N);
    spread.Put(var.v);
    centre.Put(mean.v);
  }
  ExactResult er;
  er.result = spread.Result(rows->reduced, dtype);
  NodeResult second = centre.Result(rows->reduced, dtype);
  er.result.outputs.push_back(second.outputs[0]);
  er.result.exact.push_back(second.exact[0]);
  return er;
}

}  // namespace

std::vector<bool> WantedRows(const at::Tensor& only, const at::Tensor& x,
                             const std::vector<int64_t>& dims) {
  if (!only.defined() || only.numel() != x.numel()) return {};
  std::optional<Rows> r = ToRows(only.to(at::kDouble).reshape(x.sizes()), dims, true);
  if (!r) return {};
  const at::Tensor any = r->m.ne(0).any(1).contiguous();
  std::vector<bool> out(any.numel());
  for (int64_t i = 0; i < any.numel(); ++i) out[i] = any.data_ptr<bool>()[i];
  return out;
}

bool Skipped(const std::vector<bool>& wanted, int64_t row) {
  return !wanted.empty() && !wanted[row];
}

void PutNans(int64_t n, Sink& sink) {
  Mp nan;
  mpfr_set_nan(nan.v);
  for (int64_t k = 0; k < n; ++k) sink.Put(nan.v);
}

bool IsStructuredName(absl::string_view f) {
  return f == "renorm" || f == "embedding_renorm" || f == "softmax" || f == "log_softmax" ||
         f == "avg_pool1d" || f == "avg_pool2d" || f == "avg_pool3d" || f == "mode" ||
         f == "adaptive_avg_pool1d" || f == "adaptive_avg_pool2d" || f == "adaptive_avg_pool3d" ||
         absl::StartsWith(f, "var_mean") || absl::StartsWith(f, "std_mean") ||
         IsNormalizationName(f);
}

std::optional<ExactResult> RunStructured(absl::string_view f, const graph::Node& node,
                                         const std::map<std::string, at::Tensor>& values,
                                         DType dtype, const at::Tensor& only) {
  if (graph::IsComplex(dtype)) return std::nullopt;
  WidenExponentRange();
  std::optional<at::Tensor> x = TensorArg(node, 0, "self", values);
  if (!x) x = TensorArg(node, 0, "input", values);
  if (!x) return std::nullopt;
  if (f == "renorm") return Renorm(node, *x, dtype, only);
  if (f == "embedding_renorm") return EmbeddingRenorm(node, *x, values, dtype, only);
  if (f == "softmax" || f == "log_softmax") {
    return Softmax(node, *x, f == "log_softmax", dtype, only);
  }
  if (f == "avg_pool1d") return AvgPool(node, *x, 1, dtype, only);
  if (f == "avg_pool2d") return AvgPool(node, *x, 2, dtype, only);
  if (f == "avg_pool3d") return AvgPool(node, *x, 3, dtype, only);
  if (f == "mode") return Mode(node, *x, dtype, only);
  if (f == "adaptive_avg_pool1d") return AdaptiveAvgPool(node, *x, 1, dtype, only);
  if (f == "adaptive_avg_pool2d") return AdaptiveAvgPool(node, *x, 2, dtype, only);
  if (f == "adaptive_avg_pool3d") return AdaptiveAvgPool(node, *x, 3, dtype, only);
  // var_mean, var_mean.dim, var_mean.correction (and std_mean's)
  for (absl::string_view base : {"var_mean", "std_mean"}) {
    absl::string_view rest = f;
    if (absl::ConsumePrefix(&rest, base) && (rest.empty() || absl::ConsumePrefix(&rest, "."))) {
      return VarMean(rest, node, *x, base == "std_mean", dtype);
    }
  }
  if (IsNormalizationName(f)) return RunNormalization(f, node, *x, values, dtype, only);
  return std::nullopt;
}

absl::string_view ReferenceMethod(absl::string_view f) {
  if (f == "zeta") return "Hurwitz zeta by Euler-Maclaurin in MPFR";
  if (f == "renorm" || f == "embedding_renorm") return "the p-norms of |x| as correctly rounded sums in MPFR";
  if (f == "softmax" || f == "log_softmax") return "the exponentials' correctly rounded sum in MPFR";
  if (absl::StartsWith(f, "avg_pool") || absl::StartsWith(f, "adaptive_avg_pool")) {
    return "each window's correctly rounded sum over its divisor";
  }
  if (absl::StartsWith(f, "var_mean") || absl::StartsWith(f, "std_mean")) {
    return "the exact mean and variance in MPFR";
  }
  if (f == "mode") return "the most frequent value of each row, counted exactly";
  if (IsNormalizationName(f)) return NormalizationMethod(f);
  if (IsSpecialBinary(f)) return "the polynomial's three-term recurrence (Chebyshev: closed form) in MPFR";
  return "";
}

}  // namespace divfuzz::exec::exact_internal
