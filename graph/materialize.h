// An input's elements, computed from its payload. The generators live here
// rather than in torch so that every target and every repro sees the same bits.
#pragma once

#include <vector>

#include "graph/program.h"

namespace divfuzz::graph {

// Numel() doubles in row-major order; complex dtypes give 2*Numel(), re and im
// interleaved. Every value is exactly representable in the dtype (see
// RoundToDType), so converting it to the tensor's dtype is exact on any path.
// fill(v) on a complex dtype gives v + 0i. Deterministic for a given payload
// (the normal draws use std::log and std::cos, so bit-identical across hosts
// with the same libm). For an input that ValidateProgram
// rejects the result is unspecified (but the call is safe).
std::vector<double> MaterializePayload(const Input& input);

// The edge values special() draws from for a dtype (complex: of its parts):
// floating: 0, -0, +-smallest subnormal, smallest normal, +-max, max/2, +-inf,
// nan, 1, -1, 0.5, the largest value below 1, 1e-3. Integers: 0, 1, -1 if
// signed, min, max, min+1, max-1. bool: 0, 1.
std::vector<double> EdgeValues(DType dtype);

}  // namespace divfuzz::graph
