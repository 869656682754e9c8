#include "graph/materialize.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "graph/rng.h"
#include "graph/validate.h"

namespace divfuzz::graph {
namespace {

// Complex values are drawn and rounded part by part.
DType PartDType(DType dtype) {
  if (dtype == DType::kC64) return DType::kF32;
  if (dtype == DType::kC128) return DType::kF64;
  return dtype;
}

constexpr double kTwoPi = 6.283185307179586;

// Box-Muller; one draw per call (the sine half is dropped) keeps it simple to
// reproduce elsewhere. u1 is in (0, 1] so the log is finite.
double Normal01(SplitMix64& rng) {
  double u1 = 1.0 - rng.Uniform01();
  double u2 = rng.Uniform01();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

double Lerp(double low, double high, double u) {
  double span = high - low;
  // low=-max, high=max overflows the span; the weighted form stays finite.
  if (!std::isfinite(span)) return low * (1 - u) + high * u;
  return low + span * u;
}

// A continuous sample for a bool: round to nearest, then nonzero is true.
double ToBoolSample(double x) { return std::nearbyint(x) != 0 ? 1.0 : 0.0; }

// Bytes of one element, complex counted whole: what a SIMD register holds.
int ElementBytes(DType dtype) {
  switch (dtype) {
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16:
      return 2;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF64:
    case DType::kC64:
    case DType::kI64:
      return 8;
    case DType::kC128:
      return 16;
    default:
      return 1;
  }
}

// Distance to the next value of the floating dtype above |x| (at least the
// smallest subnormal).
double Ulp(DType part, double x) {
  if (x == 0 || !std::isfinite(x)) return DenormMin(part);
  return std::max(std::ldexp(Epsilon(part), std::ilogb(x)), DenormMin(part));
}

// x moved by k ulps of the dtype (k may be negative), rounded to the dtype.
double Nudge(DType part, double x, int k) { return RoundToDType(part, x + k * Ulp(part, x)); }

// Integers (or bool) of the table that the dtype holds.
std::vector<double> InRange(DType part, std::initializer_list<double> values) {
  const double lo = MinValue(part), hi = RoundToDType(part, MaxFinite(part));
  std::vector<double> out;
  for (double v : values) {
    if (v >= lo && v <= hi) out.push_back(v);
  }
  return out;
}

// A sample of the background distribution the later generators share.
double Background(SplitMix64& rng, DType part) {
  const double x = Normal01(rng);
  if (part == DType::kBool) return ToBoolSample(x);
  return IsFloating(part) ? x : std::nearbyint(4 * x);
}

// The n x n (rows x cols) matrix kinds, row-major, in double.
using Matrix = std::vector<double>;

Matrix NormalMatrix(SplitMix64& rng, int64_t rows, int64_t cols) {
  Matrix a(static_cast<size_t>(rows * cols));
  for (double& v : a) v = Normal01(rng);
  return a;
}

// k orthonormal vectors of length `rows`, one after the other (vector j at
// [j * rows, (j + 1) * rows)): Gram-Schmidt of normal draws, twice for accuracy.
Matrix Orthonormal(SplitMix64& rng, int64_t rows, int64_t k) {
  Matrix q = NormalMatrix(rng, k, rows);
  for (int64_t j = 0; j < k; ++j) {
    double* qj = &q[j * rows];
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t l = 0; l < j; ++l) {
        const double* ql = &q[l * rows];
        double dot = 0;
        for (int64_t i = 0; i < rows; ++i) dot += ql[i] * qj[i];
        for (int64_t i = 0; i < rows; ++i) qj[i] -= dot * ql[i];
      }
    }
    double norm = 0;
    for (int64_t i = 0; i < rows; ++i) norm += qj[i] * qj[i];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < rows; ++i) qj[i] = norm > 0 ? qj[i] / norm : 0;
  }
  return q;
}

