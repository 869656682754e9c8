// exec::OpRecorder and the judgement of what it records: an intermediate past
// its dtype's range against an early overflow, an op whose inputs were
// already wrong, or a cast.
#include "exec/overflow_recorder.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <functional>
#include <limits>

#include "gtest/gtest.h"
#include "torch/csrc/autograd/autograd.h"

namespace divfuzz::exec {
namespace {

// The ops inside the autograd nodes of f's backward at x (in x's dtype).
std::vector<OpCall> BackwardCalls(const std::function<at::Tensor(const at::Tensor&)>& f,
                                  const at::Tensor& x, const at::Tensor& g) {
  at::AutoGradMode on(true);
  const at::Tensor xx = x.detach().requires_grad_(true);
  const at::Tensor y = f(xx);
  OpRecorder recorder;
  torch::autograd::grad({y}, {xx}, {g.to(x.scalar_type())});
  EXPECT_TRUE(recorder.Complete());
  return recorder.Calls();
}

TEST(OpRecorder, AnIntermediatePastTheRangeInBothRunsIsFound) {
  // norm_backward at p = 0.5: |x|^(p-1)·grad is 1e40 before the norm's
  // factor brings it to 1e30, in float32 and (past float32's range) in float64.
  auto norm = [](const at::Tensor& t) { return at::linalg_vector_norm(t, 0.5); };
  const at::Tensor x = at::tensor({1e-20, 1e-30}, at::kDouble);
  const at::Tensor g = at::tensor(1e25, at::kDouble);
  const std::vector<OpCall> f32 = BackwardCalls(norm, x.to(at::kFloat), g);
  const std::vector<OpCall> f64 = BackwardCalls(norm, x, g);
  ASSERT_FALSE(f32.empty());
  bool overflows = false;
  for (const OpCall& call : f32) overflows = overflows || call.Overflows();
  EXPECT_TRUE(overflows);
  EXPECT_EQ(OverflowPastTheRange(f32, f64, graph::DType::kF32), "aten::mul.Tensor");
  // Judged at a gradient no output is shaped like (a reduction's formula):
  // over each op's whole output, as without the mask.
  EXPECT_EQ(OverflowPastTheRange(f32, f64, graph::DType::kF32, at::ones({5}).to(at::kBool)),
            "aten::mul.Tensor");
  // Nothing is recorded outside a backward, or once the recorder is gone.
  OpRecorder later;
  (void)at::exp(at::tensor({100.0f}));
  EXPECT_TRUE(later.Calls().empty());
}

TEST(OpRecorder, AnExpOfACancelledExponentIsNotPastTheRange) {
  // log_ndtr's backward, exp(-(result + x^2/2)): at x = -46487.2 the float32
  // exponent cancels to garbage and exp overflows, where float64's exponent
  // is about 11 (session 39's judge: a real bug, not an extremal value).
  auto log_ndtr = [](const at::Tensor& t) { return at::special_log_ndtr(t); };
  const at::Tensor x = at::full({16}, static_cast<double>(-46487.19921875f), at::kDouble);
  const at::Tensor g = at::ones({16}, at::kDouble);
  const std::vector<OpCall> f32 = BackwardCalls(log_ndtr, x.to(at::kFloat), g);
  const std::vector<OpCall> f64 = BackwardCalls(log_ndtr, x, g);
  bool overflows = false;
  for (const OpCall& call : f32) overflows = overflows || call.Overflows();
  ASSERT_TRUE(overflows);  // the float32 run does overflow
  EXPECT_EQ(OverflowPastTheRange(f32, f64, graph::DType::kF32), "");
}

// Session 50's PowBackward1 f16 (judged expected): pow(x, x) beside zeros,
// where pow(0, -1) is infinite in float64 too (a pole), and at the subnormal
// 2^-24 pow(x, x - 1) = 2^24 overflows f16 though float64 holds it. Judged
// where the gradient is off (the subnormal's element), the overflow is an
// intermediate past the range; over every element the pole hides it.
TEST(OpRecorder, AnOverflowBesideAPoleIsJudgedWhereTheGradientIsOff) {
  auto pow = [](const at::Tensor& t) { return at::pow(t, t); };
  const at::Tensor x = at::tensor({0.0, std::ldexp(1.0, -24)}, at::kDouble);
  const at::Tensor g = at::zeros({2}, at::kDouble);
  const std::vector<OpCall> f16 = BackwardCalls(pow, x.to(at::kHalf), g);
  const std::vector<OpCall> f64 = BackwardCalls(pow, x, g);
  const at::Tensor off = at::tensor({0, 1}).to(at::kBool);
  EXPECT_EQ(OverflowPastTheRange(f16, f64, graph::DType::kF16), "");
  EXPECT_EQ(OverflowPastTheRange(f16, f64, graph::DType::kF16, off), "aten::pow.Tensor_Tensor");
}

// Session 50's SoftMarginLossBackward0 f32 (judged real): its backward forms
// exp(-t·x), which overflows float32 at an ordinary -t·x = 98.9 where a
// stable formula (a sigmoid) would not; float64 holds exp(98.9) = 8.9e42.
// No operand is at a far end of float32's range: no intermediate past it.
TEST(OpRecorder, AnExpOfAnOrdinaryArgumentIsNoIntermediatePastTheRange) {
  auto loss = [](const at::Tensor& t) {
    return at::soft_margin_loss(t, at::ones_like(t), at::Reduction::None);
  };
  const at::Tensor x = at::tensor({-98.9, 1.0}, at::kDouble);
  const at::Tensor g = at::ones({2}, at::kDouble);
  const std::vector<OpCall> f32 = BackwardCalls(loss, x.to(at::kFloat), g);
  const std::vector<OpCall> f64 = BackwardCalls(loss, x, g);
  bool overflows = false;
  for (const OpCall& call : f32) overflows = overflows || call.Overflows();
  ASSERT_TRUE(overflows);
  const at::Tensor off = at::tensor({1, 0}).to(at::kBool);
  EXPECT_EQ(OverflowPastTheRange(f32, f64, graph::DType::kF32, off), "");
}

// Session 50's Log2Backward0 f32 a61f67a6 (judged expected): log2's backward
// forms x·ln 2, which at the subnormal 1e-40 keeps a few bits; a NaN at
// another element of x made the call's inputs "not finite" as a whole and
// hid it. Judged at the element where the gradient is off, it is found.
TEST(OpRecorder, AnotherElementsNaNDoesNotHideAnUnderflowHere) {
  auto log2 = [](const at::Tensor& t) { return at::log2(t); };
  const at::Tensor x = at::tensor({1e-40, std::nan("")}, at::kDouble);
  const at::Tensor g = at::ones({2}, at::kDouble);
  const std::vector<OpCall> f32 = BackwardCalls(log2, x.to(at::kFloat), g);
  const std::vector<OpCall> f64 = BackwardCalls(log2, x, g);
  const at::Tensor here = at::tensor({1, 0}).to(at::kBool);
  EXPECT_NE(UnderflowBelowTheRange(f32, f64, graph::DType::kF32, here).find("aten::mul"),
            std::string::npos);
  // At the NaN's element nothing is judged.
  EXPECT_EQ(UnderflowBelowTheRange(f32, f64, graph::DType::kF32, at::tensor({0, 1}).to(at::kBool)),
            "");
}

TEST(OpRecorder, ACastIsNoOverflowOfTheFormula) {
  OpCall cast{c10::OperatorName("aten::_to_copy", ""), at::kFloat, true,
              {at::tensor({std::numeric_limits<float>::infinity()}).to(at::kHalf)}};
  EXPECT_FALSE(cast.Overflows());
  OpCall mul{c10::OperatorName("aten::mul", "Tensor"), at::kFloat, true,
             {at::tensor({std::numeric_limits<float>::infinity()})}};
  EXPECT_TRUE(mul.Overflows());
  mul.inputs_finite = false;
  EXPECT_FALSE(mul.Overflows());
}

}  // namespace
}  // namespace divfuzz::exec
