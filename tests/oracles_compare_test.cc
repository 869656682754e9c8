#include <ATen/ATen.h>
#include <ATen/ops/tensor.h>

#include <limits>

#include "exec/executor.h"
#include "gtest/gtest.h"
#include "oracles/compare.h"
#include "tests/test_util.h"

namespace divfuzz::oracles {
namespace {

using graph::DType;
constexpr double kInf = std::numeric_limits<double>::infinity();

at::Tensor F32(std::vector<float> v) { return at::tensor(v); }

TEST(CompareTensors, ClassSplitNamesTheFirstElementAndBothValues) {
  // The seed report's shape of bug: -inf on one side, a finite value on the other.
  auto d = CompareTensors(F32({1.0f, -static_cast<float>(kInf)}), F32({1.0f, -108.34196472167969f}),
                          DType::kF32);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->cls, DivergenceClass::kClassSplit);
  EXPECT_EQ(d->element, 1);
  EXPECT_EQ(d->value_a, "-inf");
  EXPECT_EQ(d->value_b.substr(0, 8), "-108.341");
}

TEST(CompareTensors, NanAgainstNanAgrees) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(CompareTensors(F32({nan, 2.0f}), F32({nan, 2.0f}), DType::kF32));
}

TEST(CompareTensors, ToleranceFollowsAssertCloseTable) {
  // f32: atol 1e-5 + rtol 1.3e-6 * |b|. At b = 1 the allowance is 1.13e-5.
  EXPECT_FALSE(CompareTensors(F32({1.0f + 1e-5f}), F32({1.0f}), DType::kF32));
  auto d = CompareTensors(F32({1.0f + 3e-5f}), F32({1.0f}), DType::kF32);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->cls, DivergenceClass::kTolerance);
  EXPECT_NEAR(d->allowed, 1e-5 + 1.3e-6, 1e-12);
  // f16 is looser: 1e-3 relative.
  at::Tensor a = F32({1.0f}).to(at::kHalf), b = F32({1.0009765625f}).to(at::kHalf);
  EXPECT_FALSE(CompareTensors(a, b, DType::kF16));
}

// Complex values as torch.testing.assert_close compares them (torch.isclose
// on complex): |a - b| against atol + rtol |b|, magnitudes of the whole
// values. Session 34: an imaginary part 4.4e-4 off on a value of 1197 was a
// bug-tier MulBackward0 bucket under the parts-apart comparison.
TEST(CompareTensors, ComplexValuesAreComparedByMagnitude) {
  const at::Tensor b = at::tensor({c10::complex<float>(1196.74f, 47.73f)});
  const at::Tensor a = at::tensor({c10::complex<float>(1196.74f, 47.7304f)});
  const Tolerance tol{1.3e-6, 1e-5};
  EXPECT_FALSE(CompareTensors(a, b, DType::kC64, tol).has_value());
  EXPECT_FALSE(DifferingElements(a, b, DType::kC64, tol).any().item<bool>());
  // 1% of the magnitude is a divergence, named at the part that differs.
  const at::Tensor far = at::tensor({c10::complex<float>(1196.74f, 59.7f)});
  std::optional<Divergence> d = CompareTensors(far, b, DType::kC64, tol);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->cls, DivergenceClass::kTolerance);
  EXPECT_EQ(d->component, 1);
  EXPECT_TRUE(DifferingElements(far, b, DType::kC64, tol).all().item<bool>());
}

TEST(CompareTensors, IntegersMustMatchExactly) {
  auto d = CompareTensors(at::tensor({1, 2, 3}), at::tensor({1, 2, 4}), DType::kI64);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->cls, DivergenceClass::kExactMismatch);
  EXPECT_EQ(d->element, 2);
}

TEST(CompareTensors, ShapeOrDtypeDifferenceIsAMetaSplit) {
  auto d = CompareTensors(F32({1, 2}), F32({1, 2, 3}), DType::kF32);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->cls, DivergenceClass::kMetaSplit);
  EXPECT_EQ(d->value_a, "f32[2]");
  d = CompareTensors(F32({1}), F32({1}).to(at::kDouble), DType::kF32);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->cls, DivergenceClass::kMetaSplit);
}

