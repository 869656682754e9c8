#include "graph/dtype.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace divfuzz::graph {
namespace {

// The binary format of a floating dtype (complex: of its parts).
struct FloatFormat {
  int frac_bits;  // explicit fraction bits
  int emin;       // exponent of the smallest normal
  double max_finite;
};

std::optional<FloatFormat> FormatOf(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return FloatFormat{10, -14, 65504.0};
    case DType::kBF16:
      return FloatFormat{7, -126, 3.3895313892515355e38};
    case DType::kF32:
    case DType::kC64:
      return FloatFormat{23, -126, FLT_MAX};
    case DType::kF64:
    case DType::kC128:
      return FloatFormat{52, -1022, DBL_MAX};
    default:
      return std::nullopt;
  }
}

// Integer range as doubles, both ends exactly representable and convertible.
bool IntRange(DType dtype, double* lo, double* hi) {
  switch (dtype) {
    case DType::kI8:
      *lo = -128, *hi = 127;
      return true;
    case DType::kI16:
      *lo = -32768, *hi = 32767;
      return true;
    case DType::kI32:
      *lo = -2147483648.0, *hi = 2147483647.0;
      return true;
    case DType::kI64:
      *lo = -0x1p63, *hi = 0x1p63 - 1024;  // largest double below 2^63
      return true;
    case DType::kU8:
      *lo = 0, *hi = 255;
      return true;
    case DType::kBool:
      *lo = 0, *hi = 1;
      return true;
    default:
      return false;
  }
}

// A NaN as a conversion to the format keeps it: the sign and the fraction's top
// frac_bits bits; a narrower format sets the quiet bit, as the hardware's (and
// exec/dtype_convert.h's) conversions do. float64 keeps every bit.
double NaNInFormat(const FloatFormat& f, double v) {
  if (f.frac_bits >= 52) return v;
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  const int drop = 52 - f.frac_bits;
  bits = (bits >> drop << drop) | uint64_t{1} << 51;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

double RoundToFormat(const FloatFormat& f, double v) {
  if (std::isnan(v)) return NaNInFormat(f, v);
  if (!std::isfinite(v) || v == 0) return v;
  // Scaling by a power of two is exact, so nearbyint does the only rounding.
  int e = std::max(std::ilogb(v), f.emin);
  double quantum = std::ldexp(1.0, e - f.frac_bits);
  double r = std::nearbyint(v / quantum) * quantum;
  if (std::fabs(r) > f.max_finite) return std::copysign(HUGE_VAL, v);
  return r;
}

}  // namespace

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kC64:
      return "c64";
    case DType::kC128:
      return "c128";
    case DType::kI8:
      return "i8";
    case DType::kI16:
      return "i16";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
    case DType::kU8:
      return "u8";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

std::optional<DType> ParseDType(std::string_view name) {
  for (DType d : kAllDTypes) {
    if (DTypeName(d) == name) return d;
  }
  return std::nullopt;
}

bool IsFloating(DType dtype) {
  return dtype == DType::kF16 || dtype == DType::kBF16 || dtype == DType::kF32 ||
         dtype == DType::kF64;
}

bool IsComplex(DType dtype) { return dtype == DType::kC64 || dtype == DType::kC128; }

bool IsIntegral(DType dtype) {
  return dtype == DType::kI8 || dtype == DType::kI16 || dtype == DType::kI32 ||
         dtype == DType::kI64 || dtype == DType::kU8;
}

double Epsilon(DType dtype) {
  auto f = FormatOf(dtype);
  return f ? std::ldexp(1.0, -f->frac_bits) : 0.0;
}

double MaxFinite(DType dtype) {
  if (auto f = FormatOf(dtype)) return f->max_finite;
  switch (dtype) {
    case DType::kI8:
      return std::numeric_limits<int8_t>::max();
    case DType::kI16:
      return std::numeric_limits<int16_t>::max();
    case DType::kI32:
      return std::numeric_limits<int32_t>::max();
    case DType::kI64:
      return static_cast<double>(std::numeric_limits<int64_t>::max());
    case DType::kU8:
      return std::numeric_limits<uint8_t>::max();
    default:
      return 1.0;  // bool
  }
}

double MinValue(DType dtype) {
  if (auto f = FormatOf(dtype)) return -f->max_finite;
  double lo = 0, hi = 0;
  IntRange(dtype, &lo, &hi);
  return lo;
}

double DenormMin(DType dtype) {
  auto f = FormatOf(dtype);
  return f ? std::ldexp(1.0, f->emin - f->frac_bits) : 0.0;
}

double SmallestNormal(DType dtype) {
  auto f = FormatOf(dtype);
  return f ? std::ldexp(1.0, f->emin) : 0.0;
}

bool FitsIntegralDType(DType dtype, double v) {
  double lo = 0, hi = 0;
  if (!IntRange(dtype, &lo, &hi)) return false;
  return v >= lo && v <= hi && v == std::trunc(v);
}

double RoundToDType(DType dtype, double v) {
  if (auto f = FormatOf(dtype)) return RoundToFormat(*f, v);
  if (dtype == DType::kBool) return v == 0 ? 0.0 : 1.0;
  double lo = 0, hi = 0;
  IntRange(dtype, &lo, &hi);
  if (std::isnan(v)) return 0.0;
  double r = std::nearbyint(v);
  r = r < lo ? lo : (r > hi ? hi : r);
  return r == 0 ? 0.0 : r;  // no -0 in an integer dtype
}

}  // namespace divfuzz::graph
