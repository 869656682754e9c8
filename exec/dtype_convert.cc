#include "exec/dtype_convert.h"

namespace divfuzz::exec {

c10::ScalarType ToScalarType(graph::DType dtype) {
  using graph::DType;
  switch (dtype) {
    case DType::kF16:
      return c10::ScalarType::Half;
    case DType::kBF16:
      return c10::ScalarType::BFloat16;
    case DType::kF32:
      return c10::ScalarType::Float;
    case DType::kF64:
      return c10::ScalarType::Double;
    case DType::kC64:
      return c10::ScalarType::ComplexFloat;
    case DType::kC128:
      return c10::ScalarType::ComplexDouble;
    case DType::kI8:
      return c10::ScalarType::Char;
    case DType::kI16:
      return c10::ScalarType::Short;
    case DType::kI32:
      return c10::ScalarType::Int;
    case DType::kI64:
      return c10::ScalarType::Long;
    case DType::kU8:
      return c10::ScalarType::Byte;
    case DType::kBool:
      return c10::ScalarType::Bool;
  }
  return c10::ScalarType::Float;
}

std::optional<graph::DType> FromScalarType(c10::ScalarType type) {
  for (graph::DType d : graph::kAllDTypes) {
    if (ToScalarType(d) == type) return d;
  }
  return std::nullopt;
}

}  // namespace divfuzz::exec
