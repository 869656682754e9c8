#include "exec/dtype_convert.h"

#include <ATen/ops/zeros.h>

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

at::Tensor ApplyLayout(const at::Tensor& t, graph::Layout layout) {
  switch (layout) {
    case graph::Layout::kContiguous:
      return t;
    case graph::Layout::kTransposed:
      if (t.dim() < 2) return t;
      return t.transpose(-1, -2).contiguous().transpose(-1, -2);
    case graph::Layout::kStrided: {
      if (t.dim() < 1) return t;
      std::vector<int64_t> sizes = t.sizes().vec();
      sizes.back() *= 2;
      at::Tensor view = at::zeros(sizes, t.options()).slice(-1, 0, sizes.back(), 2);
      view.copy_(t);
      return view;
    }
    case graph::Layout::kChannelsLast:
      if (t.dim() != 4) return t;
      return t.contiguous(at::MemoryFormat::ChannelsLast);
  }
  return t;
}

at::Tensor RoundedToResultDType(const at::Tensor& t, graph::DType declared, graph::DType result) {
  // bf16 -> f16 gains precision but loses range: 2^-133 becomes 0.
  if (!t.defined() || !graph::IsFloating(declared) ||
      !(graph::Epsilon(declared) < graph::Epsilon(result) ||
        graph::DenormMin(declared) < graph::DenormMin(result) ||
        graph::MaxFinite(declared) > graph::MaxFinite(result))) {
    return t;
  }
  return t.to(ToScalarType(result)).to(t.scalar_type());
}

}  // namespace divfuzz::exec
