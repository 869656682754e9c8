// Tolerance policy defaults: torch.testing.assert_close's table.
#pragma once

#include "graph/dtype.h"

namespace divfuzz::oracles {

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

// f16 1e-3/1e-5, bf16 1.6e-2/1e-5, f32 1.3e-6/1e-5, f64 1e-7/1e-7,
// complex like their parts, integers and bool exact (0/0).
Tolerance DefaultTolerance(graph::DType dtype);

}  // namespace divfuzz::oracles
