// The gradient rules of oracles/rules.def on their own: each excuses what
// its clause covers and holds a finding beside it that it must not excuse.
#include <ATen/ATen.h>

#include <ATen/core/grad_mode.h>

#include <cmath>
#include <functional>
#include <limits>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "ops/catalogue.h"
#include "torch/csrc/autograd/autograd.h"
#include "exec/exact_reference.h"
#include "exec/executor.h"
#include "graph/gradient.h"
#include "oracles/compare.h"
#include "oracles/gradient.h"
#include "oracles/rules/gradient_rule.h"
#include "oracles/rules/rule.h"
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

// A one-node program's case, its divergence of class `cls` (at `element`).
Case CaseOf(const char* text, DivergenceClass cls, long long element = -1) {
  Case k{MustParse(text), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = cls;
  k.d.element = element;
  return k;
}

// logcumsumexp over `dim` of an input typed `type` ("bf16[16]"), a tolerance
// divergence at its backward: the scan-carry rule's cases.
Case LogcumsumexpCase(const std::string& type, int dim) {
  Case k{MustParse("divfuzz v1\ninput %x: " + type + " = normal(seed=1)\n%y = aten::logcumsumexp(%x, " +
                   std::to_string(dim) + ")\noutput %y\n"),
         {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kTolerance;
  k.d.op = "LogcumsumexpBackward0";
  return k;
}

GradientContext ContextOf(const Case& k, const std::map<std::string, at::Tensor>& inputs,
                          const std::vector<at::Tensor>& incoming, const at::Tensor& a,
                          const at::Tensor& b, const at::Tensor& witness, bool pointwise,
                          graph::DType dtype = graph::DType::kF32) {
  static const Policy policy = DefaultPolicy();  // the context holds a reference
  return GradientContext{k.program.nodes[0], k.types, policy, k.d, 0,
                         k.program.nodes[0].Uses()[0], dtype, pointwise,
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

// Session 46's CumprodBackward0 f32: factors whose product is subnormal in
// some multiplication orders (2^-149 among them) keep a few bits there, and
// an incoming 2e38 shows it; a row whose small factors stay normal does not.
TEST(GradientRules, CumprodFactorsMultiplyingBelowTheNormalRangeAreExtremal) {
  for (const bool subnormal : {true, false}) {
    Case k = CaseOf(R"(divfuzz v1
input %x: f32[4] = values(0.5, 0.25, 2.0, 3.0)
%y = aten::cumprod(%x, 0)
output %y
)", DivergenceClass::kTolerance, 3);
    const at::Tensor x = subnormal ? at::tensor({1e-30, 1e-20, 2.0, 3.0}, at::kDouble)
                                   : at::tensor({0.5, 0.25, 2.0, 3.0}, at::kDouble);
    const at::Tensor v = at::full({4}, 1.0f);
    const at::Tensor w = at::tensor({10.0, 20.0, 30.0, 40.0}, at::kDouble);
    GradientContext c = ContextOf(k, {{"x", x}}, {v}, at::tensor({10.f, 20.f, 30.f, 44.f}),
                                  w.to(at::kFloat), w, false);
    c.hints = ops::FindOp("aten::cumprod")->hints;
    std::optional<RuleMatch> m = gradient_extremal_values(c);
    EXPECT_EQ(m.has_value(), subnormal) << (m ? m->reason : "");
    if (m) EXPECT_NE(m->reason.find("below 1"), std::string::npos) << m->reason;
  }
}

// Session 46's GridSampler2DBackward0 f32 (bicubic; judged expected three
// times): coordinates and weights in float by design, each side within the
// weights' rounding over each input's stencil of its own float64 backward.
// 10% off is not. In bf16 a CUDA side's weights and sums round to bf16 by
// design: 2% off is within; a CPU side, whose coordinates round in bf16
// (judged real), only where it is correctly rounded.
TEST(GradientRules, GridSamplerWeightsBoundTheInputGradientInFloat32Only) {
  for (const char* dtype : {"f32", "bf16"}) {
    Case k = CaseOf((std::string("divfuzz v1\ninput %x: ") + dtype +
                     "[1,1,4,4] = normal(seed=1)\ninput %g: " + dtype +
                     "[1,2,2,2] = uniform(seed=2, low=-1.0, high=1.0)\n"
                     "%y = aten::grid_sampler(%x, %g, 2, 1, False)\noutput %y\n").c_str(),
                    DivergenceClass::kTolerance, 0);
    const at::Tensor x = at::randn({1, 1, 4, 4}, at::kDouble);
    const at::Tensor grid = at::rand({1, 2, 2, 2}, at::kDouble) * 2 - 1;
    const at::Tensor g = at::randn({1, 1, 2, 2}, at::kDouble) * 1e6;
    at::Tensor xr = x.clone().requires_grad_(true);
    const at::Tensor y = at::grid_sampler(xr, grid, 2, 1, false);
    const at::Tensor witness = torch::autograd::grad({y}, {xr}, {g})[0].detach();
    const graph::DType dt = std::string(dtype) == "f32" ? graph::DType::kF32 : graph::DType::kBF16;
    for (const double off : {1e-6, 0.1}) {
      const at::Tensor a = witness * (1 + off);
      GradientContext c = ContextOf(k, {{"x", x}, {"g", grid}}, {g}, a, witness, witness, false, dt);
      std::optional<RuleMatch> m = gradient_interpolation_weights(c);
      EXPECT_EQ(m.has_value(), off < 1e-3) << dtype << " " << off;
    }
    if (dt != graph::DType::kBF16) continue;
    for (const bool cuda : {true, false}) {
      GradientContext c = ContextOf(k, {{"x", x}, {"g", grid}}, {g}, witness * 1.02, witness,
                                    witness, false, dt);
      c.a.cuda = cuda;
      EXPECT_EQ(gradient_interpolation_weights(c).has_value(), cuda) << "cuda " << cuda;
    }
  }
}

// A grid_sampler over planted inputs in `dtype` (interpolation `mode`,
// padding `padding`), its tolerance case and its inputs as built on the CPU.
struct GridSamplerCase {
  Case k;
  at::Tensor x, grid, g;
};
GridSamplerCase GridSamplerCaseOf(const std::string& dtype, int mode, int padding) {
  const graph::Program p = MustParse(
      "divfuzz v1\ninput %x0: " + dtype + "[2,1,3,5] = planted(seed=3149938047)\n"
      "input %x1: " + dtype + "[2,1,2,2] = uniform(seed=3561981530, low=-1.2, high=1.2)\n"
      "input %ct0: " + dtype + "[2,1,1,2] = fill(1.0)\n"
      "%v2 = aten::grid_sampler(%x0, %x1, " + std::to_string(mode) + ", " +
      std::to_string(padding) + ", False)\noutput %v2\n");
  GridSamplerCase sc{{p, MustInfer(p), {}}, {}, {}, {}};
  sc.k.d.cls = DivergenceClass::kTolerance;
  const exec::RunResult built = exec::Run(p, sc.k.types, exec::Target::kCpu);
  sc.x = built.inputs.at("x0"), sc.grid = built.inputs.at("x1"), sc.g = built.inputs.at("ct0");
  return sc;
}

// Session 47's GridSampler2DBackward0 f32 grid gradient (6423be44, judged
// expected): a bicubic weight's derivative cancels as it is evaluated in
// float, the CPU without FMA 1.9e-6 off, CUDA with it 1.4e-6; each within
// the derivative polynomial's rounding over the sample's taps. 1% off is not.
TEST(GradientRules, GridSamplerWeightsBoundTheGridGradientInFloat32) {
  const GridSamplerCase sc = GridSamplerCaseOf("f32", 2, 1);
  const Case& k = sc.k;
  const at::Tensor &x = sc.x, &grid = sc.grid, &g = sc.g;
  auto grads = [&](at::ScalarType t) {
    at::Tensor xr = x.to(t).requires_grad_(true), gr = grid.to(t).requires_grad_(true);
    const at::Tensor y = at::grid_sampler(xr, gr, 2, 1, false);
    return torch::autograd::grad({y}, {gr}, {g.to(t)})[0].detach();
  };
  const at::Tensor cpu = grads(at::kFloat), witness = grads(at::kDouble);
  // The CPU's float32 run is off by more than the tolerance.
  ASSERT_GT(((cpu.to(at::kDouble) - witness).abs() - 1.3e-6 * witness.abs()).max().item<double>(),
            0);
  for (const double scale : {1.0, 0.0}) {
    const at::Tensor a = scale > 0 ? cpu : (witness * 1.01).to(at::kFloat);
    GradientContext c = ContextOf(k, {{"x0", x}, {"x1", grid}}, {g}, a,
                                  witness.to(at::kFloat), witness, false);
    c.out = 1;
    c.wrt = "x1";
    std::optional<RuleMatch> m = gradient_interpolation_weights(c);
    EXPECT_EQ(m.has_value(), scale > 0) << (m ? m->reason : "");
  }
}

// Session 52's GridSampler3DBackward0 bf16 3b30062b (judged expected): a
// CUDA side's grid gradient rounds its terms and sums to bf16 by design, so
// the terms' bound is in bf16's u; a CPU side's only where it is correctly
// rounded or within the tolerance of its own float64 backward.
TEST(GradientRules, GridSamplerWeightsBoundACudaSidesHalfGridGradientInItsDtype) {
  const GridSamplerCase sc = GridSamplerCaseOf("bf16", 0, 0);
  const Case& k = sc.k;
  const at::Tensor x = sc.x.to(at::kDouble), grid = sc.grid.to(at::kDouble);
  const at::Tensor g = sc.g.to(at::kDouble);
  at::Tensor gr = grid.clone().requires_grad_(true);
  const at::Tensor y = at::grid_sampler(x, gr, 0, 0, false);
  const at::Tensor witness = torch::autograd::grad({y}, {gr}, {g})[0].detach();
  for (const auto& [cuda, off, excused] :
       std::vector<std::tuple<bool, double, bool>>{{true, 0.03, true}, {false, 0.03, false},
                                                   {false, 0.01, true}, {true, 100.0, false}}) {
    GradientContext c = ContextOf(k, {{"x0", x}, {"x1", grid}}, {g}, witness * (1 + off),
                                  witness, witness, false, graph::DType::kBF16);
    c.out = 1;
    c.wrt = "x1";
    c.a.cuda = cuda;
    std::optional<RuleMatch> m = gradient_interpolation_weights(c);
    EXPECT_EQ(m.has_value(), excused) << "cuda " << cuda << " off " << off;
  }
}

// Session 46's oneDNN bf16 ConvolutionBackward0 (be186173, judged expected):
// NaN at an input element no tap reads, from a NaN weight times a zero the
// algorithm inserts; the float64 gradient there is 0. Without a NaN operand
// a NaN side is no such term.
TEST(GradientRules, AProductsBackwardWithANaNOperandMayMultiplyItByZero) {
  for (const bool nan_weight : {true, false}) {
    Case k = CaseOf(R"(divfuzz v1
input %x: f32[1,1,5] = normal(seed=1)
input %w: f32[1,1,2] = normal(seed=2)
%y = aten::conv1d(%x, %w, None, [2])
output %y
)", DivergenceClass::kClassSplit, 4);
    const at::Tensor x = at::randn({1, 1, 5}, at::kDouble);
    const at::Tensor w = nan_weight ? at::tensor({NAN, 1.0}, at::kDouble).reshape({1, 1, 2})
                                    : at::tensor({2.0, 1.0}, at::kDouble).reshape({1, 1, 2});
    const at::Tensor g = at::ones({1, 1, 2});
    const at::Tensor witness = at::tensor({1.0, 1.0, 1.0, 1.0, 0.0}, at::kDouble).reshape({1, 1, 5});
    const at::Tensor a = at::tensor({1.0f, 1.0f, 1.0f, 1.0f, NAN}).reshape({1, 1, 5});
    GradientContext c = ContextOf(k, {{"x", x}, {"w", w}}, {g}, a, witness.to(at::kFloat),
                                  witness, false);
    std::optional<RuleMatch> m = gradient_undefined_point(c);
    EXPECT_EQ(m.has_value(), nan_weight) << (m ? m->reason : "");
  }
}

// Session 39's ReciprocalBackward0: a gradient a fraction of an ulp from
// FLT_MAX, formed by -1/x² times the incoming gradient, overflows with one
// rounding; one 1% below the edge does not.
TEST(GradientRules, AGradientAtTheRangesEdgeFromACoefficientMayOverflow) {
  const Case k = CaseOf(R"(divfuzz v1
input %x: f32[2] = values(0.5, 1.0)
%y = aten::reciprocal(%x)
output %y
)", DivergenceClass::kClassSplit, 0);
  const double flt_max = std::numeric_limits<float>::max();
  for (const double scale : {1.0 - 1e-8, 0.99}) {
    // -1/x² at x = 1/sqrt(FLT_MAX·scale), times a unit incoming gradient.
    const at::Tensor x = at::tensor({1 / std::sqrt(flt_max * scale), 1.0}, at::kDouble);
    const at::Tensor v = at::ones({2});
    const at::Tensor w = -1.0 / (x * x);
    GradientContext c = ContextOf(k, {{"x", x}}, {v}, at::tensor({-INFINITY, -1.0f}),
                                  w.to(at::kFloat), w, true);
    EXPECT_EQ(gradient_extremal_values(c).has_value(), scale > 0.999) << scale;
  }
}

// The engine's sum of a value's gradients (InputBuffer::add): an f32 sum of
// 3e38 + 3e38 overflows though the float64 side carries 6e38 on; inf from
// terms of opposite signs, whose sums of one sign fit, is the engine's fault.
// Session 49's e36228d8 (judged expected): CUDA's float32 renorm backward
// at x = 1e15, p = 3, sums |x|^3 = 1e45 in float: the norm overflows and the
// gradient is 0 where the exact one is 1 (the CPU works in double). The
// catalogue's norm_order_arg names p; at p = 2 the norm, 1.4e15, fits.
TEST(GradientRules, APNormsPowerSumPastTheRangeIsExtremal) {
  auto renorm = [](const char* p) {
    return CaseOf((std::string(R"(divfuzz v1
input %x: f32[2,2] = values(1e15, 2e15, -1e15, 3e15)
%y = aten::renorm(%x, )") + p + R"(, 0, 1e30)
output %y
)").c_str(), DivergenceClass::kTolerance, 1);
  };
  const at::Tensor x = at::tensor({1e15, 2e15, -1e15, 3e15}, at::kDouble).reshape({2, 2});
  const at::Tensor w = at::ones({2, 2}, at::kDouble);  // maxnorm 1e30: renorm is the identity
  at::Tensor flushed = w.to(at::kFloat).clone();
  flushed.reshape(-1)[1] = 0.0f;
  const Case cubic = renorm("3.0"), square = renorm("2.0");
  std::optional<RuleMatch> m = gradient_extremal_values(
      ContextOf(cubic, {{"x", x}}, {at::ones({2, 2})}, w.to(at::kFloat), flushed, w, false));
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->reason.find("sum |x|^p"), std::string::npos) << m->reason;
  EXPECT_FALSE(gradient_extremal_values(
      ContextOf(square, {{"x", x}}, {at::ones({2, 2})}, w.to(at::kFloat), flushed, w, false)));
}

TEST(GradientRules, AnAccumulatedSumPastTheRangeIsExtremalOneWhoseTermsFitIsNot) {
  Case k = CaseOf(R"(divfuzz v1
input %x: f32[2] = values(0.0, 1.0)
%y = aten::hardsigmoid(%x)
output %y
)", DivergenceClass::kClassSplit, 0);
  const at::Tensor big = at::tensor({3e38f, 1.0f});
  const at::Tensor f64_sum = at::tensor({6e38, 2.0}, at::kDouble);
  GradientContext c = ContextOf(k, {}, {}, at::tensor({INFINITY, 2.0f}), f64_sum, f64_sum, true);
  c.accumulation = true;
  c.wrt = "y";
  c.a.contributions = {big, big};
  c.b.contributions = {big.to(at::kDouble), big.to(at::kDouble)};
  std::optional<RuleMatch> m = gradient_accumulation_overflow(c);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_accumulation_overflow");
  EXPECT_NE(m->reason.find("%y's 2 uses in f32"), std::string::npos) << m->reason;
  // 3e38 + (-3e38): no order of the sum leaves the range.
  GradientContext fits = c;
  const at::Tensor minus = at::tensor({-3e38f, 1.0f});
  fits.a.contributions = {big, minus};
  fits.b.contributions = {big.to(at::kDouble), minus.to(at::kDouble)};
  fits.b.outgoing = at::tensor({0.0, 2.0}, at::kDouble);
  EXPECT_FALSE(gradient_accumulation_overflow(fits).has_value());
  // Outside an accumulation root the rule says nothing.
  GradientContext kernel = c;
  kernel.accumulation = false;
  EXPECT_FALSE(gradient_accumulation_overflow(kernel).has_value());
  // A difference beside the overflow, where both sides are finite, stays.
  GradientContext beside = c;
  beside.a.outgoing = at::tensor({INFINITY, 2.5f});
  EXPECT_FALSE(gradient_accumulation_overflow(beside).has_value());
  // In float64 (session 43's dc9e1413): 1.8e308 + 8.2e306 - 8.2e306 is inf in
  // the order that adds the positive terms first, 1.8e308 in the other.
  const double top = std::numeric_limits<double>::max();
  const at::Tensor p = at::tensor({top, 1.0}, at::kDouble), q = at::tensor({8.17e306, 0.5}, at::kDouble);
  GradientContext f64 = c;
  f64.dtype = graph::DType::kF64;
  f64.a.outgoing = at::tensor({INFINITY, 1.0}, at::kDouble);
  f64.b.outgoing = at::tensor({top, 1.0}, at::kDouble);
  f64.a.contributions = f64.b.contributions = {p, q, -q};
  EXPECT_TRUE(gradient_accumulation_overflow(f64).has_value());
}

// Session 43's LogSoftmaxBackward0 f32 (judged expected): g - p·Σg at
// p = 0.999994 cancels whatever the signs (the probabilities sum to 1), so
// the float64 backward of |inputs| cancels too; CUDA's expf, 1 ulp off, moved
// the result 0.76%. Its terms are |g| + p·Σ|g|; half the result off is not
// within 2·n·eps of them.
TEST(GradientRules, ALogSoftmaxBackwardCancelsByItsProbabilitiesNotItsSigns) {
  Case k = CaseOf(R"(divfuzz v1
input %x: f32[1,2] = values(12.0, 0.0)
%y = aten::log_softmax.int(%x, 1)
output %y
)", DivergenceClass::kTolerance, 0);
  const at::Tensor x = at::tensor({12.0, 0.0}, at::kDouble).reshape({1, 2});
  const at::Tensor y = at::log_softmax(x, 1);
  const at::Tensor g = at::tensor({1e20f, 0.0f}).reshape({1, 2});
  const at::Tensor exact = g.to(at::kDouble) - y.exp() * g.to(at::kDouble).sum(1, true);
  auto ctx = [&](double off) {  // element 0, the cancelling one, off by `off`
    const at::Tensor a = exact * at::tensor({1 + off, 1.0}, at::kDouble).reshape({1, 2});
    GradientContext c = ContextOf(k, {{"x", x}}, {g}, a.to(at::kFloat), exact.to(at::kFloat),
                                  exact, false);
    c.a.results = c.b.results = {y.to(at::kFloat)};
    return c;
  };
  std::optional<RuleMatch> m = gradient_summation(ctx(0.0076));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_summation");
  EXPECT_FALSE(gradient_summation(ctx(0.5)).has_value());
}

// Session 51's 89ab920e (judged expected): reflecting an infinite grid
// coordinate defines no position (pytorch#24823), so the CPU's NaN in the
// bf16 input gradient where CUDA skips the tap is arbitrary. With zeros
// padding the position is defined (0): session 48's NaN there is real.
TEST(GradientRules, AReflectedInfiniteGridCoordinateIsUndefinedAZeroPaddedOneIsNot) {
  for (const int padding : {2, 0}) {
    Case k = CaseOf(("divfuzz v1\ninput %x: f32[1,1,2,2] = normal(seed=1)\n"
                     "input %g: f32[1,1,2,2] = values(inf, 0.0, 0.5, 0.5)\n"
                     "%y = aten::grid_sampler_2d(%x, %g, 0, " + std::to_string(padding) +
                     ", False)\noutput %y\n").c_str(),
                    DivergenceClass::kClassSplit, 0);
    const at::Tensor x = at::ones({1, 1, 2, 2}, at::kDouble);
    const at::Tensor g = at::tensor({INFINITY, 0.0, 0.5, 0.5}, at::kDouble).reshape({1, 1, 2, 2});
    const at::Tensor v = at::ones({1, 1, 1, 2});
    const at::Tensor zero = at::zeros({1, 1, 2, 2});
    const at::Tensor nan = at::full({1, 1, 2, 2}, NAN);
    GradientContext c = ContextOf(k, {{"x", x}, {"g", g}}, {v}, nan, zero, zero.to(at::kDouble),
                                  false);
    EXPECT_EQ(gradient_undefined_point(c).has_value(), padding == 2) << padding;
  }
}

// Session 52's e5478719 (judged expected): a finite grid x of 3.0e38 that
// CUDA's (x + 1)·W overflows to inf under reflection padding: its position's
// rounding exceeds the period (pytorch#51911), as a non-finite coordinate's.
// A coordinate of 0.5 reflects to a position; zeros padding defines one.
TEST(GradientRules, AReflectedCoordinateBeyondThePeriodsRoundingIsUndefined) {
  for (const auto& [padding, gx, undefined] :
       std::vector<std::tuple<int, double, bool>>{{2, 3.0e38, true}, {2, 0.5, false},
                                                  {0, 3.0e38, false}}) {
    Case k = CaseOf(("divfuzz v1\ninput %x: f32[1,1,2,4] = normal(seed=1)\n"
                     "input %g: f32[1,1,1,2] = values(0.0, 0.5)\n"
                     "%y = aten::grid_sampler_2d(%x, %g, 1, " + std::to_string(padding) +
                     ", False)\noutput %y\n").c_str(),
                    DivergenceClass::kTolerance, 0);
    const at::Tensor x = at::ones({1, 1, 2, 4}, at::kDouble);
    const at::Tensor g = at::tensor({gx, 0.5}, at::kDouble).reshape({1, 1, 1, 2});
    const at::Tensor v = at::ones({1, 1, 1, 1});
    const at::Tensor w = at::zeros({1, 1, 2, 4}, at::kDouble);
    GradientContext c = ContextOf(k, {{"x", x}, {"g", g}}, {v}, (w + 1).to(at::kFloat),
                                  w.to(at::kFloat), w, false);
    EXPECT_EQ(gradient_undefined_point(c).has_value(), undefined) << padding << " " << gx;
  }
}

// Session 52's 9f253f39 (judged: the CPU wrong, CUDA not): in nearest mode a
// bf16 coordinate of 2.502, correctly rounded to 2.5, goes to element 2
// where float64's goes to 3: within half a bf16 step of the half-way point.
// At 2.52 (the CPU's chained bf16 rounding reaching 2.5 from 2.5137) it is
// beyond it; in f32, 2.502 is beyond the coordinate's rounding too.
TEST(GradientRules, ANearestSampleWithinTheCoordinatesRoundingOfAHalfWayPointMayGoEitherWay) {
  for (const auto& [dtype, src, excused] :
       std::vector<std::tuple<const char*, double, bool>>{
           {"bf16", 2.502, true}, {"bf16", 2.52, false}, {"f32", 2.502, false}}) {
    Case k = CaseOf((std::string("divfuzz v1\ninput %x: ") + dtype +
                     "[1,1,1,4] = normal(seed=1)\ninput %g: " + dtype +
                     "[1,1,1,2] = values(0.0, 0.0)\n"
                     "%y = aten::grid_sampler_2d(%x, %g, 1, 0, True)\noutput %y\n").c_str(),
                    DivergenceClass::kTolerance, 0);
    const graph::DType dt = std::string(dtype) == "f32" ? graph::DType::kF32 : graph::DType::kBF16;
    const at::Tensor x = at::ones({1, 1, 1, 4}, at::kDouble);
    // align_corners: src = (gx + 1)/2·(W - 1); H = 1 puts y at 0.
    const at::Tensor g = at::tensor({src / 1.5 - 1, 0.0}, at::kDouble).reshape({1, 1, 1, 2});
    const at::Tensor v = at::full({1, 1, 1, 1}, 3.0);
    const at::Tensor w = at::tensor({0.0, 0.0, 0.0, 3.0}, at::kDouble).reshape({1, 1, 1, 4});
    const at::Tensor moved = at::tensor({0.0, 0.0, 3.0, 0.0}, at::kDouble).reshape({1, 1, 1, 4});
    GradientContext c = ContextOf(k, {{"x", x}, {"g", g}}, {v}, moved, w, w, false, dt);
    c.a.cuda = true;
    std::optional<RuleMatch> m = gradient_interpolation_weights(c);
    EXPECT_EQ(m.has_value(), excused) << dtype << " " << src;
    if (m) EXPECT_NE(m->reason.find("nearest"), std::string::npos) << m->reason;
  }
}

// Session 51's ba8f3bfb (judged expected): beside the judged element, a
// probability of e^-112 left an element of 2e-29 that the sides round 2%
// apart, within tolerance and beyond any summation bound. Only the elements
// beyond tolerance are judged.
TEST(GradientRules, SummationJudgesOnlyTheElementsBeyondTolerance) {
  Case k = CaseOf(R"(divfuzz v1
input %x: f32[1,3] = values(12.0, 0.0, -100.0)
%y = aten::log_softmax.int(%x, 1)
output %y
)", DivergenceClass::kTolerance, 0);
  const at::Tensor x = at::tensor({12.0, 0.0, -100.0}, at::kDouble).reshape({1, 3});
  const at::Tensor y = at::log_softmax(x, 1);
  const at::Tensor g = at::tensor({1e20f, 0.0f, 0.0f}).reshape({1, 3});
  const at::Tensor exact = g.to(at::kDouble) - y.exp() * g.to(at::kDouble).sum(1, true);
  auto ctx = [&](double off, double tiny) {
    const at::Tensor a = exact * at::tensor({1 + off, 1.0, 1 + tiny}, at::kDouble).reshape({1, 3});
    GradientContext c = ContextOf(k, {{"x", x}}, {g}, a.to(at::kFloat), exact.to(at::kFloat),
                                  exact, false);
    c.a.results = c.b.results = {y.to(at::kFloat)};
    return c;
  };
  EXPECT_TRUE(gradient_summation(ctx(0.0076, 0.02)).has_value());
  // The judged element itself still has to be within the bound.
  EXPECT_FALSE(gradient_summation(ctx(0.5, 0.02)).has_value());
}

// A summing backward is judged where the sides differ beyond tolerance
// (session 51's 76161434, cumulative_trapezoid's reverse scan): cumsum's
// backward cancels 1e8 against -1e8 at element 0, within 2·n·eps of its
// terms; element 3's 1e-7, off by half of itself, is within atol and no
// longer has to meet its own tiny bound.
TEST(GradientRules, ASummingBackwardIsJudgedWhereItDiffersBeyondTolerance) {
  Case k = CaseOf(R"(divfuzz v1
input %x: f32[4] = fill(1.0)
%y = aten::cumsum(%x, 0)
output %y
)", DivergenceClass::kTolerance, 0);
  const at::Tensor x = at::ones({4}, at::kDouble);
  const at::Tensor g = at::tensor({1e8f, 1.0f, -1e8f, 1e-7f});
  const at::Tensor exact = at::flip(at::cumsum(at::flip(g.to(at::kDouble), {0}), 0), {0});
  auto ctx = [&](double first) {
    at::Tensor a = exact.clone();
    a[0] = first;
    a[3] = 1.5e-7;
    return ContextOf(k, {{"x", x}}, {g}, a.to(at::kFloat), exact.to(at::kFloat), exact, false);
  };
  EXPECT_TRUE(gradient_summation(ctx(0.0)).has_value());
  EXPECT_FALSE(gradient_summation(ctx(1000.0)).has_value());
}

// Session 51's 21d02fd6 and ba8f3bfb (judged expected): log_softmax's double
// backward (the step back through dx = g - p·Σg) is exactly 0 here, as
// Σ dx = 0 whatever x; from a first-order incoming gradient of 1e15 each side
// keeps noise of its terms Σ|g|·(p·|c| + p·Σ(p·|c|)). Off by 1e7 of terms of
// 6.7e14 is within 2·n·eps of them, off by 1e12 is not.
TEST(GradientRules, ALogSoftmaxDoubleBackwardCancelsByItsProbabilities) {
  Case k = CaseOf(R"(divfuzz v1
input %x: f32[1,3] = fill(0.0)
%y = aten::log_softmax.int(%x, 1)
output %y
)", DivergenceClass::kTolerance, 0);
  const graph::Node step = exec::MakeVjpNode(k.program.nodes[0], {"gy"}, {"x"}, {"dx"});
  k.types["gy"] = k.types.at("y");
  k.types["dx"] = k.types.at("x");
  const at::Tensor x = at::zeros({1, 3}, at::kDouble);
  const at::Tensor y = at::log_softmax(x, 1);
  const at::Tensor g = at::tensor({1e15f, 0.0f, 0.0f}).reshape({1, 3});
  const at::Tensor v = at::ones({1, 3});
  static const Policy policy = DefaultPolicy();
  auto ctx = [&](double off) {
    const at::Tensor a = at::tensor({static_cast<float>(off), 0.0f, 0.0f}).reshape({1, 3});
    const at::Tensor b = at::zeros({1, 3});
    GradientContext c{step, k.types, policy, k.d, 0, "x", graph::DType::kF32, false,
                      {{{"x", x}, {"gy", g}}, {v}, a, at::zeros({1, 3}, at::kDouble)},
                      {{{"x", x}, {"gy", g}}, {v}, b, at::zeros({1, 3}, at::kDouble)}};
    c.a.results = c.b.results = {y.to(at::kFloat)};
    return c;
  };
  std::optional<RuleMatch> m = gradient_summation(ctx(1e7));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_summation");
  EXPECT_FALSE(gradient_summation(ctx(1e12)).has_value());
}

// Session 46's LogSoftmaxBackward0 f32: the sides' saved outputs differed
// by what they inherited, so their exact gradients differ too; each side
// within the summation bound of its own float64 backward is expected, a side
// as far from its own as from the other is not.
TEST(GradientRules, SummationJudgesEachSideByItsOwnFloat64BackwardToo) {
  Case k = CaseOf(R"(divfuzz v1
input %x: f32[1,2] = values(12.0, 0.0)
%y = aten::log_softmax.int(%x, 1)
output %y
)", DivergenceClass::kTolerance, 0);
  const at::Tensor x = at::tensor({12.0, 0.0}, at::kDouble).reshape({1, 2});
  const at::Tensor y = at::log_softmax(x, 1);
  const at::Tensor g = at::tensor({1e20f, 0.0f}).reshape({1, 2});
  const at::Tensor exact = g.to(at::kDouble) - y.exp() * g.to(at::kDouble).sum(1, true);
  const at::Tensor shifted = exact * at::tensor({1.5, 1.0}, at::kDouble).reshape({1, 2});
  for (const bool inherited : {true, false}) {
    GradientContext c = ContextOf(k, {{"x", x}}, {g}, shifted.to(at::kFloat), exact.to(at::kFloat),
                                  exact, false);
    c.a.results = c.b.results = {y.to(at::kFloat)};
    if (inherited) c.a.witness = shifted;  // side A's own inputs give its answer
    EXPECT_EQ(gradient_summation(c).has_value(), inherited) << inherited;
  }
}

TEST(GradientRules, ConditioningExcusesAnIllConditionedSolveNotAWellConditionedOne) {
  const Case k = CaseOf(R"(divfuzz v1
input %a: f32[2,2] = values(1.0, 1.0, 1.0, 1.0001)
%l = aten::logdet(%a)
output %l
)", DivergenceClass::kTolerance);
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
  // Under TF32 (a +tf32 side) the backward's matmuls read 10 mantissa bits:
  // 1e-4 is within 8·n·2^-10·cond·max|g| there, 2% is not (session 34's
  // LinalgInvExBackward0 under cuda+tf32).
  GradientContext well_tf32 = well;
  well_tf32.tf32 = true;
  EXPECT_TRUE(gradient_conditioning(well_tf32).has_value());
  GradientContext far_tf32 = ContextOf(k, {{"a", eye}}, {at::ones({})},
                                       (eye * (1 + 2e-2)).to(at::kFloat), eye.to(at::kFloat), eye,
                                       false);
  far_tf32.tf32 = true;
  EXPECT_FALSE(gradient_conditioning(far_tf32).has_value());
  // nuclear_norm's gradient is its SVD's U V^T (session 33: cond 2.6e16 in f32, CPU 3.993
  // against the exact 4): conditioned like the matrix, as a catalogue fact.
  const Case n = CaseOf(R"(divfuzz v1
input %a: f32[2,2] = values(1.0, 1.0, 1.0, 1.0001)
%l = aten::nuclear_norm(%a)
output %l
)", DivergenceClass::kTolerance);
  GradientContext nuc = ContextOf(n, {{"a", a}}, {at::ones({})}, off, w.to(at::kFloat), w, false);
  ASSERT_TRUE(gradient_conditioning(nuc).has_value());
  GradientContext nuc_well = ContextOf(n, {{"a", eye}}, {at::ones({})},
                                       (eye * (1 + 1e-4)).to(at::kFloat), eye.to(at::kFloat), eye,
                                       false);
  EXPECT_FALSE(gradient_conditioning(nuc_well).has_value());
}

// Session 49's 8b7f82b5 (judged expected): cumulative_trapezoid's backward
// over sample points x stepping +6, -6 sums reverse cumulative sums scaled
// by each step; the bound takes |steps| (AbsSpacing), not |x|, whose signed
// steps cancel it.
TEST(GradientRules, ATrapezoidsBackwardIsBoundedByItsStepsMagnitudes) {
  Case k = CaseOf(R"(divfuzz v1
input %y: f32[5] = normal(seed=1)
input %x: i64[5] = values(0, 6, 0, 6, 0)
%c = aten::cumulative_trapezoid.x(%y, %x, dim=0)
output %c
)", DivergenceClass::kTolerance, 2);
  const at::Tensor y = at::arange(1, 6, at::kDouble);
  const at::Tensor x = at::tensor({0, 6, 0, 6, 0}, at::kLong);
  const at::Tensor g = at::tensor({5e7, -5e7, 5e7, -5e7}, at::kFloat);
  // The exact gradient: 0 then 1.5e8 four times; element 2's terms are
  // 7.5e8 with |steps| but cancel to 1.5e8 with the signed ones.
  const at::Tensor exact = at::tensor({0.0, 1.5e8, 1.5e8, 1.5e8, 1.5e8}, at::kDouble);
  auto off_by = [&](double delta) {
    at::Tensor b = exact.clone();
    b[2] += delta;
    return b.to(at::kFloat);
  };
  // 160 is within 2·n·eps·7.5e8, past 2·n·eps·1.5e8; 5000 past both.
  GradientContext within = ContextOf(k, {{"y", y}, {"x", x}}, {g}, exact.to(at::kFloat),
                                     off_by(160), exact, false);
  std::optional<RuleMatch> m = gradient_summation(within);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_summation");
  GradientContext past = ContextOf(k, {{"y", y}, {"x", x}}, {g}, exact.to(at::kFloat),
                                   off_by(5000), exact, false);
  EXPECT_FALSE(gradient_summation(past).has_value());
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


// Session 43's ConvolutionBackward0 bf16 (judged real, from the expected
// tier): the CPU's oneDNN bf16 convolution backward read a subnormal
// incoming gradient, 2^-128, as 0 and gave 0 where the exact gradient is
// -0x1.c4p+127 · 2^-128 = -0.8828125 (CUDA's value). The hull's moves had
// a floor of the smallest normal float, which carried 2^-128 across 0.
TEST(GradientRules, BackwardStableDoesNotMoveASubnormalAcrossZero) {
  Case k{MustParse(R"(divfuzz v1
input %xb: bf16[1,1,2,2] = fill(0.0)
input %wb: bf16[1,1,1,1] = values(-0x1.c4p+127)
%yb = aten::conv2d(%xb, %wb)
output %yb
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kTolerance;
  k.d.element = 3;
  const at::Tensor x = at::zeros({1, 1, 2, 2}, at::kDouble);
  const at::Tensor w = at::full({1, 1, 1, 1}, -0x1.c4p+127, at::kDouble);
  at::Tensor v = at::zeros({1, 1, 2, 2}, at::kBFloat16);
  v.reshape(-1)[3] = std::ldexp(1.0, -128);
  const at::Tensor exact = w.reshape({}) * v.to(at::kDouble);
  ASSERT_EQ(exact.reshape(-1)[3].item<double>(), -0.8828125);
  GradientContext c = ContextOf(k, {{"xb", x}, {"wb", w}}, {v}, at::zeros({1, 1, 2, 2}, at::kBFloat16),
                                exact.to(at::kBFloat16), exact, false, graph::DType::kBF16);
  EXPECT_FALSE(gradient_backward_stable(c).has_value());
  // The exact value and one rounding of it are within the hull.
  GradientContext ok = ContextOf(k, {{"xb", x}, {"wb", w}}, {v},
                                 (exact * (1 + 1.0 / 256)).to(at::kBFloat16),
                                 exact.to(at::kBFloat16), exact, false, graph::DType::kBF16);
  EXPECT_TRUE(gradient_backward_stable(ok).has_value());
}

// The gradient of sum(v * f(x)) by autograd on the CPU in `dtype` (float64:
// the reference), f one op of the program.
at::Tensor GradOf(const std::function<at::Tensor(const at::Tensor&)>& f, const at::Tensor& x,
                  const at::Tensor& v, at::ScalarType dtype = at::kDouble) {
  at::AutoGradMode on(true);
  at::Tensor xx = x.to(dtype).detach().requires_grad_(true);
  at::Tensor y = f(xx);
  return torch::autograd::grad({y}, {xx}, {v.to(dtype)})[0].detach();
}

// Session 40's G6 UpsampleBilinear2DBackward0 bf16 (judged real,
// pytorch#104157): a 1x1 input upsampled to 11x13 sums 143 incoming
// gradients of 1 into one element; CUDA's bf16 atomicAdd stalls at 128 (the
// exact sum and the CPU's: 143). 2·n·eps = 2.2 of sum|terms| allows any
// value: the bound says nothing there. A 2x upsample's element sums 16
// terms, where it holds.
TEST(GradientRules, ASumWhoseBoundIsVacuousInItsDtypeExcusesNothing) {
  for (const int64_t side : {1, 4}) {
    const int64_t out_h = side == 1 ? 11 : 8, out_w = side == 1 ? 13 : 8;
    const std::string text = "divfuzz v1\ninput %b: bf16[1,1," + std::to_string(side) + "," +
                             std::to_string(side) + "] = fill(0.0)\n%yb = aten::upsample_bilinear2d(%b, [" +
                             std::to_string(out_h) + ", " + std::to_string(out_w) +
                             "], False)\noutput %yb\n";
    const Case k = CaseOf(text.c_str(), DivergenceClass::kTolerance, 0);
    const at::Tensor b = at::zeros({1, 1, side, side}, at::kDouble);
    const at::Tensor v = at::ones({1, 1, out_h, out_w}, at::kFloat);
    const at::Tensor w = GradOf([&](const at::Tensor& t) {
      return at::upsample_bilinear2d(t, {out_h, out_w}, false);
    }, b, v.to(at::kDouble));
    // One element a few bf16 steps short, as a stalled atomic sum leaves it.
    at::Tensor low = w.to(at::kBFloat16).clone();
    const double exact = w.reshape(-1)[0].item<double>();
    low.reshape(-1)[0] = side == 1 ? 128.0 : exact - std::ldexp(1.0, -7) * exact * 4;
    GradientContext c = ContextOf(k, {{"b", b}}, {v}, w.to(at::kBFloat16), low, w, false,
                                  graph::DType::kBF16);
    EXPECT_EQ(gradient_summation(c).has_value(), side == 4) << side << " exact " << exact;
  }
}

TEST(GradientRules, BackwardStableTakesTheRoundedSavedOutputLogNdtrReuses) {
  Case k{MustParse(R"(divfuzz v1
input %x: f32[2] = values(-100.0, 0.5)
%y = aten::special_log_ndtr(%x)
output %y
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kTolerance;
  k.d.element = 0;
  const at::Tensor x = at::tensor({-100.0, 0.5}, at::kDouble);
  const at::Tensor v = at::ones({2}, at::kDouble);
  const at::Tensor w = GradOf([](const at::Tensor& t) { return at::special_log_ndtr(t); }, x, v);
  // derivatives.yaml: grad / sqrt(2 pi) * exp(-(result + x^2 / 2)), with the
  // saved result rounded to f32: at -100, ulp(5000) / 2 in the exponent is
  // 2.4e-4 relative, far beyond 4 eps of x.
  const at::Tensor r32 = at::special_log_ndtr(x).to(at::kFloat).to(at::kDouble);
  const at::Tensor from_rounded = (r32 + x.pow(2) / 2).neg().exp() / std::sqrt(2 * M_PI);
  ASSERT_GT((from_rounded[0] / w[0] - 1).abs().item<double>(), 1e-5);
  GradientContext c = ContextOf(k, {{"x", x}}, {v}, from_rounded.to(at::kFloat), w.to(at::kFloat),
                                w, true);
  std::optional<RuleMatch> m = gradient_backward_stable(c);
  ASSERT_TRUE(m.has_value());
  // A forward that is not correctly rounded (log_ndtr's f32 kernel is a few
  // ulps off far out): its saved result 2 ulps away is still a correct kernel's.
  const at::Tensor r2 = at::special_log_ndtr(x).to(at::kFloat);
  const at::Tensor off2 =
      at::nextafter(at::nextafter(r2, at::full_like(r2, 0.0f)), at::full_like(r2, 0.0f))
          .to(at::kDouble);
  const at::Tensor from_off = (off2 + x.pow(2) / 2).neg().exp() / std::sqrt(2 * M_PI);
  ASSERT_GT((from_off[0] / from_rounded[0] - 1).abs().item<double>(), 1e-4);
  GradientContext two_ulps = ContextOf(k, {{"x", x}}, {v}, from_off.to(at::kFloat),
                                       w.to(at::kFloat), w, true);
  EXPECT_TRUE(gradient_backward_stable(two_ulps).has_value());
  // 1% off is no rounding of the saved output.
  GradientContext wrong = ContextOf(k, {{"x", x}}, {v}, (w * 1.01).to(at::kFloat),
                                    w.to(at::kFloat), w, true);
  EXPECT_FALSE(gradient_backward_stable(wrong).has_value());
}

TEST(GradientRules, BackwardStableMovesEachJudgedElementItsWorstWay) {
  // Session 39's layer_norm and softmax double backwards: an element that
  // sums a row of terms of mixed signs moves by up to 4 eps of sum|terms|
  // when every value moves its worst way, but by about 1/sqrt(n) of that
  // along the six sampled directions. mm's backward: dA[0][0] sums
  // G[0][k] B[0][k] over 256 cotangents of +-1000 and signs of B, cancelling.
  const Case k = CaseOf(R"(divfuzz v1
input %a: f16[1,8] = fill(1.0)
input %b: f16[8,256] = fill(1.0)
%y = aten::mm(%a, %b)
output %y
)", DivergenceClass::kTolerance, 0);
  at::Generator gen = at::detail::createCPUGenerator(5);
  auto signs = [&](std::vector<int64_t> shape) {
    return (at::rand(shape, gen, at::kDouble) > 0.5).to(at::kDouble) * 2 - 1;
  };
  const at::Tensor a = at::ones({1, 8}, at::kDouble);
  const at::Tensor b = signs({8, 256});
  at::Tensor g = signs({1, 256}) * 1000;
  // Cancel row 0's sum to a few units.
  const double sum = (g[0] * b[0]).sum().item<double>();
  g[0][0] = g[0][0].item<double>() - b[0][0].item<double>() * (sum - 3);
  g = g.to(at::kHalf).to(at::kDouble);
  auto backward = [&](const at::Tensor& gg) { return at::mm(gg, b.t()); };
  const at::Tensor w = backward(g);
  // Every cotangent 3 eps its worst way for dA[0][0]: along sign(B[0][k]).
  const double eps = std::ldexp(1.0, -11);
  const at::Tensor moved = backward(g + 3 * eps * g.abs() * b[0].reshape({1, 256}));
  const double move = (moved - w)[0][0].item<double>();
  ASSERT_GT(move, 100.0);
  // The six sampled directions (what the rule had before) reach well under
  // half of that.
  double sampled = 0;
  for (int dir = 0; dir < 6; ++dir) {
    const at::Tensor m = MovedBy4Eps(g, eps, dir + 1, 2000);
    sampled = std::max(sampled, std::abs((backward(m) - w)[0][0].item<double>()));
  }
  ASSERT_LT(sampled, 0.5 * move);
  const std::map<std::string, at::Tensor> inputs{{"a", a}, {"b", b}};
  GradientContext c = ContextOf(k, inputs, {g}, moved.to(at::kHalf), w.to(at::kHalf), w, false,
                                graph::DType::kF16);
  std::optional<RuleMatch> m = gradient_backward_stable(c);
  ASSERT_TRUE(m.has_value());
  // Eight times that is no rounding of the inputs (the rule moves both
  // operands by 4 eps of the dtype, eps = 2^-10 in f16: 2,078 here, and
  // this is 3,117).
  const at::Tensor far = (w + 8 * (moved - w)).to(at::kHalf);
  GradientContext wrong = ContextOf(k, inputs, {g}, far, w.to(at::kHalf), w, false,
                                    graph::DType::kF16);
  EXPECT_FALSE(gradient_backward_stable(wrong).has_value());
}

TEST(GradientRules, BackwardStableTakesASoftmaxRowFromEitherRoundingOfItsSavedOutput) {
  // Session 33's LogSoftmaxBackward0 f16 (judged expected): the forward's f16
  // output at x = 0 is -4.5156 on the CPU and -4.5117 (correctly rounded) on
  // CUDA; g - exp(out)·sum(g) with sum(g) = -7950 turns that ulp into 86.94
  // against 87.31 (exact 87.13), each side exact from its own saved output.
  // Ten copies of the row: four independent random moves left some of its
  // elements moved up only, and the CPU's rounding down fell outside.
  const Case k = CaseOf(R"(divfuzz v1
input %x: f16[10,75] = fill(0.0)
%c = aten::special_log_softmax(%x, -1)
output %c
)", DivergenceClass::kTolerance, 0);
  std::vector<double> xv(75, 0.0), gv(75, 0.0);
  const double mid[] = {-0.444091796875, 0.4599609375, -0.966796875, -0.7939453125};
  for (int i = 0; i < 4; ++i) xv[33 + i] = mid[i];
  for (int i = 37; i < 45; ++i) xv[i] = 1.0;
  xv[73] = xv[74] = 1.0;
  gv[33] = 50.0, gv[34] = 0.01000213623046875, gv[35] = -8000.0, gv[36] = 0.00010001659393310547;
  const at::Tensor x = at::tensor(xv, at::kDouble).reshape({1, 75}).repeat({10, 1});
  const at::Tensor g = at::tensor(gv, at::kDouble).reshape({1, 75}).repeat({10, 1});
  const at::Tensor h = x.to(at::kHalf), gh = g.to(at::kHalf);
  const at::Tensor out64 = at::log_softmax(x, -1);
  const at::Tensor cpu = at::_log_softmax_backward_data(gh, at::log_softmax(h, -1), -1, at::kHalf);
  const at::Tensor cuda = at::_log_softmax_backward_data(gh, out64.to(at::kHalf), -1, at::kHalf);
  const at::Tensor w = g - out64.exp() * g.sum(-1, true);
  ASSERT_GT((cpu - cuda).abs().max().item<double>(), 0.3);
  GradientContext c = ContextOf(k, {{"x", x}}, {g}, cpu, cuda, w, false, graph::DType::kF16);
  std::optional<RuleMatch> m = gradient_backward_stable(c);
  ASSERT_TRUE(m.has_value());
  // A gradient 5% off is no rounding of the saved output.
  GradientContext wrong = ContextOf(k, {{"x", x}}, {g}, cpu, (w * 1.05).to(at::kHalf), w, false,
                                    graph::DType::kF16);
  EXPECT_FALSE(gradient_backward_stable(wrong).has_value());
}

TEST(GradientRules, AVarianceBackwardRecomputesItsMeanInTheDtype) {
  // Session 33's VarBackward0 bf16 (judged expected): var_backward forms
  // (2/dof)·g·(x - x.mean()) in bf16; the mean of bf16(log k), k = 1..31, is
  // 2.5156 in bf16 against 2.5188, and x - mean cancels.
  const Case k = CaseOf(R"(divfuzz v1
input %x: bf16[31] = fill(0.0)
%v = aten::var(%x)
output %v
)", DivergenceClass::kTolerance);
  const at::Tensor x =
      at::arange(1, 32, at::kDouble).log().to(at::kBFloat16).to(at::kDouble);
  const at::Tensor g = at::ones({}, at::kDouble);
  const at::Tensor cpu = GradOf([](const at::Tensor& t) { return at::var(t); }, x, g, at::kBFloat16);
  // A kernel whose mean is correctly rounded, the rest in bf16 as well.
  const at::Tensor xb = x.to(at::kBFloat16);
  const at::Tensor other =
      (xb - x.mean().to(at::kBFloat16)) * at::full({}, 2.0 / 30, at::kBFloat16);
  const at::Tensor w = (x - x.mean()) * (2.0 / 30);
  ASSERT_GT((cpu.to(at::kDouble) - w).abs().max().item<double>(), 1e-4);
  GradientContext c = ContextOf(k, {{"x", x}}, {g}, cpu, other, w, false, graph::DType::kBF16);
  std::optional<RuleMatch> m = gradient_variance_mean(c);
  ASSERT_TRUE(m.has_value()) << "cpu " << cpu << " other " << other;
  EXPECT_EQ(m->rule, "gradient_variance_mean");
  // A backward 10% off (a wrong dof) is not the mean's rounding.
  GradientContext wrong = ContextOf(k, {{"x", x}}, {g}, cpu, (w * 1.1).to(at::kBFloat16), w, false,
                                    graph::DType::kBF16);
  EXPECT_FALSE(gradient_variance_mean(wrong).has_value());
  // By rows, with an inf cotangent in the other row (session 34's f16 var:
  // a whole-tensor max|g| of inf made the bound NaN): each row by its own g.
  const Case rows = CaseOf(R"(divfuzz v1
input %x: bf16[2,31] = fill(0.0)
%v = aten::var.correction(%x, [1])
output %v
)", DivergenceClass::kTolerance);
  const at::Tensor x2 = at::stack({x, x});
  const at::Tensor g2 = at::tensor({1.0, INFINITY}, at::kDouble);
  const at::Tensor cpu2 = GradOf(
      [](const at::Tensor& t) { return at::var(t, at::IntArrayRef{1}); }, x2, g2, at::kBFloat16);
  at::Tensor other2 = cpu2.clone();
  other2[0] = other;
  const at::Tensor w2 = at::stack({w, (x - x.mean()) * INFINITY});
  GradientContext by_rows = ContextOf(rows, {{"x", x2}}, {g2}, cpu2, other2, w2, false,
                                      graph::DType::kBF16);
  EXPECT_TRUE(gradient_variance_mean(by_rows).has_value());
}

TEST(GradientRules, StdOfEqualInputsIsAKinkWhereTheForwardRoundedOffZero) {
  // Session 35's StdBackward0 f32 class split (judged expected): 16 equal
  // f32 inputs, whose CPU std is 1.5e-8 rather than 0, and a cotangent of
  // 1.7e38: the CPU's g/(2·std) overflows and gives -inf, CUDA's forward std
  // is 0 and its backward the masked subgradient 0.
  const Case k = CaseOf(R"(divfuzz v1
input %x: f32[16] = fill(-0.2412)
%s = aten::std(%x)
output %s
)", DivergenceClass::kClassSplit);
  const at::Tensor x = at::full({16}, -0.2412f).to(at::kDouble);
  const at::Tensor g = at::full({}, 1.7014117e38, at::kDouble);
  const at::Tensor cpu_std = at::std(x.to(at::kFloat));
  ASSERT_NE(cpu_std.item<float>(), 0.0f) << "the CPU's std of equal inputs is exactly 0 now";
  const at::Tensor cpu = GradOf([](const at::Tensor& t) { return at::std(t); }, x, g, at::kFloat);
  ASSERT_FALSE(at::isfinite(cpu).all().item<bool>()) << cpu;
  const at::Tensor zero = at::zeros({16});
  const at::Tensor witness = at::zeros({16}, at::kDouble);
  GradientContext c = ContextOf(k, {{"x", x}}, {g}, cpu, zero, witness, false);
  c.a.results = {cpu_std};
  c.b.results = {at::zeros({})};
  std::optional<RuleMatch> m = gradient_std_at_zero(c);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_std_at_zero");
  // A side whose forward std is 0 skips the mask only by a bug.
  GradientContext masked = c;
  masked.a.results = {at::zeros({})};
  EXPECT_FALSE(gradient_std_at_zero(masked).has_value());
  // Inputs that are not all equal have a derivative: no kink to excuse.
  std::map<std::string, at::Tensor> unequal = {{"x", x.clone()}};
  unequal["x"][3] = -0.25;
  GradientContext spread = c;
  spread.a.inputs = unequal;
  spread.b.inputs = unequal;
  EXPECT_FALSE(gradient_std_at_zero(spread).has_value());
}

// Session 39's G3 (instance_norm, bf16): the CPU's batch_norm backward
// scales its float sum dotp by invstd² before dividing by N; a channel of
// nearly equal values makes invstd² up to 1/eps, and 3e38 times that
// overflows float32 where the exact gradient is 0. The same sum from a
// channel of spread values does not.
TEST(GradientRules, ABatchNormSumScaledByItsInverseVarianceMayOverflow) {
  Case k = CaseOf(R"(divfuzz v1
input %x: f32[4,2] = fill(1.0)
input %w: f32[2] = fill(1.0)
input %b: f32[2] = fill(0.0)
%y = aten::batch_norm(%x, %w, %b, None, None, True, 0.1, 1e-05, True)
output %y
)", DivergenceClass::kClassSplit, 0);
  const at::Tensor v = at::full({4, 2}, 1e36f);
  auto ctx = [&](const at::Tensor& x) {
    return ContextOf(k, {{"x", x}, {"w", at::ones({2}, at::kDouble)}, {"b", at::zeros({2}, at::kDouble)}},
                     {v}, at::full({4, 2}, INFINITY), at::zeros({4, 2}), at::zeros({4, 2}, at::kDouble),
                     false);
  };
  at::Tensor flat = at::ones({4, 2}, at::kDouble);
  flat.select(1, 0).copy_(at::tensor({1.0, 1.0001, 1.0, 1.0001}, at::kDouble));
  EXPECT_TRUE(gradient_extremal_values(ctx(flat)).has_value());
  const at::Tensor spread =
      at::tensor({-3.0, 5.0, 4.0, -6.0, 2.0, 7.0, -5.0, 1.0}, at::kDouble).reshape({4, 2});
  EXPECT_FALSE(gradient_extremal_values(ctx(spread)).has_value());
}

// Session 39's G3 LinalgDetBackward0: the incoming gradient is FLT_MAX, and
// the SVD branch multiplies it by det(U)·det(Vh), exactly ±1 but rounded a
// ulp above: NaN on one side where the exact gradient fits. Half of FLT_MAX
// leaves room for that rounding: a NaN there is a finding.
TEST(GradientRules, AnIncomingGradientAtTheRangesEdgeIntoAMatrixBackwardIsExtremal) {
  const Case k = CaseOf(R"(divfuzz v1
input %a: f32[2,2] = fill(1.0)
%d = aten::det(%a)
output %d
)", DivergenceClass::kClassSplit, 0);
  const at::Tensor a = at::tensor({0.5, 0.25, 0.25, 0.75}, at::kDouble).reshape({2, 2});
  for (const double scale : {1.0, 0.5}) {
    const at::Tensor g = at::full({}, static_cast<float>(std::numeric_limits<float>::max() * scale));
    const at::Tensor w = at::tensor({3.0, -1.0, -1.0, 2.0}, at::kDouble).reshape({2, 2}) * 1e-39;
    GradientContext c = ContextOf(k, {{"a", a}}, {g}, at::full({2, 2}, NAN), w.to(at::kFloat), w,
                                  false);
    EXPECT_EQ(gradient_extremal_values(c).has_value(), scale == 1.0) << scale;
  }
}

// The regression corpus's CUDA group_norm f16 (session 39, judged real): the
// 1-d fused backward multiplies dY·X = 65504·10 in half, NaN where the exact
// gradient is -0.0065. A half kernel computes in float32, where that product
// fits: an incoming 65504 is no excuse in f16 (the clause above is for a
// dtype that is its own accumulate type).
TEST(GradientRules, AnIncomingHalfAtItsLargestValueIsNoExcuseForAFusedKernel) {
  const Case k = CaseOf(R"(divfuzz v1
input %x: f16[2,4] = fill(1.0)
%y = aten::group_norm(%x, 1)
output %y
)", DivergenceClass::kClassSplit, 0);
  const at::Tensor x = at::tensor({10.0, -3.0, 2.0, 0.5, 1.0, 2.0, -1.0, 4.0}, at::kDouble)
                           .reshape({2, 4});
  const at::Tensor g = at::tensor({65504.0, 65504.0, -65504.0, 1.0, 1.0, 2.0, 3.0, -1.0})
                           .reshape({2, 4}).to(at::kHalf);
  const at::Tensor w = at::full({2, 4}, -0.0065, at::kDouble);
  at::Tensor cuda = w.to(at::kHalf).clone();
  cuda[0][0] = NAN;
  GradientContext c = ContextOf(k, {{"x", x}}, {g}, w.to(at::kHalf), cuda, w, false,
                                graph::DType::kF16);
  c.hints = ops::FindOp("aten::group_norm")->hints;
  EXPECT_FALSE(gradient_extremal_values(c).has_value());
}

// Session 39's G4 CumprodBackward0 f32: a row whose factors above 1
// multiply past float32's range, a zero later: the backward's partial
// products overflow in its scan's order and inf times the masked 0 is NaN,
// where the exact gradient is finite. Factors that stay in range do not.
TEST(GradientRules, AProductsPartialProductsPastTheRangeAreExtremal) {
  const Case k = CaseOf(R"(divfuzz v1
input %x: f32[6] = fill(1.0)
%y = aten::cumprod(%x, 0)
output %y
)", DivergenceClass::kClassSplit, 4);
  auto ctx = [&](const at::Tensor& x) {
    GradientContext c = ContextOf(k, {{"x", x}}, {at::ones({6})}, at::full({6}, NAN),
                                  at::zeros({6}), at::zeros({6}, at::kDouble), false);
    c.hints = ops::FindOp("aten::cumprod")->hints;
    return c;
  };
  EXPECT_TRUE(gradient_extremal_values(
                  ctx(at::tensor({1e30, 1e20, 1e-40, 0.0, 2.0, 3.0}, at::kDouble))).has_value());
  EXPECT_FALSE(gradient_extremal_values(
                   ctx(at::tensor({1e3, 1e2, 1e-4, 0.0, 2.0, 3.0}, at::kDouble))).has_value());
}

TEST(GradientRules, AnIncomingGradientNearTheRangeIsExtremalOneFarFromItIsNot) {
  // Session 36's EluBackward0 f32 (judged expected): selu at -1 with an
  // incoming gradient of 3.0e38; the CPU's elu_backward forms v * scale *
  // alpha = 5.3e38 first and gives inf, where the gradient is 1.94e38.
  const Case k = CaseOf(R"(divfuzz v1
input %x: f32[2] = values(-1.0, 0.5)
%y = aten::selu(%x)
output %y
)", DivergenceClass::kClassSplit, 0);
  const at::Tensor x = at::tensor({-1.0, 0.5}, at::kDouble);
  const at::Tensor v = at::tensor({3.0e38, 1.0}, at::kDouble);
  const auto selu = [](const at::Tensor& t) { return at::selu(t); };
  const at::Tensor cpu = GradOf(selu, x, v, at::kFloat);
  const at::Tensor w = GradOf(selu, x, v);
  ASSERT_TRUE(std::isinf(cpu[0].item<float>())) << cpu;
  ASSERT_LT(std::abs(w[0].item<double>()), 3.4e38);
  GradientContext c = ContextOf(k, {{"x", x}}, {v}, cpu, w.to(at::kFloat), w, true);
  std::optional<RuleMatch> m = gradient_extremal_values(c);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_extremal_values");
  // An incoming gradient of 1e37, a 34th of the range: an inf there is no
  // intermediate of an extremal operand.
  const at::Tensor v_small = at::tensor({1.0e37, 1.0}, at::kDouble);
  const at::Tensor w_small = GradOf(selu, x, v_small);
  GradientContext far = ContextOf(k, {{"x", x}}, {v_small}, at::tensor({INFINITY, 1.0f}),
                                  w_small.to(at::kFloat), w_small, true);
  EXPECT_FALSE(gradient_extremal_values(far).has_value());
}

TEST(GradientRules, ANodeReadingAValueTwiceIsJudgedByEachUsesPartial) {
  // Session 36's DivBackward0 bf16 (judged expected): x / x with an
  // incoming gradient of 3e38; each use's partial is +-v/x = +-1.5e39, beyond
  // bf16 and float32, so the kernel's inf and -inf add to NaN where the exact
  // gradient is 0.
  const Case k = CaseOf(R"(divfuzz v1
input %x: bf16[2] = values(0.2, 1.0)
%y = aten::div.Tensor(%x, %x)
output %y
)", DivergenceClass::kClassSplit, 0);
  const at::Tensor x = at::tensor({0.2, 1.0}, at::kDouble);
  const at::Tensor zero = at::zeros({2}, at::kDouble);
  const at::Tensor nan = at::tensor({NAN, 0.0f}).to(at::kBFloat16);
  GradientContext c = ContextOf(k, {{"x", x}}, {at::tensor({3.0e38, 1.0}, at::kDouble)}, nan,
                                zero.to(at::kBFloat16), zero, true, graph::DType::kBF16);
  std::optional<RuleMatch> m = gradient_extremal_values(c);
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->reason.find("reads one value twice"), std::string::npos) << m->reason;
  // With 1e37 each partial is 5e37 and fits: a NaN there is the kernel's.
  GradientContext fits = ContextOf(k, {{"x", x}}, {at::tensor({1.0e37, 1.0}, at::kDouble)}, nan,
                                   zero.to(at::kBFloat16), zero, true, graph::DType::kBF16);
  EXPECT_FALSE(gradient_extremal_values(fits).has_value());
}

TEST(GradientRules, AGradientWhereTheFunctionIsNotDefinedIsArbitrary) {
  // Session 36's DigammaBackward0 f32 (judged expected): digamma(-1) is NaN
  // on both sides (a pole); polygamma(1, -1) is reflection-formula garbage
  // in each dtype (1.29e15 in float32, 6.6e32 in float64).
  const Case k = CaseOf(R"(divfuzz v1
input %x: f32[2] = values(-1.0, 2.5)
%y = aten::digamma(%x)
output %y
)", DivergenceClass::kTolerance, 0);
  const at::Tensor x = at::tensor({-1.0, 2.5}, at::kDouble);
  const at::Tensor v = at::ones({2}, at::kDouble);
  const auto digamma = [](const at::Tensor& t) { return at::digamma(t); };
  const at::Tensor cpu = GradOf(digamma, x, v, at::kFloat);
  const at::Tensor w = GradOf(digamma, x, v);
  GradientContext c = ContextOf(k, {{"x", x}}, {v}, cpu, w.to(at::kFloat), w, true);
  c.a.results = {at::digamma(x.to(at::kFloat))};
  c.b.results = {at::digamma(x)};
  ASSERT_TRUE(std::isnan(c.a.results[0][0].item<float>()));
  std::optional<RuleMatch> m = gradient_undefined_point(c);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_undefined_point");
  // At 2.5 digamma is defined: a gradient off there is not excused.
  Case defined = k;
  defined.d.element = 1;
  GradientContext at_defined = ContextOf(defined, {{"x", x}}, {v}, cpu * 2, w.to(at::kFloat), w,
                                         true);
  at_defined.a.results = c.a.results;
  at_defined.b.results = c.b.results;
  EXPECT_FALSE(gradient_undefined_point(at_defined).has_value());
}

TEST(GradientRules, ASideWithinItsStatisticsRoundingIsNotBlamedBesideAnInfiniteOne) {
  // Session 33's batch_norm f16 class split (judged: CUDA alone wrong,
  // pytorch#195701 narrows dy·(x - mean) to half): the CPU's finite gradient
  // is 3e-3 off the exact 1.2e-5, within its f16 statistics' rounding; CUDA's
  // -inf is the bug. Both sides were blamed.
  Case k = CaseOf(R"(divfuzz v1
input %x: f16[1,2,4,1] = fill(0.0)
%y = aten::batch_norm(%x, None, None, None, None, True, 0.0, 1.0, True)
output %y
)", DivergenceClass::kClassSplit, 0);
  const at::Tensor x = at::tensor({0.0, 0.0, 0.0, -2000.0, 0.0, 0.0, 0.0, 0.0}, at::kDouble)
                           .reshape({1, 2, 4, 1});
  const at::Tensor v = at::tensor({0.0, 0.0, 0.0, -30000.0, 0.0, 0.0, 0.0, 0.0}, at::kDouble)
                           .reshape({1, 2, 4, 1});
  auto norm = [](const at::Tensor& t) {
    return at::batch_norm(t, {}, {}, {}, {}, true, 0.0, 1.0, true);
  };
  const at::Tensor w = GradOf(norm, x, v);
  const at::Tensor cpu = GradOf(norm, x, v, at::kHalf);
  ASSERT_TRUE(at::isfinite(cpu).all().item<bool>());
  ASSERT_GT((cpu.to(at::kDouble) - w).abs().max().item<double>(), 1e-3);  // off, as judged
  at::Tensor cuda = at::zeros({1, 2, 4, 1}, at::kHalf);
  cuda.index_put_({0, 0}, at::tensor({-INFINITY, -INFINITY, -INFINITY, INFINITY}).reshape({4, 1}));
  GradientContext c = ContextOf(k, {{"x", x}}, {v}, cpu, cuda, w, false, graph::DType::kF16);
  c.hints = ops::FindOp("aten::batch_norm")->hints;
  const Policy policy = DefaultPolicy();
  EXPECT_TRUE(SideExcused(c, c.a, policy));
  EXPECT_FALSE(SideExcused(c, c.b, policy));
  // A finite side 5 off (15% of the terms rstd·|g| = 34.6) is not within that rounding.
  GradientContext off = ContextOf(k, {{"x", x}}, {v}, (w + 5).to(at::kHalf), cuda, w, false,
                                  graph::DType::kF16);
  off.hints = c.hints;
  EXPECT_FALSE(SideExcused(off, off.a, policy));
}

// Session 49's 8c799968 (judged real on both): an f64 logcumsumexp row led
// by 1e15, whose exact d/dx0 is 4 (every prefix's maximum is x0). The CPU's
// 3.955 and CUDA's 4.48 both keep the unshifted exponent's rounding. The
// CPU's float64 backward is its own kernel: against it the CPU is excused
// and CUDA alone was blamed; against the exact derivative it is not.
TEST(GradientRules, AFloat64SideIsJudgedAgainstTheExactDerivativeNotItsOwnKernel) {
  const Case k = LogcumsumexpCase("f64[4]", 0);
  const at::Tensor x = at::tensor({999999999999999.875, 0.189, 1.59, 6.28}, at::kDouble);
  const at::Tensor v = at::ones({4}, at::kDouble);
  const at::Tensor cpu =
      GradOf([](const at::Tensor& t) { return at::logcumsumexp(t, 0); }, x, v);
  ASSERT_NEAR(cpu[0].item<double>(), 3.955076722920577, 1e-12);
  const at::Tensor cuda = at::tensor({4.4816890703380645, 0.0, 0.0, 0.0}, at::kDouble);
  std::optional<at::Tensor> exact =
      exec::RunExactVjp(k.program.nodes[0], {{"x", x}}, v, "x", at::logcumsumexp(x, 0));
  ASSERT_TRUE(exact.has_value());
  ASSERT_NEAR((*exact)[0].item<double>(), 4.0, 1e-12);
  GradientContext c = ContextOf(k, {{"x", x}}, {v}, cpu, cuda, cpu, false, graph::DType::kF64);
  c.hints = ops::FindOp("aten::logcumsumexp")->hints;
  c.b.cuda = true;
  const Policy policy = DefaultPolicy();
  EXPECT_TRUE(SideExcused(c, c.a, policy));  // its own kernel says nothing
  EXPECT_FALSE(SideExcused(c, c.a, policy, *exact));
  EXPECT_FALSE(SideExcused(c, c.b, policy, *exact));
  // A side within the rules of the exact derivative stays excused.
  GradientContext right = ContextOf(k, {{"x", x}}, {v}, *exact, cuda, cpu, false,
                                    graph::DType::kF64);
  right.hints = c.hints;
  EXPECT_TRUE(SideExcused(right, right.a, policy, *exact));
}

// Session 48's 6828ad12 and session 50's judges (expected, "Extremal
// values" at the small end): atan2's backward divides by x² + y², and x =
// 1e-36 squares to 0 in float32, so the zero denominator is masked to a
// gradient of 0 where the exact d/dy is 1e36. Beside it session 50's
// SincBackward0 f16 at z = 3e-4 (judged real): πz² is subnormal in f16
// too, but the same formula in float32 is 4.4% off there: the formula, not
// the range.
TEST(GradientRules, AnIntermediateBelowTheRangeAtATinyOperandIsExtremal) {
  {
    Case k = CaseOf(R"(divfuzz v1
input %y: f32[2] = values(0.0, 0.5)
input %x: f32[2] = values(1e-36, 1.0)
%r = aten::atan2(%y, %x)
output %r
)", DivergenceClass::kTolerance, 0);
    // d/dy = x / (x² + y²) = 1/x at y = 0.
    const at::Tensor y = at::tensor({0.0, 0.5}, at::kFloat);
    const at::Tensor x = at::tensor({1e-36, 1.0}, at::kFloat);
    const at::Tensor v = at::tensor({1e-30, 1.0}, at::kFloat);
    auto atan2_y = [&](const at::Tensor& t) { return at::atan2(t, x.to(t.scalar_type())); };
    const at::Tensor w = GradOf(atan2_y, y.to(at::kDouble), v.to(at::kDouble));
    const at::Tensor cpu = GradOf(atan2_y, y, v, at::kFloat);
    ASSERT_EQ(cpu[0].item<float>(), 0.0f);  // the zero denominator, masked
    ASSERT_NEAR(w[0].item<double>(), 1e6, 1);
    GradientContext c =
        ContextOf(k, {{"y", y}, {"x", x}}, {v}, cpu, w.to(at::kFloat), w, true);
    c.b.upcast = true;
    std::optional<RuleMatch> m = gradient_intermediate_underflow(c);
    ASSERT_TRUE(m.has_value());
    EXPECT_NE(m->reason.find("aten::mul"), std::string::npos) << m->reason;
  }
  {
    Case k = CaseOf(R"(divfuzz v1
input %z: f16[2] = values(0.0003, 0.5)
%r = aten::sinc(%z)
output %r
)", DivergenceClass::kTolerance, 0);
    const at::Tensor z = at::tensor({0x1.3a8p-12, 0.5}, at::kDouble).to(at::kHalf);
    const at::Tensor v = at::ones({2}, at::kHalf);
    auto sinc = [](const at::Tensor& t) { return at::sinc(t); };
    const at::Tensor w = GradOf(sinc, z.to(at::kDouble), v.to(at::kDouble));
    const at::Tensor cpu = GradOf(sinc, z, v, at::kHalf);
    ASSERT_GT(std::abs(cpu[0].item<double>() - w[0].item<double>()), 1e-4);
    GradientContext c = ContextOf(k, {{"z", z}}, {v}, cpu, w.to(at::kHalf), w, true,
                                  graph::DType::kF16);
    c.b.upcast = true;
    EXPECT_FALSE(gradient_intermediate_underflow(c).has_value());
  }
}

// Session 50's 33508b9d (judged expected): pow(2, x) at x = 16 is 65536,
// past f16's range, so the forward's saved result is inf (correctly), and
// PowBackward2 forms 0·inf = NaN for an incoming 0 where the exact gradient
// is 0. At x = 15 the saved 32768 fits: no such intermediate.
TEST(GradientRules, ASavedForwardResultPastTheRangeIsAnIntermediateOverflow) {
  for (const double e : {16.0, 15.0}) {
    Case k = CaseOf(R"(divfuzz v1
input %x: f16[2] = values(16.0, 1.0)
%r = aten::pow.Scalar(2.0, %x)
output %r
)", DivergenceClass::kClassSplit, 0);
    const at::Tensor x = at::tensor({e, 1.0}, at::kDouble).to(at::kHalf);
    const at::Tensor v = at::zeros({2}, at::kHalf);
    const at::Tensor saved = at::pow(2.0, x);
    const at::Tensor cpu = at::tensor({std::nan(""), 0.0}, at::kDouble).to(at::kHalf);
    const at::Tensor w = at::zeros({2}, at::kDouble);
    GradientContext c = ContextOf(k, {{"x", x}}, {v}, cpu, w.to(at::kHalf), w, true,
                                  graph::DType::kF16);
    c.a.results = {saved};
    c.b.upcast = true;
    std::optional<RuleMatch> m = gradient_intermediate_overflow(c);
    EXPECT_EQ(m.has_value(), e == 16.0) << e;
    if (m) EXPECT_NE(m->reason.find("the forward result it saved"), std::string::npos) << m->reason;
  }
}

TEST(GradientRules, BackwardStableMovesStayInsideTheDomain) {
  // Session 33's ErfinvBackward0 at x = 1 - 2^-24, one ulp below erfinv's pole: x moved up by
  // 4 eps crosses 1 (NaN there), and the hull had collapsed onto the unmoved point, so CPU's
  // 2120849.25 (exact 2120848.008, CUDA 2120841.25) fell outside it. Smaller moves stay inside
  // and span the gradient's steep rise.
  const Case k = CaseOf(R"(divfuzz v1
input %x: f32[1] = values(0.99999994039535522)
%y = aten::erfinv(%x)
output %y
)", DivergenceClass::kTolerance);
  const at::Tensor x = at::tensor({1.0 - std::ldexp(1.0, -24)}, at::kDouble);
  const at::Tensor v = at::ones({1});
  const at::Tensor w = GradOf([](const at::Tensor& t) { return at::erfinv(t); }, x, v);
  ASSERT_NEAR(w.item<double>(), 2120848.008, 0.01);
  auto ctx = [&](float a, float b) {
    return ContextOf(k, {{"x", x}}, {v}, at::tensor({a}), at::tensor({b}), w, true);
  };
  std::optional<RuleMatch> m = gradient_backward_stable(ctx(2120849.25f, 2120841.25f));
  ASSERT_TRUE(m.has_value());
  // Far below what any point of the ball gives, or of the wrong sign: a finding.
  EXPECT_FALSE(gradient_backward_stable(ctx(2120849.25f, 1000.0f)).has_value());
  EXPECT_FALSE(gradient_backward_stable(ctx(-2120849.25f, 2120841.25f)).has_value());
}

TEST(GradientRules, NonFiniteIncomingIsUndefinedOnlyWhereTheGradientIsNotFinite) {
  Case k{MustParse(R"(divfuzz v1
input %x: f32[2] = values(0.0, 1.0)
%y = aten::sin(%x)
output %y
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kClassSplit;
  k.d.element = 0;
  // v = inf at x = pi/2 in float64 terms: inf * cos(x); with cos(x) = 0
  // exactly the float64 gradient is NaN (inf * 0): a side's 0 is arbitrary.
  const at::Tensor x = at::tensor({0.0, 1.0}, at::kDouble);
  const at::Tensor v = at::tensor({INFINITY, 1.0f});
  const at::Tensor nan_witness = at::tensor({NAN, std::cos(1.0)}, at::kDouble);
  GradientContext c = ContextOf(k, {{"x", x}}, {v}, at::tensor({0.0f, 0.54f}),
                                at::tensor({NAN, 0.54f}), nan_witness, true);
  std::optional<RuleMatch> m = gradient_undefined_point(c);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_undefined_point");
  // A finite float64 gradient (the cotangent at this element is finite):
  // NaN against a number stays a finding even though another element's v is inf.
  k.d.element = 1;
  const at::Tensor finite_witness = at::tensor({INFINITY, std::cos(1.0)}, at::kDouble);
  GradientContext other = ContextOf(k, {{"x", x}}, {v}, at::tensor({INFINITY, NAN}),
                                    at::tensor({INFINITY, 0.54f}), finite_witness, true);
  EXPECT_FALSE(gradient_undefined_point(other).has_value());
}

TEST(GradientRules, ASummingBackwardThatAccumulatesPastFloat32IsExtremal) {
  Case k{MustParse(R"(divfuzz v1
input %a: f32[2,2] = values(1.0, 2.0, 3.0, 4.0)
input %b: f32[2] = values(1.0, 1.0)
%y = aten::matmul(%a, %b)
output %y
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kClassSplit;
  k.d.element = 0;
  const at::Tensor a = at::tensor({1.0, 1.0, -1.0, -1.0}, at::kDouble).reshape({2, 2});
  const at::Tensor b = at::ones({2}, at::kDouble);
  // d/db = A^T v = (v0 - v1, v0 - v1) = 0 exactly, but with v at f32's
  // maximum a kernel summing v0 first may overflow float32 on the way.
  const at::Tensor big = at::full({2}, 3.0e38f);
  const at::Tensor w = at::mv(a.transpose(0, 1), big.to(at::kDouble));
  ASSERT_EQ(w.abs().max().item<double>(), 0.0);
  GradientContext c = ContextOf(k, {{"a", a}, {"b", b}}, {big}, at::tensor({INFINITY, 0.0f}),
                                at::tensor({0.0f, 0.0f}), w, false);
  c.out = 1;
  ASSERT_TRUE(gradient_extremal_values(c).has_value());
  // v = 1: nothing comes near the range, inf is a finding.
  const at::Tensor one = at::ones({2});
  const at::Tensor w1 = at::mv(a.transpose(0, 1), one.to(at::kDouble));
  GradientContext small = ContextOf(k, {{"a", a}, {"b", b}}, {one}, at::tensor({INFINITY, 0.0f}),
                                    w1.to(at::kFloat), w1, false);
  small.out = 1;
  EXPECT_FALSE(gradient_extremal_values(small).has_value());
}

// Session 35's layer_norm: the CPU's backward sums g * w * x over a row of
// 1e18 and overflows float32 (NaN), though the gradient fits; the weight's
// magnitude is a factor of the terms besides x's (sum|g| * max|x| = 3e38 is
// within float32; times a weight of 30 it is not). With a weight of 1 a NaN
// stays a finding.
TEST(GradientRules, ASummingBackwardCountsEveryInputsMagnitude) {
  Case k{MustParse(R"(divfuzz v1
input %x: f32[1,4] = values(1.0, 2.0, 3.0, 4.0)
input %w: f32[4] = values(1.0, 1.0, 1.0, 1.0)
%s = aten::layer_norm(%x, [4], %w)
output %s
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kClassSplit;
  k.d.element = 0;
  const at::Tensor x = at::tensor({1e18, -2e18, 3e18, 5e17}, at::kDouble).reshape({1, 4});
  const at::Tensor g = at::tensor({5e19f, -3e19f, 1e19f, 1e19f}).reshape({1, 4});
  for (const double weight : {30.0, 1.0}) {
    const at::Tensor w = at::full({4}, weight, at::kDouble);
    const at::Tensor exact =
        GradOf([&](const at::Tensor& t) { return at::layer_norm(t, {4}, w.to(t.scalar_type())); },
               x, g.to(at::kDouble));
    at::Tensor nan_side = exact.to(at::kFloat).clone();
    nan_side[0][0] = NAN;
    GradientContext c = ContextOf(k, {{"x", x}, {"w", w}}, {g}, nan_side, exact.to(at::kFloat),
                                  exact, false);
    EXPECT_EQ(gradient_extremal_values(c).has_value(), weight > 1) << weight;
  }
}

TEST(GradientRules, APointwiseBackwardSumsOverBroadcastDimsAndMayOverflowThere) {
  // Session 33's CopysignBackward0: a scalar broadcast to [3]; its gradient
  // sums -FLT_MAX, FLT_MAX/2, FLT_MAX (exactly FLT_MAX/2), and CUDA's tree
  // reduction adds the last two first: inf.
  const Case k = CaseOf(R"(divfuzz v1
input %x: f32[] = values(2.0)
input %y: f32[3] = values(1.0, 1.0, 1.0)
%z = aten::copysign.Tensor(%x, %y)
output %z
)", DivergenceClass::kClassSplit, 0);
  const float max = std::numeric_limits<float>::max();
  const at::Tensor v = at::tensor({-max, max / 2, max});
  const at::Tensor x = at::full({}, 2.0, at::kDouble), y = at::ones({3}, at::kDouble);
  const at::Tensor w = v.to(at::kDouble).sum();
  GradientContext c = ContextOf(k, {{"x", x}, {"y", y}}, {v}, w.to(at::kFloat),
                                at::full({}, INFINITY), w, true);
  std::optional<RuleMatch> m = gradient_extremal_values(c);
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->reason.find("accumulates"), std::string::npos) << m->reason;
  // The same incoming gradient into an input of the output's shape sums
  // nothing: an inf there is no accumulation.
  const Case e = CaseOf(R"(divfuzz v1
input %x: f32[3] = values(2.0, 2.0, 2.0)
input %y: f32[3] = values(1.0, 1.0, 1.0)
%z = aten::copysign.Tensor(%x, %y)
output %z
)", DivergenceClass::kClassSplit, 0);
  const at::Tensor x3 = at::full({3}, 2.0, at::kDouble);
  GradientContext same = ContextOf(e, {{"x", x3}, {"y", y}}, {v}, v,
                                   at::tensor({INFINITY, max / 2, max}), v.to(at::kDouble), true);
  EXPECT_FALSE(gradient_extremal_values(same).has_value());
}

TEST(GradientRules, AnFftBackwardIsJudgedNormwise) {
  Case k{MustParse(R"(divfuzz v1
input %x: c64[64] = normal(seed=1)
%y = aten::fft_fft(%x)
output %y
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kTolerance;
  at::Generator gen = at::detail::createCPUGenerator(3);
  const at::Tensor v = at::normal(0, 1, {64}, gen, at::TensorOptions().dtype(at::kDouble))
                           .to(at::kComplexFloat);
  const at::Tensor w = at::fft_ifft(v.to(at::kComplexDouble)) * 64;  // fft's adjoint
  at::Tensor off = w.to(at::kComplexFloat).clone();
  off[5] = off[5] + c10::complex<float>(2e-5f, 0);  // within 8·6·eps·||G|| = 4.6e-4
  GradientContext c = ContextOf(k, {{"x", w}}, {v}, off, w.to(at::kComplexFloat), w, false);
  c.dtype = graph::DType::kC64;
  c.hints = ops::FindOp("aten::fft_fft")->hints;
  ASSERT_TRUE(gradient_transform_normwise(c).has_value());
  // 10% of the norm in one element is no rounding.
  at::Tensor far = w.to(at::kComplexFloat).clone();
  far[5] = far[5] + c10::complex<float>(8.0f, 0);
  GradientContext wrong = ContextOf(k, {{"x", w}}, {v}, far, w.to(at::kComplexFloat), w, false);
  wrong.dtype = graph::DType::kC64;
  wrong.hints = c.hints;
  EXPECT_FALSE(gradient_transform_normwise(wrong).has_value());
  // Elements NaN on both sides (session 40's G5: other rows of a batched
  // backward NaN from an incoming inf) leave the finite ones judged.
  at::Tensor nan_a = off.clone(), nan_b = w.to(at::kComplexFloat).clone();
  nan_a[40] = nan_b[40] = c10::complex<float>(NAN, NAN);
  GradientContext rows = ContextOf(k, {{"x", w}}, {v}, nan_a, nan_b, w, false);
  rows.dtype = graph::DType::kC64;
  rows.hints = c.hints;
  EXPECT_TRUE(gradient_transform_normwise(rows).has_value());
  at::Tensor far_nan = far.clone();
  far_nan[40] = c10::complex<float>(NAN, NAN);
  GradientContext rows_far = ContextOf(k, {{"x", w}}, {v}, far_nan, nan_b, w, false);
  rows_far.dtype = graph::DType::kC64;
  rows_far.hints = c.hints;
  EXPECT_FALSE(gradient_transform_normwise(rows_far).has_value());
  // The rounding is relative to the incoming gradient's norm too (session
  // 39's FftC2RBackward0: 7.6e30 in a bin whose exact value is 0, with an
  // incoming norm of 3e38): a result far below it carries that rounding.
  const at::Tensor big = v * 1e30f;
  at::Tensor small_off = w.to(at::kComplexFloat).clone();
  small_off[5] = small_off[5] + c10::complex<float>(1e20f, 0);
  GradientContext loud = ContextOf(k, {{"x", w}}, {big}, small_off, w.to(at::kComplexFloat), w,
                                   false);
  loud.dtype = graph::DType::kC64;
  loud.hints = c.hints;
  EXPECT_TRUE(gradient_transform_normwise(loud).has_value());
  // A class split from an incoming inf (session 34's fft_ihfft backward: NaN
  // on one device, inf on the other, by the algorithm's inf·0): expected;
  // the same split from a finite incoming gradient is not.
  at::Tensor vinf = v.clone();
  vinf[3] = c10::complex<float>(INFINITY, 0);
  at::Tensor nan_side = w.to(at::kComplexFloat).clone();
  nan_side[0] = c10::complex<float>(NAN, NAN);
  at::Tensor inf_side = w.to(at::kComplexFloat).clone();
  inf_side[0] = c10::complex<float>(INFINITY, 0);
  Case split = k;
  split.d.cls = DivergenceClass::kClassSplit;
  GradientContext from_inf = ContextOf(split, {{"x", w}}, {vinf}, nan_side, inf_side, w, false);
  from_inf.dtype = graph::DType::kC64;
  from_inf.hints = c.hints;
  EXPECT_TRUE(gradient_transform_normwise(from_inf).has_value());
  GradientContext from_finite = ContextOf(split, {{"x", w}}, {v}, nan_side, inf_side, w, false);
  from_finite.dtype = graph::DType::kC64;
  from_finite.hints = c.hints;
  EXPECT_FALSE(gradient_transform_normwise(from_finite).has_value());
}

TEST(GradientRules, LogcumsumexpBackwardInBf16IsWithinItsScanCarry) {
  const Case k = LogcumsumexpCase("bf16[16]", 0);
  const at::Tensor x = at::linspace(-1, 1, 16, at::kDouble).to(at::kBFloat16).to(at::kDouble);
  const at::Tensor v = at::linspace(0.5, 1, 16, at::kDouble).to(at::kBFloat16);
  const at::Tensor w =
      GradOf([](const at::Tensor& t) { return at::logcumsumexp(t, 0); }, x, v.to(at::kDouble));
  auto ctx = [&](const at::Tensor& a, bool cuda) {
    GradientContext c = ContextOf(k, {{"x", x}}, {v}, a.to(at::kBFloat16), w.to(at::kBFloat16),
                                  w, false);
    c.dtype = graph::DType::kBF16;
    c.hints = ops::FindOp("aten::logcumsumexp")->hints;
    c.a.cuda = cuda;
    return c;
  };
  // v > 0: the parts are the gradient itself. The formula rounds exponents
  // of magnitude M = 1.4 to 3 three times in bf16: expm1(3 u (1 + M)),
  // 2.8% to 4.3% of it, on either device.
  ASSERT_TRUE(gradient_scan_carry(ctx(w * 1.02, false)).has_value());
  // 15% is more than the CPU's formula rounds (it carries in float) ...
  EXPECT_FALSE(gradient_scan_carry(ctx(w * 1.15, false)).has_value());
  // ... but within CUDA's bf16 carry over 16 steps (pytorch#180155, 20% to
  // 35% here), which may lose up to half the result and no more.
  EXPECT_TRUE(gradient_scan_carry(ctx(w * 1.15, true)).has_value());
  EXPECT_FALSE(gradient_scan_carry(ctx(w * 2, true)).has_value());
  // An element both sides get equally wrong is no part of the divergence
  // (session 39's G3: both 0 where the exact gradient is 1.15): the sides
  // are judged where they differ.
  at::Tensor a = (w * 1.02).clone(), b = w.clone();
  a[15] = 0, b[15] = 0;
  GradientContext both_off = ctx(a, false);
  both_off.b.outgoing = b.to(at::kBFloat16);
  EXPECT_TRUE(gradient_scan_carry(both_off).has_value());
}

// Session 35's f16 logcumsumexp near 3000: one f16 step of the running value
// is 2, so the carry's rounding can zero or double every term; a side that
// returns 0 for -19982 has lost the result, which no carry bound excuses.
TEST(GradientRules, AScanCarryThatKeepsNoDigitExcusesNothing) {
  const Case k = LogcumsumexpCase("f16[64]", 0);
  const at::Tensor x = at::linspace(2990, 3000, 64, at::kDouble).to(at::kHalf).to(at::kDouble);
  const at::Tensor v = at::linspace(-1, 1, 64, at::kDouble).to(at::kHalf);
  const at::Tensor w =
      GradOf([](const at::Tensor& t) { return at::logcumsumexp(t, 0); }, x, v.to(at::kDouble));
  at::Tensor zeroed = w.clone();
  zeroed[0] = 0;
  GradientContext c = ContextOf(k, {{"x", x}}, {v}, zeroed.to(at::kHalf), w.to(at::kHalf), w,
                                false, graph::DType::kF16);
  c.hints = ops::FindOp("aten::logcumsumexp")->hints;
  EXPECT_FALSE(gradient_scan_carry(c).has_value());
}

// Session 35's Max/Min/Median class splits: a NaN incoming gradient into an
// op that selects input elements is 0 at the unselected ones on the CPU
// (masked_fill) and NaN on CUDA (mask * grad); the float64 witness takes the
// CPU's branch. Undefined (autograd notes, rule 5) only where the incoming
// gradient is not finite.
TEST(GradientRules, ASelectionWithANanIncomingGradientIsUndefinedEverywhere) {
  Case k = CaseOf(R"(divfuzz v1
input %x: f32[4] = values(1.0, 5.0, 2.0, 3.0)
%y = aten::max(%x)
output %y
)", DivergenceClass::kClassSplit, 0);
  const at::Tensor x = at::tensor({1.0, 5.0, 2.0, 3.0}, at::kDouble);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const at::Tensor cpu = at::tensor({0.0f, static_cast<float>(nan), 0.0f, 0.0f});
  const at::Tensor cuda = at::full({4}, nan, at::kFloat);
  const at::Tensor w = cpu.to(at::kDouble);
  auto ctx = [&](const at::Tensor& v, const at::Tensor& a, const at::Tensor& b) {
    GradientContext c = ContextOf(k, {{"x", x}}, {v}, a, b, w, false);
    c.hints = ops::FindOp("aten::max")->hints;
    return c;
  };
  std::optional<RuleMatch> m = gradient_undefined_point(ctx(at::scalar_tensor(nan), cpu, cuda));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_undefined_point");
  // A finite incoming gradient: CUDA's NaN at an unselected element is a fault.
  const at::Tensor right = at::tensor({0.0f, 2.0f, 0.0f, 0.0f});
  GradientContext finite = ContextOf(k, {{"x", x}}, {at::scalar_tensor(2.0)}, right, cuda,
                                     right.to(at::kDouble), false);
  finite.hints = ops::FindOp("aten::max")->hints;
  EXPECT_FALSE(gradient_undefined_point(finite).has_value());
}

// A non-elementwise op reading an infinity: undefined where the float64
// gradient is NaN (prod of [inf, 0, 2]: d/dx2 = 0 * inf), not where it is
// finite (d/dx0 = 0).
TEST(GradientRules, AnInfiniteInputIsUndefinedOnlyWhereTheFloat64GradientIsNan) {
  const double inf = std::numeric_limits<double>::infinity();
  const at::Tensor x = at::tensor({inf, 0.0, 2.0}, at::kDouble);
  const at::Tensor v = at::ones({}, at::kDouble);
  const at::Tensor w = GradOf([](const at::Tensor& t) { return at::prod(t); }, x, v);
  ASSERT_TRUE(std::isnan(w[2].item<double>()));
  ASSERT_EQ(w[0].item<double>(), 0.0);
  for (long long element : {2LL, 0LL}) {
    Case k = CaseOf(R"(divfuzz v1
input %x: f32[3] = values(0.0, 0.0, 2.0)
%y = aten::prod(%x)
output %y
)", DivergenceClass::kClassSplit, element);
    at::Tensor a = w.to(at::kFloat), b = a.clone();
    b[element] = 7.0f;
    GradientContext c = ContextOf(k, {{"x", x}}, {v}, a, b, w, false);
    EXPECT_EQ(gradient_undefined_point(c).has_value(), element == 2) << element;
  }
}

// Session 35's bf16 and f16 logcumsumexp buckets: a 180 in another row had
// made the bound decline for a row of values near 1. The carry's bound is
// per scanned row.
TEST(GradientRules, AScanCarryIsBoundedPerScannedRow) {
  const Case k = LogcumsumexpCase("bf16[2,16]", 1);
  at::Tensor x = at::linspace(-1, 1, 32, at::kDouble).reshape({2, 16});
  x[1] = at::linspace(170, 180, 16, at::kDouble);
  x = x.to(at::kBFloat16).to(at::kDouble);
  const at::Tensor v = at::linspace(0.5, 1, 32, at::kDouble).reshape({2, 16}).to(at::kBFloat16);
  const at::Tensor w =
      GradOf([](const at::Tensor& t) { return at::logcumsumexp(t, 1); }, x, v.to(at::kDouble));
  at::Tensor off = w.clone();
  off[0] = off[0] * 1.02;  // row 0: within its own formula's rounding (2.8-4.3%)
  GradientContext c = ContextOf(k, {{"x", x}}, {v}, off.to(at::kBFloat16),
                                w.to(at::kBFloat16), w, false, graph::DType::kBF16);
  c.hints = ops::FindOp("aten::logcumsumexp")->hints;
  EXPECT_TRUE(gradient_scan_carry(c).has_value());
}

// One attention call, as the attention rules read it (shapes come from the
// tensors a test passes, not from these declarations).
constexpr char kAttention[] = R"(divfuzz v1
input %q: f32[1,2,5,8] = normal(seed=1)
input %k: f32[1,2,5,8] = normal(seed=2)
input %v: f32[1,2,5,8] = normal(seed=3)
%o = aten::scaled_dot_product_attention(%q, %k, %v)
output %o
)";

// Session 35's attention buckets with logits of 3.5e13: the float32 logits
// are known to more than 1, so exp(S - LSE) and the gradient's class are
// undetermined. Logits of a few hundred leave a NaN a finding.
TEST(GradientRules, AttentionLogitsPastFloat32ResolutionLeaveTheClassOpen) {
  Case split = CaseOf(kAttention, DivergenceClass::kClassSplit, 0);
  at::Generator gen = at::detail::createCPUGenerator(5);
  const at::Tensor q = at::randn({1, 1, 4, 8}, gen, at::kDouble) * 10;
  const at::Tensor kk = at::randn({1, 1, 4, 8}, gen, at::kDouble) * 10;
  const at::Tensor v = at::randn({1, 1, 4, 8}, gen, at::kDouble);
  const at::Tensor g = at::randn({1, 1, 4, 8}, gen, at::kDouble).to(at::kFloat);
  const at::Tensor finite = at::zeros({1, 1, 4, 8});
  at::Tensor nan_side = finite.clone();
  nan_side.reshape(-1)[0] = NAN;
  for (const double scale : {1e6, 1.0}) {
    const std::map<std::string, at::Tensor> inputs{{"q", q * scale}, {"k", kk * scale}, {"v", v}};
    GradientContext c = ContextOf(split, inputs, {g}, nan_side, finite,
                                  finite.to(at::kDouble), false);
    EXPECT_EQ(gradient_attention_logits(c).has_value(), scale > 1) << scale;
  }
}

// Session 39's G4: self-attention sdpa(x, x, x) with logits of 3.2e7 in f16.
// Node::Uses() names x once; the rule reads q and k by position.
TEST(GradientRules, SelfAttentionLogitsAreReadByPosition) {
  const Case k = CaseOf(R"(divfuzz v1
input %x: f32[1,1,4,8] = normal(seed=1)
%o = aten::scaled_dot_product_attention(%x, %x, %x)
output %o
)", DivergenceClass::kClassSplit, 0);
  at::Generator gen = at::detail::createCPUGenerator(9);
  const at::Tensor x = at::randn({1, 1, 4, 8}, gen, at::kDouble) * 1e4;
  const at::Tensor finite = at::zeros({1, 1, 4, 8});
  at::Tensor nan_side = finite.clone();
  nan_side.reshape(-1)[0] = NAN;
  GradientContext c = ContextOf(k, {{"x", x}}, {finite}, nan_side, finite,
                                finite.to(at::kDouble), false);
  EXPECT_TRUE(gradient_attention_logits(c).has_value());
}

// Session 35's bicubic buckets: the kernel forms its weights in float32 by
// design, so its float32 gradient is off the float64 one by the weights'
// rounding times the cotangents it gathers; 1e-3 of the gradient is not.
TEST(GradientRules, AnUpsampleFormsItsWeightsInFloat32) {
  Case k = CaseOf(R"(divfuzz v1
input %f: f32[1,1,3,4] = normal(seed=1)
%y = aten::upsample_bicubic2d(%f, [4, 3], False)
output %y
)", DivergenceClass::kTolerance);
  at::Generator gen = at::detail::createCPUGenerator(3);
  const at::Tensor x = at::randn({1, 1, 3, 4}, gen, at::kDouble).to(at::kFloat).to(at::kDouble);
  const at::Tensor g = (at::randn({1, 1, 4, 3}, gen, at::kDouble) * 1e36).to(at::kFloat);
  auto bicubic = [](const at::Tensor& t) { return at::upsample_bicubic2d(t, {4, 3}, false); };
  const at::Tensor w = GradOf(bicubic, x, g), f32 = GradOf(bicubic, x, g, at::kFloat);
  ASSERT_TRUE(CompareTensors(f32, w.to(at::kFloat), graph::DType::kF32,
                             DefaultPolicy().For("aten::upsample_bicubic2d", graph::DType::kF32))
                  .has_value());  // the rounding the rule must explain
  GradientContext ok = ContextOf(k, {{"f", x}}, {g}, f32, w.to(at::kFloat), w, false);
  std::optional<RuleMatch> m = gradient_interpolation_weights(ok);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_interpolation_weights");
  at::Tensor wrong = f32.clone(at::MemoryFormat::Contiguous);  // so reshape is a view
  const int64_t top = w.reshape(-1).abs().argmax().item<int64_t>();
  wrong.reshape(-1)[top] = wrong.reshape(-1)[top] * 1.001f;
  GradientContext bad = ContextOf(k, {{"f", x}}, {g}, wrong, w.to(at::kFloat), w, false);
  EXPECT_FALSE(gradient_interpolation_weights(bad).has_value());
}

// q and k (scale 0.5), v and g (scale 1000) of `shape`, drawn with seed 11,
// q's flat element `inf_at` set to inf where given: the float32 gradient for
// q is excused by gradient_attention_rounding, 2% off batch 0's largest
// element is not.
void ExpectAttentionRoundingBoundsQ(const Case& k, at::IntArrayRef shape,
                                    std::optional<int64_t> inf_at = std::nullopt) {
  at::Generator gen = at::detail::createCPUGenerator(11);
  auto draw = [&](double scale) {
    return (at::randn(shape, gen, at::kDouble) * scale).to(at::kFloat).to(at::kDouble);
  };
  at::Tensor q = draw(0.5);
  const at::Tensor kk = draw(0.5), v = draw(1000), g = draw(1000).to(at::kFloat);
  if (inf_at) q.reshape(-1).index_put_({*inf_at}, INFINITY);
  auto attention = [&](const at::Tensor& t) {
    return at::scaled_dot_product_attention(t, kk.to(t.scalar_type()), v.to(t.scalar_type()));
  };
  const at::Tensor w = GradOf(attention, q, g), f32 = GradOf(attention, q, g, at::kFloat);
  ASSERT_TRUE(at::isfinite(w[0]).all().item<bool>());
  const std::map<std::string, at::Tensor> inputs{{"q", q}, {"k", kk}, {"v", v}};
  GradientContext ok = ContextOf(k, inputs, {g}, f32, w.to(at::kFloat), w, false);
  std::optional<RuleMatch> m = gradient_attention_rounding(ok);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_attention_rounding");
  at::Tensor wrong = f32.clone(at::MemoryFormat::Contiguous);  // so reshape is a view
  const int64_t top = w[0].reshape(-1).abs().argmax().item<int64_t>();
  wrong.reshape(-1)[top] = wrong.reshape(-1)[top] * 1.02f;
  GradientContext bad = ContextOf(k, inputs, {g}, wrong, w.to(at::kFloat), w, false);
  EXPECT_FALSE(gradient_attention_rounding(bad).has_value());
}

// Session 35's SafeSoftmaxBackward0 buckets: attention's float32 dP - D
// cancels. The float32 gradient is within its terms' rounding of the float64
// one; 2% off the largest element is not.
TEST(GradientRules, AttentionBackwardRoundsItsCancellingTerms) {
  ExpectAttentionRoundingBoundsQ(CaseOf(kAttention, DivergenceClass::kTolerance), {1, 2, 5, 8});
}

// Session 45's audit of C3's BmmBackward0 bf16 (076007ac): one inf in
// another batch's q made the logits' single maximum infinite, and so the
// bound of every element. The bound is per query row: batch 0's rounding is
// still excused, 2% off its largest element is not.
TEST(GradientRules, AttentionLogitsAreBoundedPerQueryRow) {
  const Case k = CaseOf(R"(divfuzz v1
input %q: f32[2,2,5,8] = normal(seed=1)
input %k: f32[2,2,5,8] = normal(seed=2)
input %v: f32[2,2,5,8] = normal(seed=3)
%o = aten::scaled_dot_product_attention(%q, %k, %v)
output %o
)", DivergenceClass::kTolerance);
  ExpectAttentionRoundingBoundsQ(k, {2, 2, 5, 8}, /*inf_at=*/80);  // q[1, 0, 0, 0]
}

// Session 38's masked grouped-query bucket (ToCopyBackward0, f16): v
// constant, so k's exact gradient is 0 and each side's float32 dP - D leaves
// 1e-5. The rule models the mask and repeats k and v over q's heads; the
// logits rule, which threw on the heads' mismatch and so hid every later rule,
// now reads them too; 1.0 off an element is not excused.
TEST(GradientRules, MaskedGroupedQueryAttentionRoundsItsCancellingTerms) {
  Case k = CaseOf(R"(divfuzz v1
input %q: f32[1,4,5,8] = normal(seed=1)
input %k: f32[1,2,6,8] = normal(seed=2)
input %v: f32[1,2,6,8] = fill(0.6683)
input %m: bool[5,6] = values(1,0,1,1,0,1, 0,1,1,0,1,1, 1,1,0,1,1,0, 1,0,0,1,1,1, 0,1,1,1,0,1)
%o = aten::scaled_dot_product_attention(%q, %k, %v, %m, 0.0, False, enable_gqa=True)
output %o
)", DivergenceClass::kTolerance);
  at::Generator gen = at::detail::createCPUGenerator(13);
  const at::Tensor q = (at::randn({1, 4, 5, 8}, gen, at::kDouble) * 100).to(at::kFloat).to(at::kDouble);
  const at::Tensor kk = at::randn({1, 2, 6, 8}, gen, at::kDouble).to(at::kFloat).to(at::kDouble);
  const at::Tensor v = at::full({1, 2, 6, 8}, 0.6683, at::kFloat).to(at::kDouble);
  const at::Tensor mask = at::tensor({1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 0,
                                      1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1}, at::kInt).reshape({5, 6}).to(at::kBool);
  const at::Tensor g = at::randn({1, 4, 5, 8}, gen, at::kDouble).to(at::kFloat);
  auto attention = [&](const at::Tensor& t) {
    return at::scaled_dot_product_attention(q.to(t.scalar_type()), t, v.to(t.scalar_type()), mask,
                                            0.0, false, std::nullopt, true);
  };
  const at::Tensor w = GradOf(attention, kk, g), f32 = GradOf(attention, kk, g, at::kFloat);
  ASSERT_LT(w.abs().max().item<double>(), 1e-9);  // v constant: the exact gradient is 0
  const std::map<std::string, at::Tensor> inputs{{"q", q}, {"k", kk}, {"v", v}, {"m", mask}};
  GradientContext ok = ContextOf(k, inputs, {g}, f32, w.to(at::kFloat), w, false);
  ok.out = 1;
  ok.wrt = "k";
  EXPECT_FALSE(gradient_attention_logits(ok).has_value());  // and no throw
  std::optional<RuleMatch> m1 = gradient_attention_rounding(ok);
  ASSERT_TRUE(m1.has_value());
  EXPECT_EQ(m1->rule, "gradient_attention_rounding");
  at::Tensor wrong = f32.clone(at::MemoryFormat::Contiguous);
  wrong.reshape(-1)[3] = wrong.reshape(-1)[3] + 1.0f;
  GradientContext bad = ContextOf(k, inputs, {g}, wrong, w.to(at::kFloat), w, false);
  bad.out = 1;
  bad.wrt = "k";
  EXPECT_FALSE(gradient_attention_rounding(bad).has_value());
  // A statement differentiating k alone has it at out 0: its role is its
  // operand's position (session 49's ac1c7afb, v alone, was bounded as q).
  ok.out = 0;
  EXPECT_TRUE(gradient_attention_rounding(ok).has_value());
}

// Session 38's sinc f32 bucket: CUDA 39.7 ulps off, the CPU 4.7 only because
// its sin was 1 ulp high; FunctionsManual's sinc_backward cancels 47-fold on
// both. The CPU's own kernel one to four ulps away leaves the tolerance, so
// its agreement at the run's input is luck; sin's backward stays within.
TEST(GradientRules, AFormulaRightOnlyAtTheRunsInputMissesBesideIt) {
  const at::Tensor x = at::tensor({static_cast<float>(std::ldexp(0x1.492d8ap0, -4))});
  const at::Tensor g = at::full({1}, 1e14f);
  const Policy policy = DefaultPolicy();
  for (const char* op : {"aten::special_sinc", "aten::sin"}) {
    const graph::Program p = MustParse(std::string("divfuzz v1\ninput %x: f32[1] = fill(0.0)\n"
                                                   "%y = ") + op + "(%x)\noutput %y\n");
    const ops::TypeEnv types = MustInfer(p);
    auto grad = [&](at::ScalarType t) {
      return GradOf([&](const at::Tensor& v) {
        return std::string(op) == "aten::sin" ? at::sin(v) : at::special_sinc(v);
      }, x, g, t);
    };
    // At the run's input the CPU is within tolerance of the float64 backward.
    ASSERT_FALSE(CompareTensors(grad(at::kFloat), grad(at::kDouble).to(at::kFloat),
                                graph::DType::kF32, policy.For(op, graph::DType::kF32))
                     .has_value()) << op;
    const std::optional<int> miss = NearbyMiss(p.nodes[0], {{"x", x}}, {g}, false,
                                               exec::Target::kCpu, types, 0, 0,
                                               graph::DType::kF32, policy, op);
    EXPECT_EQ(miss.has_value(), std::string(op) == "aten::special_sinc") << op;
  }
}

// PyTorch's own attention test: a kernel's gradient within fudge times the
// math path's float32 deviation from the float64 reference passes (fudge 160
// for q); a gradient 1% off at its largest element does not.
TEST(GradientRules, AttentionWithinPyTorchsOwnTestToleranceIsExpected) {
  Case k = CaseOf(kAttention, DivergenceClass::kTolerance);
  at::Generator gen = at::detail::createCPUGenerator(21);
  auto draw = [&](double scale) {
    return (at::randn({1, 2, 5, 8}, gen, at::kDouble) * scale).to(at::kFloat).to(at::kDouble);
  };
  const at::Tensor q = draw(4), kk = draw(4), v = draw(1), g = draw(1).to(at::kFloat);
  auto attention = [&](const at::Tensor& t) {
    return at::scaled_dot_product_attention(t, kk.to(t.scalar_type()), v.to(t.scalar_type()));
  };
  const at::Tensor w = GradOf(attention, q, g), f32 = GradOf(attention, q, g, at::kFloat);
  // Another order of the same sums: the manual composite in float32.
  auto manual = [&](const at::Tensor& t) {
    const at::Tensor s = at::matmul(t, kk.to(t.scalar_type()).transpose(-2, -1)) / std::sqrt(8.0);
    return at::matmul(at::softmax(s, -1), v.to(t.scalar_type()));
  };
  const at::Tensor other = GradOf(manual, q, g, at::kFloat);
  const std::map<std::string, at::Tensor> inputs{{"q", q}, {"k", kk}, {"v", v}};
  std::optional<RuleMatch> m =
      gradient_attention_reference(ContextOf(k, inputs, {g}, f32, other, w, false));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_attention_reference");
  at::Tensor wrong = other.clone(at::MemoryFormat::Contiguous);
  const int64_t top = w.reshape(-1).abs().argmax().item<int64_t>();
  wrong.reshape(-1)[top] = wrong.reshape(-1)[top] * 1.01f;
  EXPECT_FALSE(
      gradient_attention_reference(ContextOf(k, inputs, {g}, f32, wrong, w, false)).has_value());
  // An element NaN on both sides (session 40's G5: f32 overflow where the
  // float64 reference is finite) is not part of the divergence: it no longer
  // vetoes the test on the others; the 1% element still fails it.
  at::Tensor nan_a = f32.clone(at::MemoryFormat::Contiguous);
  at::Tensor nan_b = other.clone(at::MemoryFormat::Contiguous);
  at::Tensor nan_wrong = wrong.clone(at::MemoryFormat::Contiguous);
  const int64_t low = w.reshape(-1).abs().argmin().item<int64_t>();
  ASSERT_NE(low, top);
  nan_a.reshape(-1)[low] = NAN;
  nan_b.reshape(-1)[low] = NAN;
  nan_wrong.reshape(-1)[low] = NAN;
  EXPECT_TRUE(
      gradient_attention_reference(ContextOf(k, inputs, {g}, nan_a, nan_b, w, false)).has_value());
  EXPECT_FALSE(gradient_attention_reference(ContextOf(k, inputs, {g}, nan_a, nan_wrong, w, false))
                   .has_value());
}

// Node 0's backward step inside a first-order statement (`statement`:
// the gradient of node 0's `result` with respect to `wrt`, its cotangent the
// input `cotangent`), as the oracle builds it for a later statement that
// differentiates again with the input `incoming` as its cotangent.
struct InsideStep {
  ops::TypeEnv types;
  graph::Node step;
  std::map<std::string, at::Tensor> inputs;
  std::vector<at::Tensor> incoming;
  // The step's gradient for `wrt` on `target`, from `in` (default: inputs).
  at::Tensor Run(exec::Target target, const std::map<std::string, at::Tensor>* in = nullptr) const {
    exec::VjpResult r = exec::RunNodeVjp(step, in ? *in : inputs, incoming, types, target);
    EXPECT_FALSE(r.result.error);
    return r.result.outputs.at(0);
  }
  // Its f32 gradient for `wrt` judged: side A gave `a`, side B `b`, each
  // against `witness` (the float64 run). The context refers to this step.
  GradientContext Context(const Policy& policy, const Divergence& d, const std::string& wrt,
                          const at::Tensor& a, const at::Tensor& b,
                          const at::Tensor& witness) const {
    return GradientContext{step, types, policy, d, 0, wrt, graph::DType::kF32, false,
                           {inputs, incoming, a, witness}, {inputs, incoming, b, witness}};
  }
};

InsideStep StepInside(const graph::Program& p, const std::string& result,
                      const std::string& statement, const std::string& wrt,
                      const std::string& cotangent, const std::string& incoming) {
  InsideStep s;
  s.types = MustInfer(p);
  const std::string w_name = graph::FirstOrderName(result, statement);
  const std::string out_name = graph::FirstOrderName(wrt, statement) + ".0";
  s.types[w_name] = s.types.at(result);
  s.types[out_name] = s.types.at(wrt);
  s.step = exec::MakeVjpNode(p.nodes[0], {w_name}, {wrt}, {out_name});
  const exec::RunResult built = exec::Run(p, s.types, exec::Target::kCpu);
  for (const std::string& name : p.nodes[0].Uses()) s.inputs[name] = built.inputs.at(name);
  s.inputs[w_name] = built.inputs.at(cotangent);
  s.incoming = {built.inputs.at(incoming)};
  return s;
}

// Session 41's MulBackward1: an f32 double backward of the math path whose
// logits reach 233, judged expected (docs/judgments/session41). CUDA's
// rounding of the logits' dot products differed from the CPU's run, whose
// one sample of the math path's deviation (3.3e8 at a 2.7e15 element) had
// set the test's atol; the CPU's own math path with the head dimension's
// columns in another order (the same logits) is as far off as CUDA was, and
// passes now. An element 1% off still fails.
TEST(GradientRules, AttentionDoubleBackwardWithinTheMathPathsOtherSummationOrdersIsExpected) {
  const graph::Program p = MustParse(testing::ReadTextFile(
      std::string(DIVFUZZ_SOURCE_DIR) +
      "/docs/judgments/session41/programs/MulBackward1-f32-tolerance-04b58e2e.dfz"));
  // Node 1 differentiates node 0 (the attention) with respect to %v: the
  // step node 2 differentiates again, as the oracle builds it.
  const InsideStep st = StepInside(p, "o", "gv", "v", "c", "ct3");
  const ops::TypeEnv& types = st.types;
  const graph::Node& step = st.step;
  const std::map<std::string, at::Tensor>& inputs = st.inputs;
  const std::vector<at::Tensor>& incoming = st.incoming;
  auto run = [&](const std::map<std::string, at::Tensor>& in, exec::Target t) {
    return st.Run(t, &in);  // d/dq
  };
  const at::Tensor own = run(inputs, exec::Target::kCpu);
  const at::Tensor witness = run(inputs, exec::Target::kCpuF64).to(at::kDouble);
  // The head dimension's columns of q and k permuted alike, d/dq permuted back.
  const at::Tensor perm = at::tensor({5, 1, 2, 6, 0, 3, 7, 4}, at::kLong);
  std::map<std::string, at::Tensor> permuted = inputs;
  permuted["q"] = inputs.at("q").index_select(-1, perm);
  permuted["k"] = inputs.at("k").index_select(-1, perm);
  const at::Tensor other = run(permuted, exec::Target::kCpu).index_select(-1, at::argsort(perm));
  // The other order is as far off as CUDA was (6.7e9): more than 5x the
  // run's own order's deviation plus rtol, which had vetoed the test.
  const double own_dev = (own.to(at::kDouble) - witness).abs().max().item<double>();
  const double other_dev = (other.to(at::kDouble) - witness).abs().max().item<double>();
  EXPECT_GT(other_dev, 5 * own_dev + 1.3e-6 * witness.abs().max().item<double>());
  Divergence d;
  d.cls = DivergenceClass::kTolerance;
  const Policy policy = DefaultPolicy();
  auto context = [&](const at::Tensor& b) {
    return GradientContext{step, types, policy, d, 0, "q", graph::DType::kF32, false,
                           {inputs, incoming, own, witness}, {inputs, incoming, b, witness}};
  };
  std::optional<RuleMatch> m = gradient_attention_reference(context(other));
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->reason.find("double backward"), std::string::npos) << m->reason;
  at::Tensor wrong = other.clone(at::MemoryFormat::Contiguous);
  const int64_t top = witness.reshape(-1).abs().argmax().item<int64_t>();
  wrong.reshape(-1)[top] = wrong.reshape(-1)[top] * 1.01f;
  EXPECT_FALSE(gradient_attention_reference(context(wrong)).has_value());
}

// Session 42's PowBackward0 (judged expected): pow(x, 1.79)'s backward forms
// x.pow(exp - 1) with 0.79 rounded to float32 on CUDA and on the CPU's
// vectorized path (64 elements), 18 ulps from the exact gradient at
// x = 0x1.fffffep+126 (the exponent's rounding times ln x = 88). The float64
// backward with the exponent one float32 ulp off holds it; 0.01% more does not.
TEST(GradientRules, APowBackwardThatRoundsItsDerivedExponentIsExpected) {
  Case k = CaseOf(R"(divfuzz v1
input %x: f32[1] = fill(1.0)
%y = aten::pow.Tensor_Scalar(%x, 1.79)
output %y
)", DivergenceClass::kTolerance, 0);
  const float big = std::ldexp(0x1.fffffep0f, 126);
  auto pow_grad = [&](int64_t n) {
    return GradOf([](const at::Tensor& t) { return at::pow(t, 1.79); }, at::full({n}, big),
                  at::ones({n}), at::kFloat)[0].reshape({1});
  };
  const at::Tensor scalar_path = pow_grad(1), vector_path = pow_grad(64);
  const at::Tensor x = at::full({1}, static_cast<double>(big), at::kDouble);
  const at::Tensor witness = GradOf([](const at::Tensor& t) { return at::pow(t, 1.79); }, x,
                                    at::ones({1}, at::kDouble));
  // The two CPU paths part by the exponent's rounding (18 ulps).
  ASSERT_GT(std::abs(vector_path.item<double>() - scalar_path.item<double>()),
            10 * std::abs(scalar_path.item<double>()) * 1.2e-7);
  const std::map<std::string, at::Tensor> inputs{{"x", x}};
  const at::Tensor g = at::ones({1});
  std::optional<RuleMatch> m = gradient_scalar_rounding(
      ContextOf(k, inputs, {g}, scalar_path, vector_path, witness, true));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_scalar_rounding");
  EXPECT_FALSE(gradient_scalar_rounding(ContextOf(k, inputs, {g}, scalar_path,
                                                  vector_path * 1.0001f, witness, true))
                   .has_value());
}

// Session 42's i1e double backward (judged expected): the formula
// i0e(x) - r·(sgn x + 1/x), differentiated again, cancels terms of 74 to 3.14
// at x = -0.0215, and the CPU's float32 run is 114 ulps from the float64
// one. The float64 backward with every intermediate moved by eps spreads as
// far; a side 50x further off is not within it.
TEST(GradientRules, AFormulaThatCancelsItsRoundedIntermediatesIsExpected) {
  const graph::Program p = MustParse(R"(divfuzz v1
input %u: f32[2] = values(-0x1.610cc4p-6, 0x1.7b8a7ap+2)
input %ct0: f32[2] = fill(1.0)
input %ct3: f32[2] = values(-3.2695, 1522.7)
%r = aten::special_i1e(%u)
%g3 = autograd::grad(%r, [%u], grad_outputs=%ct0)
%g7 = autograd::grad([%g3], [%u], grad_outputs=[%ct3])
output %g7
)");
  const InsideStep st = StepInside(p, "r", "g3", "u", "ct0", "ct3");
  const at::Tensor cpu = st.Run(exec::Target::kCpu);
  const at::Tensor witness = st.Run(exec::Target::kCpuF64).to(at::kDouble);
  // The CPU's float32 run is off by more than f32's tolerance at element 0.
  const double off = std::abs(cpu[0].item<double>() - witness[0].item<double>());
  ASSERT_GT(off, 1e-5 + 1.3e-6 * std::abs(witness[0].item<double>()));
  Divergence d;
  d.cls = DivergenceClass::kTolerance;
  d.op = "MulBackward0";
  const Policy policy = DefaultPolicy();
  auto context = [&](const at::Tensor& a) {
    return st.Context(policy, d, "u", a, witness.to(at::kFloat), witness);
  };
  std::optional<RuleMatch> m = gradient_formula_rounding(context(cpu));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_formula_rounding");
  const at::Tensor far = (witness + (cpu.to(at::kDouble) - witness) * 50).to(at::kFloat);
  EXPECT_FALSE(gradient_formula_rounding(context(far)).has_value());
}

// Session 43's SubBackward0 (7d9a4e69, judged expected): logcumsumexp over a
// dim of size 1 is the identity, so its double backward is exactly 0, a
// self path and a result path of up to ±1.5e19 cancelling; the CPU's float32
// run leaves 2e13. No digit of an exact 0 is kept, but float64 keeps none
// either (its own run leaves 2048): the side is judged against its spread
// (7e14 there, 1/30 of it off). A side 500x further off is not within it.
TEST(GradientRules, AnExactZeroThatFloat64CannotResolveEitherIsJudgedByTheSpread) {
  const graph::Program p = MustParse(testing::ReadTextFile(
      std::string(DIVFUZZ_SOURCE_DIR) +
      "/docs/judgments/session43/programs/SubBackward0-f32-tolerance-7d9a4e69.dfz"));
  const InsideStep st = StepInside(p, "c", "g0", "x", "ct8", "ct7");
  const at::Tensor cpu = st.Run(exec::Target::kCpu);
  const at::Tensor witness = st.Run(exec::Target::kCpuF64).to(at::kDouble);
  // The CPU's float32 run is off by more than f32's tolerance somewhere.
  const double off = (cpu.to(at::kDouble) - witness).abs().max().item<double>();
  ASSERT_GT(off, 1e6) << cpu << witness;
  Divergence d;
  d.cls = DivergenceClass::kTolerance;
  d.op = "SubBackward0";
  const Policy policy = DefaultPolicy();
  auto context = [&](const at::Tensor& a) {
    return st.Context(policy, d, "x", a, witness.to(at::kFloat), witness);
  };
  std::optional<RuleMatch> m = gradient_formula_rounding(context(cpu));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_formula_rounding");
  const at::Tensor far = (witness + (cpu.to(at::kDouble) - witness) * 500).to(at::kFloat);
  EXPECT_FALSE(gradient_formula_rounding(context(far)).has_value());
}

// Session 46's SubBackward0 (0496c97a, judged expected): logcumsumexp's
// double backward over rows ending in FLT_MAX. The formula's exponents
// log|g| - result hold -FLT_MAX exactly in float32 (log|g| is absorbed), and
// + self cancels them to 0; moved by eps they became ±4e31 and exp of that
// inf, so the spread bounded nothing and a CPU 4e-6 off (within a spread of
// 21.6 at the element) was a bug. Values the dtype holds exactly are not
// moved. A side 100x further off is not within the spread.
TEST(GradientRules, AFormulaIntermediateTheDtypeHoldsExactlyIsNotMoved) {
  const graph::Program original = MustParse(testing::ReadTextFile(
      std::string(DIVFUZZ_SOURCE_DIR) +
      "/docs/judgments/session46/programs/SubBackward0-f32-tolerance-0496c97a.dfz"));
  const exec::RunResult built = exec::Run(original, MustInfer(original), exec::Target::kCpu);
  // The step differentiates logcumsumexp's backward; its cotangent is what
  // log_softmax's backward sent it.
  const graph::Program p = MustParse(R"(divfuzz v1
input %x0: f32[17,1,17] = special(seed=2760667592)
input %w: f32[17,1,17] = fill(0.0)
input %ct1: f32[17,1,17] = dynamic(seed=2790873262, decades=16.0)
%v1 = aten::logcumsumexp(%x0, 2)
%g0 = autograd::grad(%v1, [%x0], grad_outputs=%w)
%g1 = autograd::grad(%g0, [%x0], grad_outputs=%ct1)
output %g1
)");
  InsideStep st = StepInside(p, "v1", "g0", "x0", "w", "ct1");
  {
    at::NoGradGuard no_grad;
    const at::Tensor v2 = at::log_softmax(at::logcumsumexp(built.inputs.at("x0"), 2), -1);
    st.inputs[graph::FirstOrderName("v1", "g0")] =
        at::_log_softmax_backward_data(built.inputs.at("ct0"), v2, -1, at::kFloat);
  }
  const at::Tensor cpu = st.Run(exec::Target::kCpu);
  const at::Tensor witness = st.Run(exec::Target::kCpuF64).to(at::kDouble);
  const at::Tensor finite = at::isfinite(witness) & at::isfinite(cpu);
  const at::Tensor excess =
      at::where(finite, (cpu.to(at::kDouble) - witness).abs() - 1.3e-6 * witness.abs(),
                at::zeros_like(witness));
  ASSERT_GT(excess.max().item<double>(), 1e-5);
  Divergence d;
  d.cls = DivergenceClass::kTolerance;
  d.op = "SubBackward0";
  const Policy policy = DefaultPolicy();
  auto context = [&](const at::Tensor& a) {
    return st.Context(policy, d, "x0", a, witness.to(at::kFloat), witness);
  };
  std::optional<RuleMatch> m = gradient_formula_rounding(context(cpu));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_formula_rounding");
  const at::Tensor far =
      at::where(finite, witness + (cpu.to(at::kDouble) - witness) * 100, witness).to(at::kFloat);
  EXPECT_FALSE(gradient_formula_rounding(context(far)).has_value());
}

// Session 44's PolygammaBackward0 f16 (e2a4c044, judged expected): the
// formula grad · polygamma(2, x) holds polygamma(2, 1602) = -3.9e-7 on f16's
// subnormal grid of 2^-24, 6.5 steps: the CPU's -6 steps and a correct
// rounding's -7 (CUDA's) are 8% and 7% from the exact gradient, times -10000.
// A side 5 steps off is not rounding.
TEST(GradientRules, AFormulaIntermediateOnTheSubnormalGridIsRoundedThere) {
  Case k = CaseOf(R"(divfuzz v1
input %x: f16[1] = values(1602.0)
%y = aten::special_polygamma(1, %x)
output %y
)", DivergenceClass::kTolerance, 0);
  k.d.op = "PolygammaBackward0";
  auto polygamma1 = [](const at::Tensor& t) { return at::special_polygamma(1, t); };
  const at::Tensor x = at::full({1}, 1602.0, at::kDouble);
  const at::Tensor v = at::full({1}, -10000.0, at::kDouble);
  const at::Tensor cpu = GradOf(polygamma1, x, v, at::kHalf);
  const at::Tensor rounded = (at::special_polygamma(2, x).to(at::kHalf) * -10000).to(at::kHalf);
  const at::Tensor witness = GradOf(polygamma1, x, v);
  ASSERT_GT(std::abs(cpu.item<double>() - witness.item<double>()), 0.05 * witness.item<double>());
  const std::map<std::string, at::Tensor> inputs{{"x", x}};
  const std::vector<at::Tensor> incoming{v.to(at::kHalf)};
  std::optional<RuleMatch> m = gradient_formula_rounding(
      ContextOf(k, inputs, incoming, cpu, rounded, witness, true, graph::DType::kF16));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_formula_rounding");
  const at::Tensor five_off = (witness - 5 * std::ldexp(1.0, -24) * -10000).to(at::kHalf);
  EXPECT_FALSE(gradient_formula_rounding(ContextOf(k, inputs, incoming, five_off, rounded,
                                                   witness, true, graph::DType::kF16))
                   .has_value());
}

// Session 44's LogcumsumexpBackward0 f32 (af2c70f2, judged real on both
// sides): at element 4 each side is 45 ulps off, within the formula's
// rounding; at element 9 (x = 2^24 + 4) the exact 1.9 is 6.389 on the CPU
// and 0 on CUDA. A side is excused by where it is furthest off, not by its
// first element off: CUDA (emulated: the float64 gradient with its two
// values) is not, and without its element 9 it is.
TEST(GradientRules, ASideIsExcusedByItsWorstElement) {
  const graph::Program p = MustParse(testing::ReadTextFile(
      std::string(DIVFUZZ_SOURCE_DIR) +
      "/docs/judgments/session44/programs/LogcumsumexpBackward0-f32-tolerance-af2c70f2.dfz"));
  const ops::TypeEnv types = MustInfer(p);
  const exec::RunResult built = exec::Run(p, types, exec::Target::kCpu);
  const at::Tensor x = built.inputs.at("x").to(at::kDouble);
  const at::Tensor v = built.inputs.at("ct0");
  auto lcse = [](const at::Tensor& t) { return at::logcumsumexp(t, -2); };
  const at::Tensor cpu = GradOf(lcse, x, v, at::kFloat);
  const at::Tensor witness = GradOf(lcse, x, v.to(at::kDouble));
  ASSERT_NEAR(witness.reshape(-1)[9].item<double>(), 1.9, 1e-6);
  ASSERT_GT(std::abs(cpu.reshape(-1)[9].item<double>() - 1.9), 1.0);
  at::Tensor cuda = witness.to(at::kFloat).contiguous();
  cuda.reshape(-1)[4] = 2.8499958515167236;
  at::Tensor cuda_right_at_9 = cuda.clone();
  cuda.reshape(-1)[9] = 0.0;
  Divergence d;
  d.cls = DivergenceClass::kTolerance;
  d.op = "LogcumsumexpBackward0";
  d.element = 4;
  const Policy policy = DefaultPolicy();
  auto context = [&](const at::Tensor& b) {
    return GradientContext{p.nodes[0], types, policy, d, 0, "x", graph::DType::kF32, false,
                           {{{"x", x}}, {v}, cpu, witness}, {{{"x", x}}, {v}, b, witness},
                           static_cast<uint64_t>(ops::FindOp("aten::logcumsumexp")->hints)};
  };
  const GradientContext c = context(cuda);
  EXPECT_FALSE(SideExcused(c, c.b, policy));
  const GradientContext right = context(cuda_right_at_9);
  EXPECT_TRUE(SideExcused(right, right.b, policy));
}

TEST(GradientRules, AKinkJumpsASteepSmoothGradientDoesNot) {
  // pow(x, 30) at 2: its gradient 30 x^29 moves by 29 * 4 eps relative within
  // 4 eps of x (beyond f32's rtol), but 64 times less within 1/16 eps: a
  // slope, not a kink. 5 ulps apart is no subgradient choice.
  Case k{MustParse(R"(divfuzz v1
input %x: f32[2] = values(2.0, 1.5)
%y = aten::pow.Tensor_Scalar(%x, 30.0)
output %y
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kTolerance;
  const at::Tensor x = at::tensor({2.0, 1.5}, at::kDouble);
  const at::Tensor w = 30 * x.pow(29);
  GradientContext steep = ContextOf(k, {{"x", x}}, {at::ones({2})}, (w * (1 + 5e-6)).to(at::kFloat),
                                    w.to(at::kFloat), w, true);
  EXPECT_FALSE(nondifferentiable_point(steep).has_value());
  // relu at 0: the one-sided gradients 0 and 1 at any distance.
  Case r{MustParse(R"(divfuzz v1
input %x: f32[2] = values(0.0, 1.5)
%y = aten::relu(%x)
output %y
)"), {}, {}};
  r.types = MustInfer(r.program);
  r.d.cls = DivergenceClass::kTolerance;
  const at::Tensor x0 = at::tensor({0.0, 1.5}, at::kDouble);
  const at::Tensor w0 = at::tensor({0.0, 1.0}, at::kDouble);
  GradientContext kink = ContextOf(r, {{"x", x0}}, {at::ones({2})}, at::tensor({1.0f, 1.0f}),
                                   at::tensor({0.0f, 1.0f}), w0, true);
  std::optional<RuleMatch> m = nondifferentiable_point(kink);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "nondifferentiable_point");
}

TEST(GradientRules, ALayerNormBackwardReadsItsRoundedStatistics) {
  // The gradient of sum(layer_norm(x)) is exactly 0; in bf16 the CPU's saved
  // statistics (bf16, pytorch#109188) leave a few eps of rstd |g| on a side.
  Case k{MustParse(R"(divfuzz v1
input %x: bf16[1,2] = values(0.3, 1.7)
%s = aten::layer_norm(%x, [2])
output %s
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kTolerance;
  const at::Tensor x = at::tensor({0.3, 1.7}, at::kDouble).reshape({1, 2});
  const at::Tensor g = at::ones({1, 2}, at::kFloat);
  const at::Tensor zero = at::zeros({1, 2}, at::kDouble);
  auto ctx = [&](const at::Tensor& a) {
    GradientContext c = ContextOf(k, {{"x", x}}, {g}, a.to(at::kBFloat16),
                                  zero.to(at::kBFloat16), zero, false);
    c.dtype = graph::DType::kBF16;
    c.hints = ops::FindOp("aten::layer_norm")->hints;
    return c;
  };
  std::optional<RuleMatch> m =
      gradient_normalization_statistics(ctx(at::tensor({-0.00146484375, 0.0}).reshape({1, 2})));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_normalization_statistics");
  // rstd |g| itself (1.43 here) is another function's gradient, not rounding.
  EXPECT_FALSE(gradient_normalization_statistics(ctx(at::tensor({-1.43, 1.43}).reshape({1, 2})))
                   .has_value());
}

// Session 39's G4 batch_norm f32: inputs with mean 1e4 and deviation 0.9.
// One ulp of the mean (0.00098) moves xhat by ulp·rstd and the gradient with
// it; the bound scales with max|x|·rstd. Ten percent of the gradient does
// not pass.
TEST(GradientRules, ANormalizationsMeanFarFromZeroRoundsAtItsMagnitude) {
  Case k{MustParse(R"(divfuzz v1
input %x: f32[1,8] = fill(1.0)
%s = aten::layer_norm(%x, [8])
output %s
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kTolerance;
  const at::Tensor x =
      (at::tensor({-1.2, -0.7, -0.2, 0.1, 0.3, 0.6, 0.9, 1.4}, at::kDouble) + 1e4)
          .to(at::kFloat).to(at::kDouble).reshape({1, 8});
  const at::Tensor g =
      at::tensor({0.5, -1.0, 0.25, 2.0, -0.75, 1.5, -0.5, 1.0}, at::kFloat).reshape({1, 8});
  // The backward with the mean rounded one f32 ulp off, in float64.
  auto backward = [&](double shift) {
    const at::Tensor mu = x.mean(-1, true) + shift;
    const at::Tensor rstd = ((x - x.mean(-1, true)).pow(2).mean(-1, true) + 1e-5).rsqrt();
    const at::Tensor xhat = (x - mu) * rstd;
    const at::Tensor gd = g.to(at::kDouble);
    return rstd * (gd - gd.mean(-1, true) - xhat * (gd * xhat).mean(-1, true));
  };
  const at::Tensor exact = backward(0), shifted = backward(std::ldexp(1.0, -10));
  auto ctx = [&](const at::Tensor& a) {
    GradientContext c = ContextOf(k, {{"x", x}}, {g}, a.to(at::kFloat), exact.to(at::kFloat),
                                  exact, false);
    c.hints = ops::FindOp("aten::layer_norm")->hints;
    return c;
  };
  EXPECT_TRUE(gradient_normalization_statistics(ctx(shifted)).has_value());
  EXPECT_FALSE(gradient_normalization_statistics(ctx(exact * 1.1)).has_value());
}

// Session 40's G5 batch_norm f32 (2,167 hits): the weight's gradient,
// sum of g·xhat over a channel of 48 values near 1e4, is exactly 0; the CPU
// gave 5.4e-6 and CUDA -2.6e-5 (a mean 1.7 ulps off; pytorch#82493, closed
// as expected). The input gradient's bound (rstd outside, no sum) was 2.9e-8
// there. A weight gradient off by 0.05 is not the statistics' rounding.
TEST(GradientRules, ANormalizationsWeightGradientSumsTheStatisticsRounding) {
  Case k{MustParse(R"(divfuzz v1
input %m: f32[3,1,4,4] = fill(1.0)
input %mw: f32[1] = fill(0.0)
input %mb: f32[1] = fill(0.0)
%ym = aten::batch_norm(%m, %mw, %mb, None, None, True, 0.0, 1.0, True)
output %ym
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kTolerance;
  at::Tensor x = (at::rand({3, 1, 4, 4}, at::detail::createCPUGenerator(7), at::kDouble) * 8 +
                  9996).to(at::kFloat).to(at::kDouble);
  x[0][0][0][0] = 0.0;
  x[0][0][0][1] = 1.0;
  const at::Tensor g = at::ones({3, 1, 4, 4}, at::kFloat);
  static const Policy policy = DefaultPolicy();
  auto ctx = [&](double a, double b) {
    const std::map<std::string, at::Tensor> in{
        {"m", x}, {"mw", at::zeros({1}, at::kDouble)}, {"mb", at::zeros({1}, at::kDouble)}};
    const at::Tensor zero = at::zeros({1}, at::kDouble);
    GradientContext c{k.program.nodes[0], k.types, policy, k.d, 1, "mw", graph::DType::kF32,
                      false, {in, {g}, at::tensor({a}).to(at::kFloat), zero},
                      {in, {g}, at::tensor({b}).to(at::kFloat), zero}};
    c.hints = ops::FindOp("aten::batch_norm")->hints;
    return c;
  };
  std::optional<RuleMatch> m = gradient_normalization_statistics(ctx(5.43495616511791e-06,
                                                                     -2.5895964427036233e-05));
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->reason.find("mw's gradient sums"), std::string::npos) << m->reason;
  EXPECT_FALSE(gradient_normalization_statistics(ctx(5.4e-6, 0.05)).has_value());
}

TEST(GradientRules, ASortBreaksTiesEitherWayAndBothRoutingsAreSubgradients) {
  // Run H's SortBackward0: msort of equal values routes the incoming
  // gradient in index order on the CPU and in reverse on CUDA; both are valid
  // ("If multiple values are possible, pick one arbitrarily").
  Case k{MustParse(R"(divfuzz v1
input %x: f32[3] = fill(0.0)
%y = aten::msort(%x)
output %y
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kTolerance;
  const at::Tensor x = at::zeros({3}, at::kDouble);
  const at::Tensor v = at::tensor({0.1f, 0.2f, 0.3f});
  const at::Tensor w = v.to(at::kDouble);
  GradientContext ties = ContextOf(k, {{"x", x}}, {v}, v, at::tensor({0.3f, 0.2f, 0.1f}), w, false);
  std::optional<RuleMatch> m = nondifferentiable_point(ties);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "nondifferentiable_point");
  // Twice an incoming gradient is no routing of it.
  GradientContext wrong =
      ContextOf(k, {{"x", x}}, {v}, v, at::tensor({0.6f, 0.2f, 0.1f}), w, false);
  EXPECT_FALSE(nondifferentiable_point(wrong).has_value());
}

TEST(GradientRules, ASelectionRoutesGradientsAmongTiesInAnyOrderButOnlyAmongTies) {
  // Session 33's SortBackward0: msort of four zeros; CUDA broke the tie as
  // [1, 0, 2, 3], an order none of the hull's six moves takes. Any routing
  // among tied inputs is a subgradient (ops::kSelectsInputs).
  const Case k = CaseOf(R"(divfuzz v1
input %x: f32[4] = values(0.0, 0.0, 0.0, 0.0)
%y = aten::msort(%x)
output %y
)", DivergenceClass::kTolerance);
  auto ctx = [&](const at::Tensor& x, const at::Tensor& a, const at::Tensor& b) {
    const at::Tensor v = at::tensor({0.1f, -0.7f, 0.3f, 1.9f});
    GradientContext c = ContextOf(k, {{"x", x}}, {v}, a, b, a.to(at::kDouble), false);
    c.hints = ops::FindOp("aten::msort")->hints;
    return c;
  };
  const at::Tensor zeros = at::zeros({4}, at::kDouble);
  std::optional<RuleMatch> m = nondifferentiable_point(
      ctx(zeros, at::tensor({0.1f, -0.7f, 0.3f, 1.9f}), at::tensor({-0.7f, 0.1f, 0.3f, 1.9f})));
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->reason.find("tied"), std::string::npos) << m->reason;
  // Input 3 equals no other: a gradient moved there is a wrong index, not a tie.
  const at::Tensor three_tied = at::tensor({0.0, 0.0, 0.0, 5.0}, at::kDouble);
  EXPECT_FALSE(nondifferentiable_point(ctx(three_tied, at::tensor({0.1f, -0.7f, 0.3f, 1.9f}),
                                           at::tensor({1.9f, -0.7f, 0.3f, 0.1f})))
                   .has_value());
  // A value no routing gives.
  EXPECT_FALSE(nondifferentiable_point(ctx(zeros, at::tensor({0.1f, -0.7f, 0.3f, 1.9f}),
                                           at::tensor({-0.7f, 0.1f, 0.3f, 2.9f})))
                   .has_value());
}

// Session 38's msort of a softmax in f16: 13 probabilities tied on one side
// and one ulp apart on the other (each device's softmax rounds its own way).
// A tie either side saw is a valid routing; inputs past the tolerance are not.
// Session 39's G3 SortBackward0 inside nanquantile: an all-zero 3x3 input is
// a nine-way tie; the CPU sent the gradient to element 0, CUDA to element 7.
TEST(GradientRules, AQuantileRoutesItsGradientAmongTiedInputs) {
  const Case k = CaseOf(R"(divfuzz v1
input %x: f32[3,3] = fill(0.0)
%y = aten::nanquantile.scalar(%x, 0.5)
output %y
)", DivergenceClass::kTolerance);
  auto ctx = [&](const at::Tensor& x, const at::Tensor& a, const at::Tensor& b) {
    GradientContext c = ContextOf(k, {{"x", x}}, {at::ones({})}, a, b, a.to(at::kDouble), false);
    c.hints = ops::FindOp("aten::nanquantile.scalar")->hints;
    return c;
  };
  at::Tensor cpu = at::zeros({3, 3}), cuda = at::zeros({3, 3});
  cpu.reshape(-1)[0] = 1.0f;
  cuda.reshape(-1)[7] = 1.0f;
  ASSERT_TRUE(nondifferentiable_point(ctx(at::zeros({3, 3}, at::kDouble), cpu, cuda)).has_value());
  // Element 7 not tied with 0: a wrong position.
  at::Tensor apart = at::zeros({3, 3}, at::kDouble);
  apart.reshape(-1)[7] = 2.0;
  EXPECT_FALSE(nondifferentiable_point(ctx(apart, cpu, cuda)).has_value());
}

TEST(GradientRules, ATieOnEitherSideOfInputsWithinToleranceIsARoutingChoice) {
  const Case k = CaseOf(R"(divfuzz v1
input %x: f16[4] = values(0.0739, 0.0739, 0.0739, 0.5)
%y = aten::msort(%x)
output %y
)", DivergenceClass::kTolerance);
  const at::Tensor tied = at::tensor({0.0739, 0.0739, 0.0739, 0.5}).to(at::kHalf).to(at::kDouble);
  at::Tensor near = tied.clone();
  near[1] = tied[1] + std::ldexp(1.0, -14);  // one f16 ulp up (0.0739 is in [2^-4, 2^-3))
  near = near.to(at::kHalf).to(at::kDouble);
  ASSERT_FALSE(at::equal(tied, near));
  const at::Tensor v = at::tensor({0.1f, -0.7f, 0.3f, 1.9f}).to(at::kHalf);
  auto ctx = [&](const at::Tensor& xb, const at::Tensor& b) {
    const at::Tensor a = v;
    GradientContext c = ContextOf(k, {{"x", tied}}, {v}, a, b, a.to(at::kDouble), false,
                                  graph::DType::kF16);
    c.b.inputs = {{"x", xb}};
    c.hints = ops::FindOp("aten::msort")->hints;
    return c;
  };
  const at::Tensor routed = at::tensor({-0.7f, 0.1f, 0.3f, 1.9f}).to(at::kHalf);
  EXPECT_TRUE(nondifferentiable_point(ctx(near, routed)).has_value());
  // The other side's input 3 far from side A's: no tie explains a difference.
  at::Tensor far = tied.clone();
  far[3] = 0.9;
  EXPECT_FALSE(nondifferentiable_point(ctx(far, routed)).has_value());
}


// Session 43's SortBackward0 (msort of x / -1.5, f32, judged expected): CUDA
// multiplies by the reciprocal, which ties elements 0 and 1 there only; the
// CPU divides, which ties elements 2 and 3 there only. Each side routes among
// its own ties; neither side's ties alone explain both differences.
TEST(GradientRules, TiesThatEachSideSawAloneTogetherAreARoutingChoice) {
  const Case k = CaseOf(R"(divfuzz v1
input %x: f32[5] = values(1.0, 1.0, 2.0, 2.0, 3.0)
%y = aten::msort(%x)
output %y
)", DivergenceClass::kTolerance);
  const at::Tensor on_cpu = at::tensor({1.0, 1.0000001, 2.0, 2.0, 3.0}, at::kDouble);
  const at::Tensor on_cuda = at::tensor({1.0, 1.0, 2.0, 2.0000002, 3.0}, at::kDouble);
  auto ctx = [&](const at::Tensor& xb, const at::Tensor& a, const at::Tensor& b) {
    GradientContext c = ContextOf(k, {{"x", on_cpu}}, {at::tensor({0.1f, -0.7f, 0.3f, 1.9f, 5.f})},
                                  a, b, a.to(at::kDouble), false);
    c.b.inputs = {{"x", xb}};
    c.hints = ops::FindOp("aten::msort")->hints;
    return c;
  };
  const at::Tensor a = at::tensor({0.1f, -0.7f, 0.3f, 1.9f, 5.f});
  // CUDA swapped 0 and 1 (tied on CUDA only) and 2 and 3 (tied on the CPU only).
  const at::Tensor swapped = at::tensor({-0.7f, 0.1f, 1.9f, 0.3f, 5.f});
  std::optional<RuleMatch> m = nondifferentiable_point(ctx(on_cuda, a, swapped));
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->reason.find("either side"), std::string::npos) << m->reason;
  // A gradient sent to element 4, tied with nothing on either side, is no choice.
  EXPECT_FALSE(
      nondifferentiable_point(ctx(on_cuda, a, at::tensor({-0.7f, 0.1f, 1.9f, 5.f, 0.3f})))
          .has_value());
}

// Session 43's CholeskySolveBackward0 (cholesky_solve(X, X), c64, judged
// expected): the rule read the matrix as the op's second distinct value,
// which a node reading X twice does not have, and declined. The matrix is
// the argument at the catalogue's position, L L^H for a Cholesky factor.
TEST(GradientRules, ConditioningReadsTheMatrixByArgumentPositionEvenWhenItIsReadTwice) {
  const Case k = CaseOf(R"(divfuzz v1
input %x: c64[3,3] = normal(seed=4)
%y = aten::cholesky_solve(%x, %x)
output %y
)", DivergenceClass::kTolerance);
  const ops::OpSpec* spec = ops::FindOp("aten::cholesky_solve");
  ASSERT_NE(spec, nullptr);
  const at::Tensor x = at::randn({3, 3}, at::kComplexDouble);
  const at::Tensor m = ConditionedMatrixOf(k.program.nodes[0], *spec, {{"x", x}});
  ASSERT_TRUE(m.defined());
  const at::Tensor l = at::tril(x);
  EXPECT_TRUE(at::allclose(m, at::matmul(l, l.mH())));
  // The gradient rule now applies: the sides differ within its bound.
  const at::Tensor w = at::randn({3, 3}, at::kComplexDouble);
  const at::Tensor wa = (w * (1 + 1e-6)).to(at::kComplexFloat);
  GradientContext c = ContextOf(k, {{"x", x}}, {at::ones({3, 3}, at::kComplexFloat)}, wa,
                                w.to(at::kComplexFloat), w, false, graph::DType::kC64);
  c.hints = spec->hints;
  std::optional<RuleMatch> r = gradient_conditioning(c);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->reason.find("cond"), std::string::npos) << r->reason;
}

// Session 43's bf16 rms_norm over 7 elements (judged expected): CUDA's fused
// backward forms 7·dy = 7 × 2.0e38 in float32, inf, where the exact gradient
// is 1.7e38 and the CPU's composite gives it. sum|v| alone (2.0e38) fits.
TEST(GradientRules, AFusedNormBackwardsNTimesDyPastFloatIsExtremal) {
  Case k = CaseOf(R"(divfuzz v1
input %l: bf16[2,1,7] = fill(1.0)
%y = aten::rms_norm(%l, [7])
output %y
)", DivergenceClass::kClassSplit, 13);
  const at::Tensor x = at::ones({2, 1, 7}, at::kDouble);
  at::Tensor v = at::zeros({2, 1, 7});
  v.reshape(-1)[13] = 0x1.2ced32p+127f;
  const at::Tensor exact = at::zeros({2, 1, 7}, at::kDouble).index_put_(
      {at::tensor({1}), at::tensor({0}), at::tensor({6})}, at::tensor({1.70901e38}, at::kDouble));
  GradientContext c = ContextOf(k, {{"l", x}}, {v}, exact.to(at::kBFloat16),
                                at::where(exact > 0, INFINITY, 0.0).to(at::kBFloat16), exact, false,
                                graph::DType::kBF16);
  c.hints = ops::FindOp("aten::rms_norm")->hints;
  std::optional<RuleMatch> m = gradient_extremal_values(c);
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->reason.find("n·dy·w"), std::string::npos) << m->reason;
  // Over 1 element there is no n·dy past float32's range: a finding.
  Case one = CaseOf(R"(divfuzz v1
input %l: bf16[14,1,1] = fill(1.0)
%y = aten::rms_norm(%l, [1])
output %y
)", DivergenceClass::kClassSplit, 13);
  GradientContext c1 = ContextOf(one, {{"l", x.reshape({14, 1, 1})}}, {v.reshape({14, 1, 1})},
                                 exact.reshape({14, 1, 1}).to(at::kBFloat16),
                                 at::where(exact > 0, INFINITY, 0.0).reshape({14, 1, 1}).to(at::kBFloat16),
                                 exact.reshape({14, 1, 1}), false, graph::DType::kBF16);
  c1.hints = ops::FindOp("aten::rms_norm")->hints;
  EXPECT_FALSE(gradient_extremal_values(c1).has_value());
}



// Session 34's cosine_similarity buckets: d/dc of a composite's backward whose
// two contributions (about 7e37 each) cancel. The float32 gradient is ordinary
// rounding of those contributions; a contribution 1e-3 off is not.
TEST(GradientRules, ACompositeBackwardRoundsBetweenItsKernelsAWrongTermDoesNot) {
  Case k = CaseOf(R"(divfuzz v1
input %c: f32[10,1] = fill(5.0)
input %m: f32[8] = values(0.0, 0.0, 0.0, 0.0, 0.0, -0.35, -1.8, 66000.0)
%v = aten::cosine_similarity(%c, %m)
output %v
)", DivergenceClass::kTolerance);
  const at::Tensor c = at::full({10, 1}, 5.0, at::kDouble);
  const at::Tensor m =
      at::tensor({0.0, 0.0, 0.0, 0.0, 0.0, -0.35, -1.8, 66000.0}, at::kFloat).to(at::kDouble);
  at::Tensor v = at::zeros({10}, at::kDouble);
  v[9] = -3.4e38;
  auto cos = [&](const at::Tensor& t) {
    return at::cosine_similarity(t, m.to(t.scalar_type()), 1, 1e-8);
  };
  const at::Tensor w = GradOf(cos, c, v);
  const at::Tensor f32 = GradOf(cos, c, v.to(at::kFloat), at::kFloat);
  ASSERT_FALSE(at::equal(f32, w.to(at::kFloat)));  // the rounding the rule must explain
  GradientContext ok = ContextOf(k, {{"c", c}, {"m", m}}, {v}, f32, w.to(at::kFloat), w, false);
  std::optional<RuleMatch> r = gradient_composite_rounding(ok);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rule, "gradient_composite_rounding");
  // One of the two contributions 1e-3 off: the result moves by 1e-3 of it.
  at::Tensor wrong = f32.clone();
  wrong[9] = wrong[9] + 1e-3 * 6.8e37;
  GradientContext bad = ContextOf(k, {{"c", c}, {"m", m}}, {v}, wrong, w.to(at::kFloat), w, false);
  EXPECT_FALSE(gradient_composite_rounding(bad).has_value());
}

// Session 38's f16 batch_norm with weights of -1.7e23: the backward's terms
// (6e23) cancel to 0, and float's rounding of their sum alone passes f16's
// range, so an infinite side is within it. Here mm's x-gradient A^T g: terms
// of 6e11 cancelling to 0 in f16, where float's 2 n eps sum|terms| is 5.7e5.
TEST(GradientRules, TermsWhoseRoundingAlonePassesTheRangeExcuseAnInfiniteSide) {
  Case k{MustParse(R"(divfuzz v1
input %a: f16[2,2] = fill(3000.0)
input %x: f16[2,2] = fill(1.0)
%y = aten::mm(%a, %x)
output %y
)"), {}, {}};
  k.types = MustInfer(k.program);
  k.d.cls = DivergenceClass::kClassSplit;
  k.d.element = 0;
  const at::Tensor a = at::full({2, 2}, 3000.0, at::kDouble);
  const at::Tensor x = at::ones({2, 2}, at::kDouble);
  static const Policy policy = DefaultPolicy();  // the context holds a reference
  auto ctx = [&](double g) {
    const at::Tensor v = at::tensor({g, g, -g, -g}, at::kDouble).reshape({2, 2});
    GradientContext c{k.program.nodes[0], k.types, policy, k.d, 1, "x",
                      graph::DType::kF16, false,
                      {{{"a", a}, {"x", x}}, {v},
                       at::tensor({INFINITY, 0.0, 0.0, 0.0}).reshape({2, 2}).to(at::kHalf),
                       at::zeros({2, 2}, at::kDouble)},
                      {{{"a", a}, {"x", x}}, {v}, at::zeros({2, 2}, at::kHalf),
                       at::zeros({2, 2}, at::kDouble)}};
    return c;
  };
  std::optional<RuleMatch> m = gradient_extremal_values(ctx(1e8));
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->reason.find("rounding alone"), std::string::npos) << m->reason;
  // Terms of 6e7: float rounds their sum to within 29, far inside f16's range.
  EXPECT_FALSE(gradient_extremal_values(ctx(1e4)).has_value());
}

// Session 38's attention buckets: v constant in the keys makes the output
// constant, so q's gradient is exactly 0 and each device returns the f32
// residue of its order of the sums over the keys. The CPU's own kernel over
// other orders of the keys spans it; a gradient off by 1 does not fit.
TEST(GradientRules, AttentionResidueWithinTheCpusOrdersOfTheKeysIsExpected) {
  const Case k = CaseOf(R"(divfuzz v1
input %q: f32[1,1,6,4] = normal(seed=1)
input %k: f32[1,1,6,4] = normal(seed=2)
input %v: f32[1,1,6,4] = fill(1.0)
%o = aten::scaled_dot_product_attention(%q, %k, %v)
output %o
)", DivergenceClass::kTolerance);
  const at::Tensor q = at::randn({1, 1, 6, 4}, at::TensorOptions().dtype(at::kFloat)) * 10;
  const at::Tensor kk = at::randn({1, 1, 6, 4}, at::TensorOptions().dtype(at::kFloat)) * 10;
  const at::Tensor v = at::ones({1, 1, 6, 4}, at::kFloat);
  const at::Tensor g = at::randn({1, 1, 6, 4}, at::TensorOptions().dtype(at::kFloat));
  const at::Tensor cpu = GradOf([&](const at::Tensor& x) {
    return at::scaled_dot_product_attention(x, kk, v);
  }, q, g, at::kFloat);
  const std::map<std::string, at::Tensor> inputs = {{"q", q}, {"k", kk}, {"v", v}};
  auto ctx = [&](const at::Tensor& a) {
    GradientContext c = ContextOf(k, inputs, {g}, a, cpu, at::zeros({1, 1, 6, 4}, at::kDouble),
                                  false);
    return c;
  };
  std::optional<RuleMatch> m = gradient_attention_key_order(ctx(cpu));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->rule, "gradient_attention_key_order");
  EXPECT_FALSE(gradient_attention_key_order(ctx(cpu + 1.0f)).has_value());
}

// Session 38's G2 buckets: a planted 89 at the end of a bf16 row made the
// per-row magnitude 95 and the rule decline for the whole row; the exponent
// of an element before it is rounded at its own magnitude (about 3 here).
TEST(GradientRules, AScanCarryWeighsEachElementsOwnExponent) {
  const Case k = LogcumsumexpCase("bf16[16]", 0);
  at::Tensor x = at::linspace(-1, 1, 16, at::kDouble);
  x[15] = 89.0;
  x = x.to(at::kBFloat16).to(at::kDouble);
  const at::Tensor v = at::linspace(0.5, 1, 16, at::kDouble).to(at::kBFloat16);
  const at::Tensor w =
      GradOf([](const at::Tensor& t) { return at::logcumsumexp(t, 0); }, x, v.to(at::kDouble));
  at::Tensor off = w * 1.02;
  off[15] = w[15];
  GradientContext c = ContextOf(k, {{"x", x}}, {v}, off.to(at::kBFloat16), w.to(at::kBFloat16), w,
                                false, graph::DType::kBF16);
  c.hints = ops::FindOp("aten::logcumsumexp")->hints;
  EXPECT_TRUE(gradient_scan_carry(c).has_value());
  // At the planted element itself the exponent is rounded at about 89 twice
  // (log|v| - 89, then + 89): expm1(3 u 180) > 1, no digit is kept there.
  at::Tensor far = w.clone();
  far[15] = w[15] * 1.5;
  GradientContext d = ContextOf(k, {{"x", x}}, {v}, far.to(at::kBFloat16), w.to(at::kBFloat16), w,
                                false, graph::DType::kBF16);
  d.hints = c.hints;
  EXPECT_FALSE(gradient_scan_carry(d).has_value());
}





// Session 47's judges: the exponent PyTorch's formula forms without a shift
// is no part of the scan-carry clause. d34b0677 (f16, a 140 in a row of 0s):
// the CPU's 20.08 for the exact 19 (5.7%) and b28b94b2 (f64 at 1e15: the CPU
// 1.1% off, CUDA 12%) were judged real; float intermediates or a shift give
// the exact 19 and 4. The rule had excused them at M = |x|; it now rounds at
// log|v| + log n and judges each side by the exact backward.
TEST(GradientRules, AnUnshiftedExponentIsNoPartOfTheScanCarry) {
  {
    const Case k = LogcumsumexpCase("f16[24]", 0);
    at::Tensor x = at::zeros({24}, at::kDouble);
    x[5] = 140.0;
    const at::Tensor v = at::ones({24}, at::kHalf);
    const at::Tensor w =
        GradOf([](const at::Tensor& t) { return at::logcumsumexp(t, 0); }, x, v.to(at::kDouble));
    const at::Tensor cpu =
        GradOf([](const at::Tensor& t) { return at::logcumsumexp(t, 0); }, x, v, at::kHalf);
    ASSERT_NEAR(cpu[5].item<double>(), 20.078125, 1e-9);  // libtorch's f16 backward here
    auto ctx = [&](const at::Tensor& a, bool cuda) {
      GradientContext c = ContextOf(k, {{"x", x}}, {v}, a.to(at::kHalf), w.to(at::kHalf), w,
                                    false, graph::DType::kF16);
      c.hints = ops::FindOp("aten::logcumsumexp")->hints;
      c.a.cuda = cuda;
      return c;
    };
    EXPECT_FALSE(gradient_scan_carry(ctx(cpu, false)).has_value());
    // CUDA's f16-carried scan gives 15.64 there (judged wrong too): more
    // than 27 carry roundings at M = log 24 (5.6%).
    at::Tensor cuda = w.clone();
    cuda[5] = 15.640625;
    EXPECT_FALSE(gradient_scan_carry(ctx(cuda, true)).has_value());
    // A side within those roundings is still excused.
    at::Tensor close = w.clone();
    close[5] = w[5].item<double>() * 1.004;
    EXPECT_TRUE(gradient_scan_carry(ctx(close, false)).has_value());
    EXPECT_TRUE(gradient_scan_carry(ctx(close, true)).has_value());
    // But not CUDA's carry of the unshifted terms near 140 (more than twice
    // M): 4% is its exponent's rounding, not the carry's at M (session 49's
    // 5d8e8639, judged wrong on both sides).
    close[5] = w[5].item<double>() * 1.04;
    EXPECT_FALSE(gradient_scan_carry(ctx(close, true)).has_value());
  }
  {
    const Case k = LogcumsumexpCase("f64[4]", 0);
    const at::Tensor x = at::tensor({1e15 - 0.125, -0.0, M_PI / 4, 2 * M_PI}, at::kDouble);
    const at::Tensor v = at::ones({4}, at::kDouble);
    // Both sides' float64 backward is the formula itself: the witness shows
    // the CPU's value, as a float64 program's would.
    const at::Tensor cpu =
        GradOf([](const at::Tensor& t) { return at::logcumsumexp(t, 0); }, x, v);
    ASSERT_GT(std::abs(cpu[0].item<double>() - 4.0), 1e-3);
    at::Tensor cuda = cpu.clone();
    cuda[0] = std::exp(1.5);  // CUDA's f64 carry lands log 4 on 1.5
    GradientContext c = ContextOf(k, {{"x", x}}, {v}, cpu, cuda, cpu, false, graph::DType::kF64);
    c.hints = ops::FindOp("aten::logcumsumexp")->hints;
    c.b.cuda = true;
    EXPECT_FALSE(gradient_scan_carry(c).has_value());
  }
  {
    // Float32 at |x| near 250: the formula's 1e-5 from its unshifted
    // exponent (session 48's judge: 58 to 224 ulps, harmless) stays
    // excused; 1e-3 of the terms is not.
    const Case k = LogcumsumexpCase("f32[1,64]", 1);
    const at::Tensor x = at::linspace(-250, 250, 64, at::kDouble).reshape({1, 64}).flip({1})
                             .to(at::kFloat).to(at::kDouble);
    const at::Tensor v = at::ones({1, 64}, at::kFloat);
    const at::Tensor w =
        GradOf([](const at::Tensor& t) { return at::logcumsumexp(t, 1); }, x, v.to(at::kDouble));
    auto ctx = [&](const at::Tensor& a) {
      GradientContext c = ContextOf(k, {{"x", x}}, {v}, a.to(at::kFloat), w.to(at::kFloat), w,
                                    false, graph::DType::kF32);
      c.hints = ops::FindOp("aten::logcumsumexp")->hints;
      return c;
    };
    EXPECT_TRUE(gradient_scan_carry(ctx(w * (1 + 3e-5))).has_value());
    EXPECT_FALSE(gradient_scan_carry(ctx(w * (1 + 1e-3))).has_value());
  }
}

}  // namespace
}  // namespace divfuzz::oracles::rules
