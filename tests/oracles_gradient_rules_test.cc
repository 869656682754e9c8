// The gradient rules of oracles/rules.def on their own: each excuses what
// its clause covers and holds a finding beside it that it must not excuse.
#include <ATen/ATen.h>

#include "gtest/gtest.h"
#include "oracles/rules/gradient_rule.h"
#include "tests/test_util.h"

namespace divfuzz::oracles::rules {
namespace {

using testing::MustInfer;
using testing::MustParse;

struct Case {
  graph::Program program;
  ops::TypeEnv types;
  Divergence d;
};

GradientContext ContextOf(const Case& k, const std::map<std::string, at::Tensor>& inputs,
                          const std::vector<at::Tensor>& incoming, const at::Tensor& a,
                          const at::Tensor& b, const at::Tensor& witness, bool pointwise) {
  static const Policy policy = DefaultPolicy();  // the context holds a reference
  return GradientContext{k.program.nodes[0], k.types, policy, k.d, 0,
                         k.program.nodes[0].Uses()[0], graph::DType::kF32, pointwise,
                         {inputs, incoming, a, witness}, {inputs, incoming, b, witness}};
}

TEST(GradientRules, ALocalDerivativeThatOverflowsIsExtremalOneInRangeIsNot) {
  Case k{MustParse(R"(divfuzz v1
input %x: f32[2] = values(90.0, 1.0)
%y = aten::sinh(%x)
output %y
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kClassSplit;
  k.d.element = 0;
  // sinh'(90) = cosh(90) = 6.1e38 overflows f32 though 1e-3 of it fits.
  const at::Tensor x = at::tensor({90.0, 1.0}, at::kDouble);
  const at::Tensor v = at::full({2}, 1e-3f);
  const at::Tensor witness = at::cosh(x) * 1e-3;
  GradientContext c = ContextOf(k, {{"x", x}}, {v}, at::tensor({INFINITY, 1.5e-3f}),
                                witness.to(at::kFloat), witness, true);
  std::optional<RuleMatch> m = gradient_extremal_values(c);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_extremal_values");
  // At 88, cosh fits f32 (8.3e37): an infinite gradient there is a finding.
  const at::Tensor x88 = at::tensor({88.0, 1.0}, at::kDouble);
  const at::Tensor w88 = at::cosh(x88) * 1e-3;
  GradientContext in_range = ContextOf(k, {{"x", x88}}, {v}, at::tensor({INFINITY, 1.5e-3f}),
                                       w88.to(at::kFloat), w88, true);
  EXPECT_FALSE(gradient_extremal_values(in_range).has_value());
}

TEST(GradientRules, ConditioningExcusesAnIllConditionedSolveNotAWellConditionedOne) {
  Case k{MustParse(R"(divfuzz v1
input %a: f32[2,2] = values(1.0, 1.0, 1.0, 1.0001)
%l = aten::logdet(%a)
output %l
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kTolerance;
  // logdet's gradient is A^-T: cond(A) about 4e4 amplifies f32 rounding.
  const at::Tensor a = at::tensor({1.0, 1.0, 1.0, 1.0001}, at::kDouble).reshape({2, 2});
  const at::Tensor w = at::linalg_inv(a).transpose(0, 1).contiguous();
  const at::Tensor off = (w * (1 + 1e-4)).to(at::kFloat);
  GradientContext ill = ContextOf(k, {{"a", a}}, {at::ones({})}, off, w.to(at::kFloat), w, false);
  std::optional<RuleMatch> m = gradient_conditioning(ill);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_conditioning");
  // The identity is perfectly conditioned: 1e-4 relative is a finding there.
  const at::Tensor eye = at::eye(2, at::kDouble);
  GradientContext well = ContextOf(k, {{"a", eye}}, {at::ones({})}, (eye * (1 + 1e-4)).to(at::kFloat),
                                   eye.to(at::kFloat), eye, false);
  EXPECT_FALSE(gradient_conditioning(well).has_value());
}

TEST(GradientRules, SummationBoundsAnElementwiseBackwardByItsOwnTermsOnly) {
  Case k{MustParse(R"(divfuzz v1
input %x: f32[64] = normal(seed=1)
%y = aten::sin(%x)
output %y
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kTolerance;
  const at::Tensor x = at::linspace(0.1, 1.0, 64, at::kDouble);
  const at::Tensor w = at::cos(x);
  // 40 ulps off: within 2·64·eps if all 64 cotangents summed into each
  // element, but sin's backward sums nothing.
  const at::Tensor off = (w * (1 + 40 * 1.2e-7)).to(at::kFloat);
  GradientContext c = ContextOf(k, {{"x", x}}, {at::ones({64})}, off, w.to(at::kFloat), w, true);
  EXPECT_FALSE(gradient_summation(c).has_value());
  // A reduction's backward does sum: sum over 64 terms of a broadcast.
  const at::Tensor near = (w * (1 + 2 * 1.2e-7)).to(at::kFloat);
  GradientContext small = ContextOf(k, {{"x", x}}, {at::ones({64})}, near, w.to(at::kFloat), w, true);
  EXPECT_TRUE(gradient_summation(small).has_value());
}

TEST(GradientRules, BackwardStableTakesRoundedInputsNotAWrongFormula) {
  Case k{MustParse(R"(divfuzz v1
input %x: f32[3] = values(30.0, 0.5, 2.0)
%y = aten::exp(%x)
output %y
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kTolerance;
  const at::Tensor x = at::tensor({30.0, 0.5, 2.0}, at::kDouble);
  const at::Tensor w = at::exp(x);
  // exp's backward reuses its rounded output: 30 ulps of exp(30) relative is
  // within exp at 30 (1 ± 4 eps): the argument's rounding amplified by 30.
  at::Tensor rounded = w.to(at::kFloat);
  rounded[0] = static_cast<float>(w[0].item<double>() * (1 + 30 * 1.19e-7));
  GradientContext c = ContextOf(k, {{"x", x}}, {at::ones({3})}, rounded, w.to(at::kFloat), w, true);
  std::optional<RuleMatch> m = gradient_backward_stable(c);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_backward_stable");
  // Twice the gradient is no rounding.
  GradientContext wrong = ContextOf(k, {{"x", x}}, {at::ones({3})}, (w * 2).to(at::kFloat),
                                    w.to(at::kFloat), w, true);
  EXPECT_FALSE(gradient_backward_stable(wrong).has_value());
}

}  // namespace
}  // namespace divfuzz::oracles::rules
