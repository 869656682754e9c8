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

}  // namespace divfuzz::exec
