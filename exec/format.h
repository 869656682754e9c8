// Human-readable tensors for replay output and reports.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace divfuzz::exec {

// "f32[2,2] = [1.5, -inf, nan, 0.25]" with at most max_elements values.
std::string FormatTensor(const at::Tensor& t, size_t max_elements = 16);

}  // namespace divfuzz::exec
