// graph::DType <-> at::ScalarType.
#pragma once

#include <c10/core/ScalarType.h>

#include <optional>

#include "graph/dtype.h"

namespace divfuzz::exec {

c10::ScalarType ToScalarType(graph::DType dtype);
std::optional<graph::DType> FromScalarType(c10::ScalarType type);

}  // namespace divfuzz::exec
