// graph::DType <-> at::ScalarType, and graph::Layout applied to a tensor.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <optional>

#include "graph/dtype.h"
#include "graph/program.h"

namespace divfuzz::exec {

c10::ScalarType ToScalarType(graph::DType dtype);
std::optional<graph::DType> FromScalarType(c10::ScalarType type);

// The same values as `t` (on its device and dtype) in the input layout the
// program asks for: graph/program.h says how each is built. Every target
// applies it after moving and casting, so each sees the same layout; the repro
// emitters spell out the same steps.
at::Tensor ApplyLayout(const at::Tensor& t, graph::Layout layout);

// t.to(to), but every NaN keeps its sign and its payload's top bits (the
// fraction bits `to` has, quiet bit set), as graph::RoundToDType says: torch's
// own float64 -> bfloat16 cast writes 0x7fc0 for every NaN in its scalar loop
// and 0xffff (a negative NaN) in its vectorized one. Exact for float64 and
// complex128 CPU tensors; others are cast by torch as they are.
at::Tensor ToDTypeKeepingNaNs(const at::Tensor& t, c10::ScalarType to);

// `t`, a value the program declares as `declared`, as an elementwise op
// whose result is `result` reads it: PyTorch casts tensor operands to the
// result dtype first (an f32 0-dim tensor beside a bf16 one is rounded to
// bf16), so one wider in precision or range is rounded to it (a bf16 one
// beside f16 underflows and overflows as f16); kept in t's own dtype.
at::Tensor RoundedToResultDType(const at::Tensor& t, graph::DType declared, graph::DType result);

}  // namespace divfuzz::exec
