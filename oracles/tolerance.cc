#include "oracles/tolerance.h"

namespace divfuzz::oracles {

Tolerance DefaultTolerance(graph::DType dtype) {
  using graph::DType;
  switch (dtype) {
    case DType::kF16:
      return {1e-3, 1e-5};
    case DType::kBF16:
      return {1.6e-2, 1e-5};
    case DType::kF32:
    case DType::kC64:
      return {1.3e-6, 1e-5};
    case DType::kF64:
    case DType::kC128:
      return {1e-7, 1e-7};
    default:
      return {0, 0};
  }
}

}  // namespace divfuzz::oracles
