// A float64 rerun whose backward formulas round like a run in a narrower
// dtype: while a guard lives, every floating output of an ATen op that runs
// inside an autograd backward node on this thread (the ops a formula such as
// i1e_backward or softmax's double backward is built from) is moved by eps
// of its magnitude, a random sign per element, in place. One run in the
// dtype rounds each such intermediate once; the float64 backward rounds none,
// and a formula that cancels (i0e(x) - r·(sgn x + 1/x), terms of 74 leaving
// 3.14) amplifies those roundings past what moving its inputs shows. Views
// and in-place results (sharing an input's storage) are left alone. It hooks
// libtorch's RecordFunction, as exec/overflow_recorder.h does.
#pragma once

#include <ATen/record_function.h>

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>

namespace divfuzz::exec {

class IntermediateRounding {
 public:
  // `mirror`: the opposite signs of the same draw. `floor`: the least move of
  // a nonzero value, the dtype's rounding below its normal range (half its
  // smallest subnormal): a run in f16 holds polygamma(2, 1602) = -3.9e-7 on a
  // 2^-24 grid, 15% steps that no relative move of eps shows (session 44's
  // PolygammaBackward0, judged expected). Exact zeros stay. `grid`: the dtype
  // the run being modelled rounds to; a value it represents exactly stays,
  // since a correctly rounded op there makes no error (an exponent of
  // -FLT_MAX that absorbed log|g|: moved by eps it became ±4e31 after
  // + FLT_MAX, and exp of that inf, where the f32 run holds 0 exactly).
  IntermediateRounding(double eps, uint64_t seed, bool mirror, double floor = 0,
                       std::optional<at::ScalarType> grid = std::nullopt);
  ~IntermediateRounding();
  IntermediateRounding(const IntermediateRounding&) = delete;
  IntermediateRounding& operator=(const IntermediateRounding&) = delete;
  // Outputs moved so far.
  int64_t moved() const;

 private:
  at::CallbackHandle handle_ = 0;
};

}  // namespace divfuzz::exec
