#include "graph/materialize.h"

#include <cmath>
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

}  // namespace

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
  }
  for (double& v : out) v = RoundToDType(part, v);
  return out;
}

}  // namespace divfuzz::graph
