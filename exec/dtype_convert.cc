#include "exec/dtype_convert.h"

#include <ATen/ops/view_as_real.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <cstdint>
#include <cstring>

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

at::Tensor ToDTypeKeepingNaNs(const at::Tensor& t, c10::ScalarType to) {
  at::Tensor out = t.to(to).contiguous();
  const c10::ScalarType from = t.scalar_type();
  if (!t.defined() || !t.device().is_cpu() || to == from ||
      !(from == at::kDouble || from == at::kComplexDouble) ||
      at::isComplexType(from) != at::isComplexType(to)) {
    return out;
  }
  const at::Tensor src = (t.is_complex() ? at::view_as_real(t) : t).contiguous();
  const at::Tensor dst = out.is_complex() ? at::view_as_real(out) : out;
  const c10::ScalarType part = dst.scalar_type();
  // The format's exponent field and fraction bits.
  int frac_bits = 0, exp_bits = 0;
  if (part == at::kFloat) {
    frac_bits = 23, exp_bits = 8;
  } else if (part == at::kHalf) {
    frac_bits = 10, exp_bits = 5;
  } else if (part == at::kBFloat16) {
    frac_bits = 7, exp_bits = 8;
  } else {
    return out;
  }
  const double* p = src.data_ptr<double>();
  char* q = static_cast<char*>(dst.data_ptr());
  const int64_t n = src.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isnan(p[i])) continue;
    uint64_t bits;
    std::memcpy(&bits, &p[i], sizeof(bits));
    const uint64_t frac = (bits & ((uint64_t{1} << 52) - 1)) >> (52 - frac_bits);
    const uint64_t quiet = uint64_t{1} << (frac_bits - 1);
    const uint32_t nan =
        static_cast<uint32_t>((bits >> 63) << (frac_bits + exp_bits) |
                              ((uint64_t{1} << exp_bits) - 1) << frac_bits | frac | quiet);
    if (part == at::kFloat) {
      std::memcpy(q + i * 4, &nan, 4);
    } else {
      const uint16_t half = static_cast<uint16_t>(nan);
      std::memcpy(q + i * 2, &half, 2);
    }
  }
  return out;
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
  return ToDTypeKeepingNaNs(t, ToScalarType(result)).to(t.scalar_type());
}

}  // namespace divfuzz::exec