TEST(Compare, LocalizesTheRootAndMarksDownstreamNodes) {
  graph::Program p = testing::MustParse(R"(divfuzz v1
input %a: f32[1] = fill(100000000.0)
input %b: f32[1] = fill(1.0)
%c = aten::add.Tensor(%a, %b)
%d = aten::sub.Tensor(%c, %a)
%e = aten::exp(%d)
output %e
)");
  ops::TypeEnv types = testing::MustInfer(p);
  Verdict v = Compare(p, types, exec::Run(p, types, exec::Target::kCpu),
                      exec::Run(p, types, exec::Target::kCpuF64));
  ASSERT_EQ(v.divergences.size(), 2u);
  EXPECT_EQ(v.divergences[0].node_index, 1);
  EXPECT_EQ(v.divergences[0].op, "aten::sub.Tensor");
  EXPECT_EQ(v.divergences[0].cls, DivergenceClass::kTolerance);
  EXPECT_TRUE(v.divergences[0].root);
  EXPECT_EQ(v.divergences[0].value_a, "0.0");
  EXPECT_EQ(v.divergences[0].value_b, "1.0");
  EXPECT_EQ(v.divergences[1].node_index, 2);
  EXPECT_FALSE(v.divergences[1].root);
  ASSERT_EQ(v.Roots().size(), 1u);
  EXPECT_EQ(Signature(*v.Roots()[0]), "aten::sub.Tensor|f32|tolerance|undecided");
}

// QR's factors are unique only up to the signs of Q's columns (and R's
// rows): LAPACK and cuSOLVER may pick others. The decomposition is judged by
// its invariants; an op on Q that diverges inherited the choice and is no
// root (t(Q) was an undecided bucket of an H100 campaign). A side wrong in
// the invariants is still the root.
TEST(Compare, AnOpOnAFreeFactorOfADecompositionIsNoRoot) {
  graph::Program p = testing::MustParse(R"(divfuzz v1
input %m: f64[3,2] = values(1.0, 2.0, 3.0, 4.0, 5.0, 7.0)
%q, %r = aten::linalg_qr(%m)
%t = aten::t(%q)
%s = aten::sum(%r)
output %t, %s
)");
  ops::TypeEnv types = testing::MustInfer(p);
  const exec::RunResult a = exec::Run(p, types, exec::Target::kCpu);
  exec::RunResult b = exec::Run(p, types, exec::Target::kCpu);
  // The other valid factorization: column 0 of Q and row 0 of R negated.
  at::Tensor& q = b.nodes[0].outputs[0];
  at::Tensor& r = b.nodes[0].outputs[1];
  q = q.clone();
  r = r.clone();
  q.select(1, 0).neg_();
  r.select(0, 0).neg_();
  b.nodes[1].outputs[0] = q.t().contiguous();
  b.nodes[2].outputs[0] = r.sum();
  Verdict v = Compare(p, types, a, b);
  ASSERT_EQ(v.divergences.size(), 2u);  // t(Q) and sum(R), both inherited
  EXPECT_FALSE(v.divergences[0].root);
  EXPECT_FALSE(v.divergences[1].root);
  EXPECT_TRUE(v.Roots().empty());
  // A Q that breaks Q R = A is the decomposition's own divergence.
  b.nodes[0].outputs[0] = q.mul(1.5);
  Verdict w = Compare(p, types, a, b);
  ASSERT_EQ(w.Roots().size(), 1u);
  EXPECT_EQ(w.Roots()[0]->op, "aten::linalg_qr");
}