// One rows x cols matrix of a matrix payload kind.
Matrix MatrixOf(const Payload& p, DType part, SplitMix64& rng, int64_t m, int64_t n) {
  const int64_t k = std::min(m, n);
  switch (p.kind) {
    case Payload::Kind::kSingular:
    case Payload::Kind::kNearSingular: {
      Matrix a = NormalMatrix(rng, m, n);
      // Rows when wide, columns when tall (either when square): the line
      // count is min(m, n), so the rank drops below it. A power-of-2 multiple
      // stays exact when the dtype rounds both lines the same way.
      const bool rows = m < n || (m == n && rng.NextBelow(2) == 0);
      const int64_t count = rows ? m : n, len = rows ? n : m;
      const auto at = [&](int64_t line, int64_t i) -> double& {
        return rows ? a[line * n + i] : a[i * n + line];
      };
      const int64_t r = static_cast<int64_t>(rng.NextBelow(count));
      if (count == 1) {
        for (int64_t i = 0; i < len; ++i) at(r, i) = 0;
      } else {
        int64_t q = static_cast<int64_t>(rng.NextBelow(count - 1));
        if (q >= r) ++q;
        constexpr double kFactors[] = {1, -1, 2, -2, 0.5, -0.5};
        const double c = kFactors[rng.NextBelow(6)];
        for (int64_t i = 0; i < len; ++i) at(r, i) = c * RoundToDType(part, at(q, i));
      }
      if (p.kind == Payload::Kind::kNearSingular && len > 0) {
        double& x = at(r, static_cast<int64_t>(rng.NextBelow(len)));
        const int ulps = 1 + static_cast<int>(rng.NextBelow(4));
        x = Nudge(part, RoundToDType(part, x), rng.NextBelow(2) ? ulps : -ulps);
      }
      return a;
    }
    case Payload::Kind::kRankDeficient: {
      const int64_t r = static_cast<int64_t>(p.a);
      const Matrix x = NormalMatrix(rng, m, r), y = NormalMatrix(rng, r, n);
      const double scale = 1 / std::sqrt(static_cast<double>(std::max<int64_t>(r, 1)));
      Matrix a(static_cast<size_t>(m * n), 0.0);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (int64_t l = 0; l < r; ++l) sum += x[i * r + l] * y[l * n + j];
          a[i * n + j] = sum * scale;
        }
      }
      return a;
    }
    case Payload::Kind::kIllConditioned: {
      const Matrix u = Orthonormal(rng, m, k), v = Orthonormal(rng, n, k);
      std::vector<double> s(static_cast<size_t>(k), 1.0);
      for (int64_t l = 1; l < k; ++l) {
        s[l] = std::pow(p.a, -static_cast<double>(l) / static_cast<double>(k - 1));
      }
      Matrix a(static_cast<size_t>(m * n), 0.0);
      for (int64_t l = 0; l < k; ++l) {
        for (int64_t i = 0; i < m; ++i) {
          const double ui = u[l * m + i] * s[l];
          for (int64_t j = 0; j < n; ++j) a[i * n + j] += ui * v[l * n + j];
        }
      }
      return a;
    }
    case Payload::Kind::kSpd: {
      const Matrix b = NormalMatrix(rng, n, n);
      Matrix a(static_cast<size_t>(n * n), 0.0);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = i; j < n; ++j) {
          double sum = 0;
          for (int64_t l = 0; l < n; ++l) sum += b[i * n + l] * b[j * n + l];
          a[i * n + j] = a[j * n + i] = sum / static_cast<double>(n) + (i == j ? 1.0 : 0.0);
        }
      }
      return a;
    }
    case Payload::Kind::kScaled: {
      // Scales stay inside the dtype: |entry| < 10 * 10^decades < max.
      const double decades = std::min(p.a, std::log10(MaxFinite(part)) - 1);
      std::vector<double> row(static_cast<size_t>(m)), col(static_cast<size_t>(n));
      for (double& r : row) r = std::pow(10.0, decades * (rng.Uniform01() - 0.5));
      for (double& c : col) c = std::pow(10.0, decades * (rng.Uniform01() - 0.5));
      Matrix a = NormalMatrix(rng, m, n);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) a[i * n + j] *= row[i] * col[j];
      }
      return a;
    }
    default:
      return Matrix(static_cast<size_t>(m * n), 0.0);
  }
}

// Writes the matrix kinds batch by batch; complex dtypes get them as real
// parts (imaginary parts 0), which keeps every property.
void FillMatrices(const Input& input, DType part, SplitMix64& rng, std::vector<double>& out) {
  const std::vector<int64_t>& shape = input.type.shape;
  if (shape.size() < 2) return;
  const int64_t m = shape[shape.size() - 2], n = shape[shape.size() - 1];
  if (m == 0 || n == 0) return;
  const size_t per = IsComplex(input.type.dtype) ? 2 : 1;
  const int64_t batches = input.type.Numel() / (m * n);
  for (int64_t b = 0; b < batches; ++b) {
    const Matrix a = MatrixOf(input.payload, part, rng, m, n);
    for (size_t i = 0; i < a.size(); ++i) out[(static_cast<size_t>(b * m * n) + i) * per] = a[i];
  }
}

}  // namespace

