// exec::OverflowRecorder and the judgement of what it records: an
// intermediate past its dtype's range against an early overflow or a cast.
#include "exec/overflow_recorder.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include "gtest/gtest.h"
#include "torch/csrc/autograd/autograd.h"

namespace divfuzz::exec {
namespace {

OverflowEvent Event(const char* op, const char* overload, std::vector<c10::IValue> inputs,
                    at::Tensor output) {
  return {c10::OperatorName(op, overload), std::move(inputs), {std::move(output)}};
}

TEST(OverflowRecorder, RecordsTheOpsOfABackwardFormulaThatOverflow) {
  // norm_backward at p = 0.5: |x|^(p-1)·grad is 1e40 in float32 before the
  // norm brings it to 1e30.
  at::AutoGradMode on(true);
  const at::Tensor x = at::tensor({1e-20f, 1e-30f}).requires_grad_(true);
  const at::Tensor y = at::linalg_vector_norm(x, 0.5);
  std::vector<OverflowEvent> events;
  {
    OverflowRecorder recorder;
    torch::autograd::grad({y}, {x}, {at::tensor(1e25f)});
    events = recorder.Events();
  }
  ASSERT_FALSE(events.empty());
  bool past = false;
  for (const OverflowEvent& e : events) past = past || PastTheRange(e);
  EXPECT_TRUE(past);
  // Nothing is recorded once the recorder is gone.
  OverflowRecorder later;
  (void)at::exp(at::tensor({1.0f}));
  EXPECT_TRUE(later.Events().empty());
}

TEST(OverflowRecorder, AnEarlyOverflowOrANarrowingCastIsNotPastTheRange) {
  const float inf = std::numeric_limits<float>::infinity();
  // 1e20·1e20 is 1e40 in float64: past float32's range.
  EXPECT_TRUE(PastTheRange(Event("aten::mul", "Tensor",
                                 {at::tensor({1e20f}), at::tensor({1e20f})}, at::tensor({inf}))));
  // cosh(89) is 2.2e38 in float64, within float32's range: a kernel that
  // gave inf overflowed early (the CPU's Sleef cosh, pytorch#48641).
  EXPECT_FALSE(PastTheRange(Event("aten::cosh", "", {at::tensor({89.0f})}, at::tensor({inf}))));
  // A float value cast to Half: the cast narrows, it is not arithmetic past
  // the range of the dtype the formula computes in.
  EXPECT_FALSE(PastTheRange(Event("aten::_to_copy", "",
                                  {at::tensor({1e5f}), c10::IValue(at::kHalf), c10::IValue(),
                                   c10::IValue(), c10::IValue(), c10::IValue(false), c10::IValue()},
                                  at::tensor({inf}).to(at::kHalf))));
}

}  // namespace
}  // namespace divfuzz::exec
