// Tensor element types of the program format. No libtorch here: graph/ must
// build in seconds and fuzz under sanitizers.
#pragma once

#include <optional>
#include <string_view>

namespace divfuzz::graph {

enum class DType {
  kF16,
  kBF16,
  kF32,
  kF64,
  kC64,
  kC128,
  kI8,
  kI16,
  kI32,
  kI64,
  kU8,
  kBool,
};

inline constexpr DType kAllDTypes[] = {DType::kF16, DType::kBF16, DType::kF32, DType::kF64,
                                       DType::kC64, DType::kC128, DType::kI8,  DType::kI16,
                                       DType::kI32, DType::kI64,  DType::kU8,  DType::kBool};

// The format's spelling: "f16", "bf16", ... "bool".
std::string_view DTypeName(DType dtype);
std::optional<DType> ParseDType(std::string_view name);

bool IsFloating(DType dtype);  // f16 bf16 f32 f64
bool IsComplex(DType dtype);   // c64 c128
bool IsIntegral(DType dtype);  // i8 i16 i32 i64 u8 (not bool)
// Machine epsilon of a floating or complex dtype (of its parts); 0 otherwise.
double Epsilon(DType dtype);
// Largest finite value of a floating dtype, or the max of an integer dtype.
double MaxFinite(DType dtype);
double MinValue(DType dtype);  // lowest finite / integer minimum

// Floating and complex (of the parts) only; 0 otherwise.
double DenormMin(DType dtype);       // smallest positive subnormal, e.g. f32 2^-149
double SmallestNormal(DType dtype);  // e.g. f32 2^-126

// True when v is integral and converts to the integer or bool dtype without
// overflow (bool: 0 or 1). For i64 this excludes 2^63, which is what
// MaxFinite(kI64) rounds to as a double.
bool FitsIntegralDType(DType dtype, double v);

// The value of the dtype nearest to v, as a double. Floating (and complex
// parts): IEEE round-to-nearest-even, overflow to +-inf; a nan keeps its sign
// and the fraction bits the dtype has (the top ones), with the quiet bit set
// below float64 (float64: every bit kept), as a conversion to it. Integers:
// round to nearest (ties to even), clamp to the range (for i64 to 2^63-1024,
// the largest double below 2^63), nan -> 0. bool: 0 stays 0, anything else 1.
double RoundToDType(DType dtype, double v);

}  // namespace divfuzz::graph