std::vector<double> LimitValues(DType dtype) {
  const DType part = PartDType(dtype);
  std::vector<double> out = EdgeValues(part);
  if (IsFloating(part)) {
    const double max = MaxFinite(part), sn = SmallestNormal(part), eps = Epsilon(part);
    const double below_max = max - Ulp(part, max);
    for (double v : {below_max, -below_max, std::sqrt(max), -std::sqrt(max),
                     // exp overflows just above log(max) and underflows below log(tiny)
                     std::log(max), Nudge(part, std::log(max), 1), -std::log(max), std::log(sn),
                     std::log(DenormMin(part)), Nudge(part, std::log(DenormMin(part)), -1),
                     sn - DenormMin(part), Nudge(part, sn, 1), -sn, std::sqrt(sn), 1 + eps, 2 / eps,
                     2 / eps + 2, -2 / eps}) {
      out.push_back(RoundToDType(part, v));
    }
    // sinh and cosh stay finite up to log(2 max): between log(max) and there,
    // an exp(x)/2 computed naively overflows though the result fits.
    const double log2max = std::log(max) + std::log(2.0);
    for (double v : {std::log(max) + 0.5, Nudge(part, RoundToDType(part, log2max), -1),
                     RoundToDType(part, log2max), -std::log(max) - 0.5,
                     // a divisor below 1/max makes the quotient overflow
                     1 / max, Nudge(part, RoundToDType(part, 1 / max), -1)}) {
      out.push_back(RoundToDType(part, v));
    }
    // The narrower dtypes' thresholds: kernels that compute in them inside.
    for (DType narrow : {DType::kF32, DType::kF16}) {
      if (ElementBytes(narrow) >= ElementBytes(part)) continue;
      const double nmax = MaxFinite(narrow);
      for (double v : {std::log(nmax), std::log(nmax) + 0.5, std::log(nmax) + std::log(2.0), nmax,
                       SmallestNormal(narrow)}) {
        out.push_back(RoundToDType(part, v));
      }
    }
    return out;
  }
  if (part == DType::kBool) return out;
  const double lo = MinValue(part), hi = RoundToDType(part, MaxFinite(part));
  const double root = std::floor(std::sqrt(hi));
  for (double v :
       InRange(part, {std::floor(hi / 2), std::floor(hi / 2) + 1, std::ceil(lo / 2), root, root + 1,
                      -root - 1, 127, 128, -129, 0x1p24 + 1, 0x1p53 - 1, 0x1p53, -0x1p53})) {
    out.push_back(v);
  }
  return out;
}

std::vector<double> DomainEdgeValues(DType dtype) {
  const DType part = PartDType(dtype);
  if (part == DType::kBool) return {0.0, 1.0};
  if (!IsFloating(part)) {
    return InRange(part, {0, 1, -1, 2, -2, 3, 7, 8, -8, 15, 16, 31, 32, 63, 64, -64, 100});
  }
  constexpr double kPi = 3.141592653589793;
  std::vector<double> out;
  for (double v : {0.0,     -0.0,     1.0,  -1.0,  0.5,     -0.5,     2.0,     -2.0,
                   kPi / 2, -kPi / 2, kPi,  -kPi,  2 * kPi, -2 * kPi, kPi / 4, 2.718281828459045,
                   10.0,    -10.0,    20.0, -20.0, 1e-8,    -1e-8,    1e4,     -1e4,
                   1e8,     -1e8,     1e15}) {
    if (std::fabs(v) <= MaxFinite(part)) out.push_back(RoundToDType(part, v));
  }
  return out;
}

std::vector<int64_t> VectorChunks(DType dtype) {
  const int bytes = ElementBytes(dtype);
  std::vector<int64_t> out;
  for (int chunk : {32, 64, 128}) out.push_back(std::max(1, chunk / bytes));
  return out;
}

std::vector<double> EdgeValues(DType dtype) {
  const DType part = PartDType(dtype);
  if (IsFloating(part)) {
    const double max = MaxFinite(part);
    const double tiny = DenormMin(part);
    return {0.0,
            -0.0,
            tiny,
            -tiny,
            SmallestNormal(part),
            max,
            -max,
            max / 2,
            HUGE_VAL,
            -HUGE_VAL,
            std::numeric_limits<double>::quiet_NaN(),
            1.0,
            -1.0,
            0.5,
            1.0 - Epsilon(part) / 2,  // the largest value below 1
            RoundToDType(part, 1e-3)};
  }
  if (part == DType::kBool) return {0.0, 1.0};
  // i64's extremes are not all doubles: RoundToDType keeps them in range.
  const double lo = MinValue(part);
  const double hi = RoundToDType(part, MaxFinite(part));
  std::vector<double> edges = {0.0, 1.0};
  if (lo < 0) edges.push_back(-1.0);
  for (double v : {lo, hi, lo + 1, hi - 1}) edges.push_back(RoundToDType(part, v));
  return edges;
}