TEST(Compare, OneSidedErrorIsAnErrorSplitAndDtypeGapWhenNotImplemented) {
  graph::Program p = testing::MustParse(
      "divfuzz v1\ninput %x: f32[2] = fill(1.0)\n%y = aten::exp(%x)\noutput %y\n");
  ops::TypeEnv types = testing::MustInfer(p);
  exec::RunResult a = exec::Run(p, types, exec::Target::kCpu);
  exec::RunResult b = a;
  b.target = exec::Target::kCpuF64;
  b.nodes[0].outputs.clear();
  b.nodes[0].error = exec::NodeError{exec::NodeError::Kind::kRaised, "boom"};
  Verdict v = Compare(p, types, a, b);
  ASSERT_EQ(v.divergences.size(), 1u);
  EXPECT_EQ(v.divergences[0].cls, DivergenceClass::kErrorSplit);
  EXPECT_EQ(v.divergences[0].value_b, "raised: boom");
  b.nodes[0].error =
      exec::NodeError{exec::NodeError::Kind::kNotImplemented, "\"exp\" not implemented for 'Half'"};
  v = Compare(p, types, a, b);
  ASSERT_EQ(v.divergences.size(), 1u);
  EXPECT_EQ(v.divergences[0].cls, DivergenceClass::kDtypeGap);
  // Both sides raising is agreement.
  a.nodes[0].error = b.nodes[0].error;
  EXPECT_FALSE(Compare(p, types, a, b).Diverged());
}

TEST(DifferingElements, OnePassEqualsTheElementwiseFormula) {
  // The formula as ATen ops (what DifferingElements computed before its one
  // pass): the class differs, or both finite and |x - y| > |y| rtol + atol.
  auto formula = [](const at::Tensor& x, const at::Tensor& y, oracles::Tolerance tol) {
    const at::Tensor nan_x = x.isnan(), nan_y = y.isnan();
    const at::Tensor class_differs =
        nan_x.ne(nan_y).logical_or(x.isinf().logical_and(x.ne(y))).logical_or(
            y.isinf().logical_and(x.ne(y)));
    const at::Tensor finite = x.isfinite().logical_and(y.isfinite());
    const at::Tensor beyond =
        finite.logical_and(x.sub(y).abs().gt(y.abs().mul(tol.rtol).add(tol.atol)));
    return class_differs.logical_and(nan_x.logical_and(nan_y).logical_not()).logical_or(beyond);
  };
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double max = std::numeric_limits<double>::max();
  const std::vector<double> special = {0.0, -0.0, 1.0, -1.0, 1e-300, 5e-324, max, -max,
                                       inf, -inf, nan, 1.0 + 1e-6, 1.0 - 1e-5, 3.0e38};
  std::vector<double> xs, ys;
  for (double a : special) {
    for (double b : special) xs.push_back(a), ys.push_back(b);
  }
  at::Tensor x = at::tensor(xs, at::kDouble), y = at::tensor(ys, at::kDouble);
  // And random pairs near each other, at several scales.
  at::manual_seed(7);
  const at::Tensor r = at::randn({4000}, at::kDouble) * at::pow(10.0, at::randint(-30, 30, {4000}).to(at::kDouble));
  const at::Tensor s = r * (1 + at::randn({4000}, at::kDouble) * 1e-5);
  x = at::cat({x, r});
  y = at::cat({y, s});
  for (oracles::Tolerance tol : {oracles::Tolerance{1.3e-6, 1e-5}, oracles::Tolerance{0, 0},
                                 oracles::Tolerance{1.6e-2, 1e-5}}) {
    const at::Tensor got = oracles::DifferingElements(x, y, graph::DType::kF64, tol);
    ASSERT_TRUE(at::equal(got, formula(x, y, tol))) << tol.rtol;
    EXPECT_TRUE(got.any().item<bool>());
    // float32 inputs go through float64 the same way.
    const at::Tensor xf = x.to(at::kFloat), yf = y.to(at::kFloat);
    EXPECT_TRUE(at::equal(oracles::DifferingElements(xf, yf, graph::DType::kF32, tol),
                          formula(xf.to(at::kDouble), yf.to(at::kDouble), tol)));
  }
}

}  // namespace
}  // namespace divfuzz::oracles