std::vector<double> MaterializePayload(const Input& input) {
  const DType dtype = input.type.dtype;
  const DType part = PartDType(dtype);
  const bool is_bool = dtype == DType::kBool;
  const int64_t numel = input.type.Numel();
  if (numel < 0 || numel > kMaxInputElements) return {};
  const size_t count = static_cast<size_t>(numel) * (IsComplex(dtype) ? 2 : 1);
  const Payload& p = input.payload;
  std::vector<double> out(count, 0.0);
  SplitMix64 rng(p.seed);
  switch (p.kind) {
    case Payload::Kind::kFill: {
      const double v = p.values.empty() ? 0.0 : p.values[0];
      for (size_t i = 0; i < count; ++i) out[i] = IsComplex(dtype) && i % 2 ? 0.0 : v;
      break;
    }
    case Payload::Kind::kValues:
      for (size_t i = 0; i < count && i < p.values.size(); ++i) out[i] = p.values[i];
      break;
    case Payload::Kind::kUniform:
      for (double& v : out) {
        const double u = rng.Uniform01();
        v = is_bool ? (u < 0.5 ? 0.0 : 1.0) : Lerp(p.a, p.b, u);
      }
      break;
    case Payload::Kind::kNormal:
      for (double& v : out) {
        const double x = p.a + p.b * Normal01(rng);
        v = is_bool ? ToBoolSample(x) : x;
      }
      break;
    case Payload::Kind::kSpecial: {
      const std::vector<double> edges = EdgeValues(part);
      for (double& v : out) {
        if (rng.NextBelow(2) == 0) {
          v = edges[rng.NextBelow(edges.size())];
        } else {
          const double x = Normal01(rng);
          v = is_bool ? ToBoolSample(x) : x;
        }
      }
      break;
    }
    case Payload::Kind::kLimits:
    case Payload::Kind::kEdges: {
      const bool limits = p.kind == Payload::Kind::kLimits;
      const std::vector<double> table = limits ? LimitValues(part) : DomainEdgeValues(part);
      for (double& v : out) {
        if (rng.NextBelow(4) == 0) {
          v = Background(rng, part);
          continue;
        }
        v = table[rng.NextBelow(table.size())];
        // Half of the domain edges move a few ulps off: either side of a pole.
        if (!limits && IsFloating(part) && rng.NextBelow(2) == 0) {
          const int ulps = 1 + static_cast<int>(rng.NextBelow(2));
          v = Nudge(part, v, rng.NextBelow(2) ? ulps : -ulps);
        }
      }
      break;
    }
    case Payload::Kind::kTies: {
      const size_t per = IsComplex(dtype) ? 2 : 1;
      std::vector<double> pool(static_cast<size_t>(p.a) * per);
      for (double& v : pool) {
        v = IsFloating(part)     ? RoundToDType(part, Normal01(rng))
            : is_bool            ? static_cast<double>(rng.NextBelow(2))
            : part == DType::kU8 ? static_cast<double>(rng.NextBelow(21))
                                 : static_cast<double>(rng.NextBelow(21)) - 10;
      }
      for (size_t i = 0; i + per <= count && !pool.empty(); i += per) {
        const size_t pick = rng.NextBelow(pool.size() / per) * per;
        for (size_t k = 0; k < per; ++k) out[i + k] = pool[pick + k];
      }
      break;
    }
    case Payload::Kind::kDynamic: {
      // log10 magnitudes in [-decades/2, decades/2], clipped to the normal
      // range of a floating dtype (integers: from 1 up to the max).
      double lo = -p.a / 2, hi = p.a / 2;
      if (IsFloating(part)) {
        lo = std::max(lo, std::log10(SmallestNormal(part)));
        hi = std::min(hi, std::log10(MaxFinite(part)) - 0.01);
      } else {
        lo = std::max(lo, 0.0);
        hi = std::max(lo, std::min(hi, std::log10(MaxFinite(part))));
      }
      const bool unsigned_part = part == DType::kU8 || is_bool;
      for (double& v : out) {
        const double mag = std::pow(10.0, lo + (hi - lo) * rng.Uniform01());
        const bool negative = rng.NextBelow(2) == 1 && !unsigned_part;
        v = is_bool ? 1.0 : negative ? -mag : mag;
      }
      break;
    }
    case Payload::Kind::kPlanted: {
      for (double& v : out) v = Background(rng, part);
      const std::vector<double> table = LimitValues(part);
      const size_t per = IsComplex(dtype) ? 2 : 1;
      const int64_t n = numel;
      for (int64_t chunk : VectorChunks(dtype)) {
        const int64_t body = n - n % chunk;
        std::vector<int64_t> at;
        if (body > 0) at.push_back(static_cast<int64_t>(rng.NextBelow(body)));
        if (n % chunk > 0) at.push_back(body + static_cast<int64_t>(rng.NextBelow(n % chunk)));
        for (int64_t e : at) {
          for (size_t k = 0; k < per; ++k) {
            out[static_cast<size_t>(e) * per + k] = table[rng.NextBelow(table.size())];
          }
        }
      }
      break;
    }
    default:
      FillMatrices(input, part, rng, out);
      break;
  }
  for (double& v : out) v = RoundToDType(part, v);
  return out;
}

}  // namespace divfuzz::graph
