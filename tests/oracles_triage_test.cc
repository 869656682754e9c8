// Attribution, expected-by-policy rules and bucketing, on real libtorch runs.
#include <ATen/ops/linalg_svdvals.h>
#include <ATen/ops/real.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/tensor.h>

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "fuzz/harness/harness.h"
#include "exec/cuda_variants.h"
#include "gtest/gtest.h"
#include "exec/exact_reference.h"
#include "ops/catalogue.h"
#include "oracles/compare.h"
#include "oracles/expected_rules.h"
#include "oracles/nan_rule.h"
#include "oracles/triage.h"
#include "store/findings_store.h"
#include "tests/faulty_targets.h"
#include "tests/test_util.h"

namespace divfuzz::oracles {
namespace {

using testing::MustInfer;
using testing::MustParse;

// A well-conditioned 4x4 matrix (cond 1) with a tiny determinant: log|det| is
// exactly 4 ln(s), nothing like the -inf the faulty target returns.
std::string ScaledIdentityLogdet(double s) {
  const std::string v = absl::StrCat(s);
  return absl::StrCat("divfuzz v1\ninput %m: f32[4,4] = values(", v, ", 0, 0, 0, 0, ", v,
                      ", 0, 0, 0, 0, ", v, ", 0, 0, 0, 0, ", v,
                      ")\n%d = aten::logdet(%m)\noutput %d\n");
}

TEST(Attribution, FaultySeedBugIsBlamedOnTheRightSideAndBucketedOnce) {
  const std::string dir = testing::TempDir("findings");
  fuzz::HarnessConfig config;
  config.target_a = exec::Target::kCpu;
  config.target_b = exec::Target::kCpuF64;
  config.findings_dir = dir;
  config.runner_a = [](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
    return testing::FaultyLogdetRun(p, t, target);
  };
  fuzz::Harness harness(config);
  int found = 0;
  for (double s : {0.01, 0.02, 0.005, 0.03, 0.001}) {
    fuzz::Outcome o = harness.RunProgram(MustParse(ScaledIdentityLogdet(s)));
    ASSERT_EQ(o.verdict.Roots().size(), 1u);
    const Divergence& d = *o.verdict.Roots()[0];
    EXPECT_EQ(d.cls, DivergenceClass::kClassSplit);
    EXPECT_EQ(d.wrong_side, "cpu") << d.reason;
    EXPECT_EQ(d.tier, "bug") << d.reason;
    EXPECT_EQ(d.value_a, "-inf");
    // The reference is the exact answer, 4 ln(s), to float64 rounding.
    EXPECT_NEAR(std::stod(d.reference_a), 4 * std::log(static_cast<double>(static_cast<float>(s))),
                1e-9);
    found += o.new_findings;
  }
  EXPECT_EQ(found, 1);
  harness.FlushHits();  // repeat hits are batched
  auto store = store::FindingsStore::Open(dir);
  auto index = (*store)->Load();
  ASSERT_EQ(index->size(), 1u);
  EXPECT_EQ((*index)[0]["signature"], "aten::logdet|f32|class_split|cpu");
  EXPECT_EQ((*index)[0]["count"], 5);
  EXPECT_EQ((*index)[0]["tier"], "bug");
  EXPECT_EQ((*index)[0]["severity"], "bug-split");
  // Above the threshold the faulty target is right and nothing is found.
  EXPECT_FALSE(harness.RunProgram(MustParse(ScaledIdentityLogdet(0.5))).verdict.Diverged());
}

TEST(Attribution, InheritedRoundingIsExpectedNotABug) {
  // sub of the rounded 1e8 + 1 is exact: the divergence comes from add's
  // rounding, which is within tolerance there (rule inherited_difference).
  graph::Program p = MustParse(R"(divfuzz v1
input %a: f32[1] = fill(100000000.0)
input %b: f32[1] = fill(1.0)
%c = aten::add.Tensor(%a, %b)
%d = aten::sub.Tensor(%c, %a)
output %d
)");
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult a = exec::Run(p, t, exec::Target::kCpu),
                  b = exec::Run(p, t, exec::Target::kCpuF64);
  Verdict v = Compare(p, t, a, b);
  Triage(p, t, a, b, DefaultPolicy(), v);
  ASSERT_EQ(v.Roots().size(), 1u);
  EXPECT_EQ(v.Roots()[0]->wrong_side, "undecided");
  EXPECT_EQ(v.Roots()[0]->tier, "expected");
  EXPECT_EQ(v.Roots()[0]->expected_rule, "inherited_difference");
  EXPECT_EQ(v.Roots()[0]->reference_a, "0.0");  // sub(1e8, 1e8) on cpu's own inputs
  EXPECT_EQ(v.Roots()[0]->reference_b, "1.0");
}

TEST(Attribution, ErrorSplitBlamesTheSideThatRaisesWhenTheReferenceComputes) {
  graph::Program p = MustParse(
      "divfuzz v1\ninput %x: f32[2,2] = values(2.0, 0.0, 0.0, 3.0)\n%y = aten::linalg_inv(%x)\n"
      "output %y\n");
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult a = exec::Run(p, t, exec::Target::kCpu),
                  b = exec::Run(p, t, exec::Target::kCpuF64);
  a.nodes[0].outputs.clear();
  a.nodes[0].error = exec::NodeError{exec::NodeError::Kind::kRaised, "planted failure"};
  Verdict v = Compare(p, t, a, b);
  Triage(p, t, a, b, DefaultPolicy(), v);
  ASSERT_EQ(v.Roots().size(), 1u);
  EXPECT_EQ(v.Roots()[0]->cls, DivergenceClass::kErrorSplit);
  EXPECT_EQ(v.Roots()[0]->wrong_side, "cpu");
  EXPECT_EQ(v.Roots()[0]->tier, "bug");
}

// cpu vs cpu-scalar, planted as an orthogonal polynomial's unset variable
// at a NaN x: cpu returns a different huge number there on every run,
// cpu-scalar NaN.
fuzz::HarnessConfig NanPolynomialConfig(const std::string& findings) {
  fuzz::HarnessConfig config;
  config.target_a = exec::Target::kCpu;
  config.target_b = exec::Target::kCpuScalar;
  config.findings_dir = testing::TempDir(findings);
  config.runner_a = [](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
    return testing::NanPolynomialRun(p, t, target, /*uninitialized=*/true);
  };
  config.runner_b = [](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
    return testing::NanPolynomialRun(p, t, target, /*uninitialized=*/false);
  };
  return config;
}

// Session 52's e1f9491f (judged real, cuda; pytorch#158428): cholesky_inverse
// of L = [[0]] raises on the CPU ("singular") and returns inf on CUDA. The
// exact witness says L·Lᵀ is exactly singular (a zero diagonal), so the side
// that computes is wrong, not undecided. Planted: the other side's inf.
TEST(Attribution, CholeskyInverseOfAZeroDiagonalIsExactlySingular) {
  graph::Program p = MustParse(
      "divfuzz v1\ninput %l: f32[2,2] = values(0.0, 0.0, 1.0, 2.0)\n"
      "%y = aten::cholesky_inverse(%l)\noutput %y\n");
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult a = exec::Run(p, t, exec::Target::kCpu),
                  b = exec::Run(p, t, exec::Target::kCpuScalar);
  ASSERT_TRUE(a.nodes[0].error.has_value());
  b.nodes[0].error.reset();
  b.nodes[0].outputs = {at::full({2, 2}, INFINITY)};
  Verdict v = Compare(p, t, a, b);
  Triage(p, t, a, b, DefaultPolicy(), v);
  ASSERT_EQ(v.Roots().size(), 1u);
  EXPECT_EQ(v.Roots()[0]->cls, DivergenceClass::kErrorSplit);
  EXPECT_EQ(v.Roots()[0]->wrong_side, "cpu-scalar") << v.Roots()[0]->reason;
  EXPECT_EQ(v.Roots()[0]->tier, "bug");
  // Decided by the exact witness, not by a float64 kernel (on the GPU host
  // cpu-f64 raises and cuda-f64 returns inf: they disagree).
  EXPECT_EQ(v.Roots()[0]->witness, "exact") << v.Roots()[0]->reason;
  // A nonzero diagonal: the witness gives no value (L·Lᵀ rounds).
  const graph::Program q = MustParse(
      "divfuzz v1\ninput %l: f32[2,2] = values(1.0, 0.0, 1.0, 2.0)\n"
      "%y = aten::cholesky_inverse(%l)\noutput %y\n");
  EXPECT_FALSE(exec::RunExact(q.nodes[0], {{"l", at::tensor({1.0, 0.0, 1.0, 2.0}, at::kDouble)
                                                      .reshape({2, 2})}},
                              MustInfer(q))
                   .has_value());
}

TEST(Attribution, APolynomialAtANanXIsNanWhateverTheReferenceKernelReturns) {
  // PyTorch's own float64 kernel returns an unset variable at a NaN x (its
  // value varies), so without the rule the reference could blame the side
  // that returns NaN. Planted: cpu returns a different huge number there on
  // every run, cpu-scalar NaN. Its rerun differs only where the rule says
  // NaN, so the finding is cpu's wrong value, not nondeterminism.
  fuzz::Harness harness(NanPolynomialConfig("nan_polynomial"));
  for (const std::string op :
       {"special_shifted_chebyshev_polynomial_u", "special_chebyshev_polynomial_w",
        "special_legendre_polynomial_p", "special_laguerre_polynomial_l"}) {
    fuzz::Outcome o = harness.RunProgram(
        MustParse("divfuzz v1\ninput %x: f32[3] = values(0x1p-2, nan, 0x1p-1)\n%y = aten::" + op +
                  ".n_scalar(%x, 3.0)\noutput %y\n"));
    ASSERT_EQ(o.verdict.Roots().size(), 1u) << op;
    const Divergence& d = *o.verdict.Roots()[0];
    EXPECT_EQ(d.cls, DivergenceClass::kClassSplit) << op;
    EXPECT_EQ(d.element, 1) << op;
    EXPECT_EQ(d.wrong_side, "cpu") << op << ": " << d.reason;
    EXPECT_EQ(d.tier, "bug") << op << ": " << d.reason;
    EXPECT_EQ(d.reference_a, "nan") << op;
    EXPECT_EQ(d.reference_b, "nan") << op;
  }
  // n = 0 is the constant 1, NaN x or not: the rule leaves it alone.
  std::vector<at::Tensor> ref = {at::tensor({1.0, 1.0})};
  graph::Program p = MustParse(
      "divfuzz v1\ninput %x: f64[2] = values(nan, 0x1p-1)\n"
      "%y = aten::special_hermite_polynomial_h.n_scalar(%x, 0.0)\noutput %y\n");
  CorrectReference(p.nodes[0], {{"x", at::tensor({NAN, 0.5}, at::kDouble)}}, &ref);
  EXPECT_EQ(ref[0][0].item<double>(), 1.0);
  p = MustParse(
      "divfuzz v1\ninput %x: f64[2] = values(nan, 0x1p-1)\n"
      "%y = aten::special_hermite_polynomial_h.n_scalar(%x, 1.0)\noutput %y\n");
  CorrectReference(p.nodes[0], {{"x", at::tensor({NAN, 0.5}, at::kDouble)}}, &ref);
  EXPECT_TRUE(std::isnan(ref[0][0].item<double>()));
  EXPECT_EQ(ref[0][1].item<double>(), 1.0);
}

// Session 52's 1fc0078c (judged real, cpu): in a float64 program the float64
// reference is the kernel under test, but at a NaN x (n >= 1) the rule, not
// the kernel, gives the reference's value, so it judges there. Where the
// sides also differ elsewhere, the kernel's float64 still cannot.
TEST(Attribution, APolynomialAtANanXIsJudgedInAFloat64ProgramToo) {
  fuzz::Harness harness(NanPolynomialConfig("nan_polynomial_f64"));
  fuzz::Outcome o = harness.RunProgram(MustParse(
      "divfuzz v1\ninput %x: f64[3] = values(0x1p-2, nan, 0x1p-1)\n"
      "%y = aten::special_shifted_chebyshev_polynomial_u.n_scalar(%x, 6.0)\noutput %y\n"));
  ASSERT_EQ(o.verdict.Roots().size(), 1u);
  const Divergence& d = *o.verdict.Roots()[0];
  EXPECT_EQ(d.wrong_side, "cpu") << d.reason;
  EXPECT_EQ(d.tier, "bug") << d.reason;
  const graph::Program p = MustParse(
      "divfuzz v1\ninput %x: f64[3] = values(0x1p-2, nan, 0x1p-1)\n"
      "%y = aten::special_shifted_chebyshev_polynomial_u.n_scalar(%x, 6.0)\noutput %y\n");
  const std::map<std::string, at::Tensor> in{{"x", at::tensor({0.25, NAN, 0.5}, at::kDouble)}};
  EXPECT_TRUE(DefinedByNanRule(p.nodes[0], in, at::tensor({0, 1, 0})));
  EXPECT_FALSE(DefinedByNanRule(p.nodes[0], in, at::tensor({1, 1, 0})));
}

TEST(Attribution, ToleranceErrorsComeInUlpsAndRelativeTerms) {
  graph::Program p =
      MustParse("divfuzz v1\ninput %x: f32[1] = values(2.0)\n%y = aten::sqrt(%x)\noutput %y\n");
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult a = exec::Run(p, t, exec::Target::kCpu),
                  b = exec::Run(p, t, exec::Target::kCpuF64);
  // Plant an error of 256 ULPs in cpu's sqrt(2) (float32 allows about 11 there).
  const float good = std::sqrt(2.0f);
  const float bad = good + 256 * std::ldexp(1.0f, -23);
  a.nodes[0].outputs[0] = at::tensor(std::vector<float>{bad});
  Verdict v = Compare(p, t, a, b);
  Triage(p, t, a, b, DefaultPolicy(), v);
  ASSERT_EQ(v.Roots().size(), 1u);
  const Divergence& d = *v.Roots()[0];
  EXPECT_EQ(d.cls, DivergenceClass::kTolerance);
  EXPECT_EQ(d.wrong_side, "cpu");
  EXPECT_NEAR(d.ulp_a, 256, 1);
  EXPECT_NEAR(d.rel_a, 256 * std::ldexp(1.0, -23) / std::sqrt(2.0), 1e-7);
  EXPECT_LT(d.ulp_b, 1);
}

TEST(Determinism, ATargetThatDisagreesWithItselfIsNondeterminism) {
  const std::string dir = testing::TempDir("findings");
  fuzz::HarnessConfig config;
  config.findings_dir = dir;
  config.runner_a = testing::NondeterministicRun;
  fuzz::Harness harness(config);
  fuzz::Outcome o = harness.RunProgram(MustParse(
      "divfuzz v1\ninput %x: f32[3] = values(1.0, 2.0, 3.0)\n%y = aten::exp(%x)\noutput %y\n"));
  ASSERT_EQ(o.verdict.Roots().size(), 1u);
  EXPECT_EQ(o.verdict.Roots()[0]->cls, DivergenceClass::kNondeterminism);
  EXPECT_EQ(o.verdict.Roots()[0]->wrong_side, "cpu");
}

TEST(Determinism, DocumentedNondeterministicCudaKernelsAreExpected) {
  // A deliberately nondeterministic "cuda" (the CPU, perturbed on each call).
  const auto flaky_cuda = [](const graph::Program& p, const ops::TypeEnv& t, exec::Target) {
    exec::RunResult r = testing::NondeterministicRun(p, t, exec::Target::kCpu);
    r.target = exec::Target::kCuda;
    return r;
  };
  const auto run = [&](const std::string& op_line) {
    fuzz::HarnessConfig config;
    config.findings_dir = testing::TempDir("findings");
    config.target_b = exec::Target::kCuda;
    config.runner_b = flaky_cuda;
    fuzz::Harness harness(config);
    fuzz::Outcome o =
        harness.RunProgram(MustParse("divfuzz v1\ninput %x: f32[3] = values(1.0, 2.0, 3.0)\ninput "
                                     "%i: i64[3] = values(0, 0, 1)\n" +
                                     op_line + "output %y\n"));
    EXPECT_EQ(o.verdict.Roots().size(), 1u) << op_line;
    return o.verdict.Roots().empty() ? Divergence{} : *o.verdict.Roots()[0];
  };
  // scatter_add adds with atomics on CUDA: PyTorch says so.
  Divergence atomic = run("%y = aten::scatter_add(%x, 0, %i, %x)\n");
  EXPECT_EQ(atomic.cls, DivergenceClass::kNondeterminism);
  EXPECT_EQ(atomic.wrong_side, "cuda");
  EXPECT_EQ(atomic.tier, "expected");
  EXPECT_EQ(atomic.expected_rule, "documented_nondeterminism") << atomic.reason;
  // exp is not on the list: a CUDA exp that disagrees with itself is news.
  Divergence plain = run("%y = aten::exp(%x)\n");
  EXPECT_EQ(plain.cls, DivergenceClass::kNondeterminism);
  EXPECT_EQ(plain.tier, "divergence");
  // The rule can be switched off.
  Policy off = DefaultPolicy();
  off.rules.documented_nondeterminism = false;
  EXPECT_FALSE(oracles::DocumentedNondeterminism(
                   MustParse("divfuzz v1\ninput %x: f32[3] = fill(1)\ninput %i: i64[3] = fill(0)\n"
                             "%y = aten::scatter_add(%x, 0, %i, %x)\noutput %y\n")
                       .nodes[0],
                   exec::Target::kCuda, off)
                   .has_value());
}

// Runs a one-node program on the CPU twice, lets `plant` change side B's
// output, and returns the triaged root divergence.
template <typename Plant>
Divergence Planted(const std::string& text, Plant plant, Policy policy = DefaultPolicy(),
                   exec::Target target_b = exec::Target::kCpu) {
  graph::Program p = MustParse(text);
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult a = exec::Run(p, t, exec::Target::kCpu), b = exec::Run(p, t, exec::Target::kCpu);
  b.target = target_b;
  plant(b.nodes.back());
  Verdict v = Compare(p, t, a, b, policy);
  Triage(p, t, a, b, policy, v);
  EXPECT_FALSE(v.Roots().empty()) << text;
  return v.Roots().empty() ? Divergence{} : *v.Roots()[0];
}

// The CPU raises ZeroDivisionError for an integer division by zero; CUDA
// returns a value (planted here: side B computes instead of raising).
TEST(ExpectedRules, IntegerDivisionByZeroIsUndefined) {
  auto computes = [](exec::NodeResult& n) {
    n.error.reset();
    n.outputs = {at::tensor(std::vector<int64_t>{3, -1})};
  };
  for (const char* op : {"aten::floor_divide", "aten::fmod.Tensor", "aten::remainder.Tensor"}) {
    Divergence zero = Planted(absl::StrCat("divfuzz v1\ninput %a: i64[2] = values(7, 3)\n"
                                           "input %b: i64[2] = values(2, 0)\n%y = ",
                                           op, "(%a, %b)\noutput %y\n"),
                              computes);
    EXPECT_EQ(zero.expected_rule, "integer_division_by_zero") << op << ": " << zero.reason;
  }
  // No zero divisor: a side that raises is a finding.
  auto raises = [](exec::NodeResult& n) {
    n.outputs.clear();
    n.error = exec::NodeError{exec::NodeError::Kind::kRaised, "ZeroDivisionError"};
  };
  Divergence nonzero = Planted(
      "divfuzz v1\ninput %a: i64[2] = values(7, 3)\ninput %b: i64[2] = values(2, 1)\n"
      "%y = aten::floor_divide(%a, %b)\noutput %y\n",
      raises);
  EXPECT_NE(nonzero.expected_rule, "integer_division_by_zero") << nonzero.reason;
}

TEST(ExpectedRules, InfoGatedFactorizationOutputs) {
  auto scramble = [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].add(1.0); };
  Divergence failed = Planted(
      "divfuzz v1\ninput %m: f64[2,2] = values(1.0, 2.0, 2.0, 1.0)\n"
      "%l, %info = aten::linalg_cholesky_ex(%m)\noutput %l, %info\n",
      scramble);
  EXPECT_EQ(failed.tier, "expected");
  EXPECT_EQ(failed.expected_rule, "info_gated");
  Divergence ok = Planted(
      "divfuzz v1\ninput %m: f64[2,2] = values(4.0, 1.0, 1.0, 3.0)\n"
      "%l, %info = aten::linalg_cholesky_ex(%m)\noutput %l, %info\n",
      scramble);
  EXPECT_NE(ok.tier, "expected");
}

TEST(ExpectedRules, IndexTiesCompareTheSelectedValues) {
  const std::string text =
      "divfuzz v1\ninput %x: f32[4] = values(1.0, 3.0, 3.0, 2.0)\n"
      "%i = aten::argmax(%x, 0, keepdim=False)\noutput %i\n";
  Divergence tie = Planted(text, [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].add(1); });
  EXPECT_EQ(tie.cls, DivergenceClass::kExactMismatch);
  EXPECT_EQ(tie.expected_rule, "index_ties");
  Divergence wrong = Planted(text, [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].add(2); });
  EXPECT_NE(wrong.tier, "expected");
  // Same for sort's indices: the values output agrees, the indices of tied values swap.
  Divergence sorted = Planted(
      "divfuzz v1\ninput %x: f32[3] = values(2.0, 1.0, 2.0)\n"
      "%v, %i = aten::sort(%x, 0, descending=True)\noutput %v, %i\n",
      [](exec::NodeResult& n) {
        // Descending order of (2, 1, 2) is (2, 2, 1): indices (0, 2, 1) or (2, 0, 1).
        const bool first = n.outputs[1][0].item<int64_t>() == 0;
        n.outputs[1] = at::tensor(std::vector<int64_t>{first ? 2 : 0, first ? 0 : 2, 1});
      });
  EXPECT_EQ(sorted.expected_rule, "index_ties");
  // The generic path's argsort (indices first) and sort.stable with stable=False.
  const auto swap_ties = [](at::Tensor i) {
    const bool first = i[0].item<int64_t>() == 0;
    return at::tensor(std::vector<int64_t>{first ? 2 : 0, first ? 0 : 2, 1});
  };
  Divergence argsorted = Planted(
      "divfuzz v1\ninput %x: f32[3] = values(2.0, 1.0, 2.0)\n"
      "%i = aten::argsort.stable(%x, stable=False, dim=0, descending=True)\noutput %i\n",
      [&](exec::NodeResult& n) { n.outputs[0] = swap_ties(n.outputs[0]); });
  EXPECT_EQ(argsorted.expected_rule, "index_ties") << argsorted.reason;
  Divergence stable_sorted = Planted(
      "divfuzz v1\ninput %x: f32[3] = values(2.0, 1.0, 2.0)\n"
      "%v, %i = aten::sort.stable(%x, stable=False, dim=0, descending=True)\noutput %v, %i\n",
      [&](exec::NodeResult& n) { n.outputs[1] = swap_ties(n.outputs[1]); });
  EXPECT_EQ(stable_sorted.expected_rule, "index_ties") << stable_sorted.reason;
  // Indices that select different values are a real divergence.
  Divergence wrong_order = Planted(
      "divfuzz v1\ninput %x: f32[3] = values(2.0, 1.0, 2.0)\n"
      "%i = aten::argsort.stable(%x, stable=False, dim=0, descending=True)\noutput %i\n",
      [](exec::NodeResult& n) {
        n.outputs[0] = at::tensor(std::vector<int64_t>{1, 0, 2});
      });
  EXPECT_NE(wrong_order.tier, "expected");
}

TEST(ExpectedRules, RepeatedDestinationsWithoutAccumulateAreUndefined) {
  // put writes 5 then 7 to x[1] on the CPU; a side that kept 5 is not wrong.
  const auto keep_first = [](exec::NodeResult& n) {
    n.outputs[0] = at::tensor(std::vector<float>{0.0f, 5.0f, 0.0f});
  };
  const auto put = [](const char* indices) {
    return absl::StrCat(
        "divfuzz v1\ninput %x: f32[3] = values(0.0, 0.0, 0.0)\ninput %i: i64[2] = values(", indices,
        ")\ninput %s: f32[2] = values(5.0, 7.0)\n%y = aten::put(%x, %i, %s, accumulate=False)\n"
        "output %y\n");
  };
  Divergence dup = Planted(put("1, -2"), keep_first);
  EXPECT_EQ(dup.expected_rule, "index_ties") << dup.reason;
  // Distinct destinations: the same wrong value is a real divergence.
  Divergence distinct = Planted(put("0, 1"), keep_first);
  EXPECT_NE(distinct.tier, "expected");
  // index_copy along dim 0 with a repeated row.
  Divergence rows = Planted(
      "divfuzz v1\ninput %x: f32[2,1] = values(0.0, 0.0)\ninput %i: i64[2] = values(0, 0)\n"
      "input %s: f32[2,1] = values(5.0, 7.0)\n%y = aten::index_copy(%x, 0, %i, %s)\noutput %y\n",
      [](exec::NodeResult& n) {
        n.outputs[0] = at::tensor(std::vector<float>{5.0f, 0.0f}).view({2, 1});
      });
  EXPECT_EQ(rows.expected_rule, "index_ties") << rows.reason;
  // max_unpool2d: two inputs of one plane unpooled to position 0 (seen on the H200 as
  // class_split, tolerance and nondeterminism "bugs"); a second plane may reuse position 0.
  const auto other_write = [](exec::NodeResult& n) {
    // The other of the two values written to position 0 (or -3 where only 1 was).
    n.outputs[0] = n.outputs[0].clone();
    const float first = n.outputs[0].view(-1)[0].item<float>();
    n.outputs[0].view(-1)[0] = first == -3.0f ? 1.0 : -3.0;
  };
  const auto unpool = [](const char* second_index) {
    return absl::StrCat(
        "divfuzz v1\ninput %x: f32[2,1,2] = values(1.0, -3.0, 4.0, 5.0)\n"
        "input %i: i64[2,1,2] = values(0, ",
        second_index, ", 0, 1)\n%y = aten::max_unpool2d(%x, %i, [2, 2])\noutput %y\n");
  };
  Divergence same_plane = Planted(unpool("0"), other_write);
  EXPECT_EQ(same_plane.expected_rule, "index_ties") << same_plane.reason;
  Divergence distinct_plane = Planted(unpool("3"), other_write);
  EXPECT_NE(distinct_plane.tier, "expected");
}

TEST(ExpectedRules, ModeMayReturnAnyMostFrequentValue) {
  auto other = [](exec::NodeResult& n) {
    n.outputs[0] = at::tensor(std::vector<float>{n.outputs[0].item<float>() == 1.0f ? 2.0f : 1.0f});
  };
  Divergence tie = Planted(
      "divfuzz v1\ninput %x: f32[1,4] = values(1.0, 2.0, 1.0, 2.0)\n"
      "%v, %i = aten::mode(%x, 1, keepdim=False)\noutput %v, %i\n",
      other);
  EXPECT_EQ(tie.expected_rule, "index_ties") << tie.reason;
  Divergence real = Planted(
      "divfuzz v1\ninput %x: f32[1,4] = values(1.0, 1.0, 1.0, 2.0)\n"
      "%v, %i = aten::mode(%x, 1, keepdim=False)\noutput %v, %i\n",
      other);
  EXPECT_NE(real.tier, "expected");
}

// How torch.mode counts NaNs is unsaid (pytorch#46225): the CPU groups them,
// CUDA's sorted runs split them. Session 44's 41ec662e (judged expected): the
// CPU's NaN (two of them) and CUDA's 0.49 (once, as every other value) are
// each a mode under one way of counting. A row whose three zeros outnumber
// everything under any counting has no other mode (session 44's a4b1c32d:
// CUDA's -0.7, twice, is real).
TEST(ExpectedRules, ModeOfARowWithNaNsMayCountThemEitherWay) {
  auto value = [](float v) {
    return [v](exec::NodeResult& n) { n.outputs[0] = at::full({1}, v); };
  };
  Divergence split = Planted(
      "divfuzz v1\ninput %x: f32[1,7] = values(nan, 0.0, 1.0, inf, 0.490234375, 1.296875, nan)\n"
      "%v, %i = aten::mode(%x, 1, keepdim=False)\noutput %v, %i\n",
      value(0.490234375f));
  EXPECT_EQ(split.expected_rule, "index_ties") << split.reason;
  Divergence real = Planted(
      "divfuzz v1\ninput %x: f32[1,7] = values(nan, 0.0, 0.0, 0.0, -0.7, -0.7, nan)\n"
      "%v, %i = aten::mode(%x, 1, keepdim=False)\noutput %v, %i\n",
      value(-0.7f));
  EXPECT_NE(real.tier, "expected") << real.reason;
  // And is blamed: -0.7 is no mode under any counting (session 49's judges:
  // the CPU's -inf and CUDA's -92.5 in rows whose 0 occurs twice).
  Divergence blamed = Planted(
      "divfuzz v1\ninput %x: f32[1,7] = values(nan, 0.0, 0.0, 0.0, -0.7, -0.7, nan)\n"
      "%v, %i = aten::mode(%x, 1, keepdim=False)\noutput %v, %i\n",
      value(-0.7f), DefaultPolicy(), exec::Target::kCpuScalar);
  EXPECT_EQ(blamed.tier, "bug") << blamed.reason;
  EXPECT_EQ(blamed.wrong_side, "cpu-scalar") << blamed.reason;
  EXPECT_EQ(blamed.witness, "mode-count") << blamed.reason;
  // Both values no mode (session 51's c7aa9723, a tolerance divergence the
  // judges called wrong on both): a count has no rounding to share out, so
  // both are blamed rather than left undecided.
  const graph::Program p = MustParse(
      "divfuzz v1\ninput %x: f32[1,7] = values(nan, 0.0, 0.0, 0.0, -0.7, -0.7, 1.5)\n"
      "%v, %i = aten::mode(%x, 1, keepdim=False)\noutput %v, %i\n");
  const ops::TypeEnv t = MustInfer(p);
  exec::RunResult a = exec::Run(p, t, exec::Target::kCpu), b = exec::Run(p, t, exec::Target::kCpu);
  b.target = exec::Target::kCpuScalar;
  value(-0.7f)(a.nodes.back());
  value(1.5f)(b.nodes.back());
  Verdict v = Compare(p, t, a, b, DefaultPolicy());
  Triage(p, t, a, b, DefaultPolicy(), v);
  ASSERT_FALSE(v.Roots().empty());
  EXPECT_EQ(v.Roots()[0]->wrong_side, "both") << v.Roots()[0]->reason;
  EXPECT_EQ(v.Roots()[0]->tier, "bug") << v.Roots()[0]->reason;
}

TEST(ExpectedRules, FloatToIntCastsOutOfRange) {
  auto bump = [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].add(1); };
  Divergence ub = Planted(
      "divfuzz v1\ninput %x: f32[2] = values(1e10, 1.5)\n%y = aten::to.dtype(%x, i32)\noutput %y\n",
      bump);
  EXPECT_EQ(ub.expected_rule, "float_to_int_casts");
  Divergence real = Planted(
      "divfuzz v1\ninput %x: f32[2] = values(7.0, 1.5)\n%y = aten::to.dtype(%x, i32)\noutput %y\n",
      bump);
  EXPECT_NE(real.tier, "expected");
}

// to.other and type_as take the integer dtype from another tensor (run G's
// inf to int64 through to.other: CPU INT64_MIN, CUDA INT64_MAX, pytorch#180159).
TEST(ExpectedRules, FloatToIntCastsThroughAnotherTensorsDtype) {
  auto bump = [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].add(1); };
  for (const char* op : {"aten::to.other", "aten::type_as"}) {
    Divergence ub = Planted(absl::StrCat("divfuzz v1\ninput %x: f32[2] = values(inf, 1.5)\n"
                                         "input %i: i64[2] = values(1, 2)\n%y = ",
                                         op, "(%x, %i)\noutput %y\n"),
                            bump);
    EXPECT_EQ(ub.expected_rule, "float_to_int_casts") << op << ": " << ub.reason;
    Divergence real = Planted(absl::StrCat("divfuzz v1\ninput %x: f32[2] = values(7.0, 1.5)\n"
                                           "input %i: i64[2] = values(1, 2)\n%y = ",
                                           op, "(%x, %i)\noutput %y\n"),
                              bump);
    EXPECT_NE(real.tier, "expected") << op;
  }
}

TEST(ExpectedRules, IllConditionedLinearAlgebra) {
  auto nudge = [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].add(0.5); };
  // Pivot 3: its reciprocal rounds, so elimination rounds (a power-of-two
  // pivot would make it exact, and the exact witness would decide).
  Divergence ill = Planted(
      "divfuzz v1\ninput %m: f32[2,2] = values(3.0, 3.0, 3.0, 3.0000002)\n%d = aten::logdet(%m)\n"
      "output %d\n",
      nudge);
  EXPECT_EQ(ill.expected_rule, "ill_conditioned") << ill.reason;
  Divergence fine = Planted(
      "divfuzz v1\ninput %m: f32[2,2] = values(2.0, 0.0, 0.0, 3.0)\n%d = aten::logdet(%m)\n"
      "output %d\n",
      nudge);
  EXPECT_NE(fine.tier, "expected");
}

TEST(ExpectedRules, ModeratelyConditionedWithinTheForwardErrorBound) {
  // cond 1e4 < 1/eps(f32): a 1e-4 relative error is what n * cond * eps allows
  // (about 0.005 here), a 10% error is not.
  const std::string program =
      "divfuzz v1\ninput %m: f32[5,5] = ill_conditioned(seed=4, cond=1e4)\n"
      "%i = aten::linalg_inv(%m)\noutput %i\n";
  Divergence small =
      Planted(program, [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].mul(1 + 1e-4); });
  EXPECT_EQ(small.tier, "expected") << small.reason;
  EXPECT_EQ(small.expected_rule, "ill_conditioned") << small.reason;
  EXPECT_NE(small.reason.find("2 * n * cond * eps(f32)"), std::string::npos) << small.reason;
  Divergence large =
      Planted(program, [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].mul(1.1); });
  EXPECT_NE(large.tier, "expected") << large.reason;
}

TEST(ExpectedRules, ProductsOverflowOrRoundDependingOnOrder) {
  // 1e30 * 1e30 overflows f32 in this order; the exact product is 1.
  Divergence order = Planted(
      "divfuzz v1\ninput %x: f32[4] = values(1e30, 1e30, 1e-30, 1e-30)\n%p = aten::prod(%x)\n"
      "output %p\n",
      [](exec::NodeResult& n) {
        // Whichever class this CPU's order gives, the other side gets the other.
        const bool inf = std::isinf(n.outputs[0].item<float>());
        n.outputs[0].fill_(inf ? 1.0f : std::numeric_limits<float>::infinity());
      });
  EXPECT_EQ(order.tier, "expected") << order.reason;
  EXPECT_EQ(order.expected_rule, "cancelling_reductions") << order.reason;
  EXPECT_NE(order.reason.find("order of multiplication"), std::string::npos) << order.reason;
  // Factors near 1 cannot overflow: inf there is a bug.
  Divergence inf = Planted(
      "divfuzz v1\ninput %x: f32[4] = values(2, 3, 0.5, 0.25)\n%p = aten::prod(%x)\n"
      "output %p\n",
      [](exec::NodeResult& n) { n.outputs[0].fill_(std::numeric_limits<float>::infinity()); });
  EXPECT_NE(inf.tier, "expected") << inf.reason;
  // 64 factors: orders differ by up to about 64 eps relatively (5e-6 is past
  // the f32 tolerance but within that), not by 10%.
  const std::string scan =
      "divfuzz v1\ninput %x: f32[64] = uniform(seed=3, low=1.5, high=2.0)\n"
      "%c = aten::cumprod(%x, 0)\noutput %c\n";
  Divergence rounding =
      Planted(scan, [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].mul(1 + 5e-6); });
  EXPECT_EQ(rounding.tier, "expected") << rounding.reason;
  Divergence wrong =
      Planted(scan, [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].mul(1.1); });
  EXPECT_NE(wrong.tier, "expected") << wrong.reason;
}

TEST(ExpectedRules, CancellingReductionsWithinTheSummationBound) {
  // sum(1e8, 1, -1e8): 0 and 1 are both correct float32 results of some order.
  Divergence cancel = Planted(
      "divfuzz v1\ninput %x: f32[3] = values(100000000.0, 1.0, -100000000.0)\n%s = aten::sum(%x)\n"
      "output %s\n",
      [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].add(1.0); });
  EXPECT_EQ(cancel.expected_rule, "cancelling_reductions") << cancel.reason;
  Divergence real = Planted(
      "divfuzz v1\ninput %x: f32[3] = values(1.0, 2.0, 3.0)\n%s = aten::sum(%x)\noutput %s\n",
      [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].add(0.5); });
  EXPECT_NE(real.tier, "expected");
  // Near the top of the range, whether a partial sum overflows depends on the order.
  Divergence overflow = Planted(
      "divfuzz v1\ninput %x: f32[3] = values(3e38, 3e38, -3e38)\n%s = aten::sum(%x)\noutput %s\n",
      [](exec::NodeResult& n) {
        const bool inf = std::isinf(n.outputs[0].item<float>());
        n.outputs[0] = at::scalar_tensor(inf ? 3e38 : INFINITY, at::kFloat);
      });
  EXPECT_EQ(overflow.cls, DivergenceClass::kClassSplit);
  EXPECT_EQ(overflow.expected_rule, "cancelling_reductions") << overflow.reason;
  Divergence real_inf =
      Planted("divfuzz v1\ninput %x: f32[2] = values(1.0, 2.0)\n%s = aten::sum(%x)\noutput %s\n",
              [](exec::NodeResult& n) { n.outputs[0] = at::scalar_tensor(INFINITY, at::kFloat); });
  EXPECT_NE(real_inf.tier, "expected");
  // Dot products are sums too.
  Divergence dot = Planted(
      "divfuzz v1\ninput %a: f32[1,3] = values(100000000.0, 1.0, -100000000.0)\n"
      "input %b: f32[3,1] = values(1.0, 1.0, 1.0)\n%c = aten::mm(%a, %b)\noutput %c\n",
      [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].add(1.0); });
  EXPECT_EQ(dot.expected_rule, "cancelling_reductions") << dot.reason;
}

TEST(ExpectedRules, Tf32OnlyWhenCudaRanWithItAndWithinItsRounding) {
  const std::string text =
      "divfuzz v1\ninput %a: f32[2,2] = values(1.0, 2.0, 3.0, 4.0)\n"
      "input %b: f32[2,2] = values(1.0, 0.0, 0.0, 1.0)\n%c = aten::mm(%a, %b)\noutput %c\n";
  // A TF32 product reads 10 mantissa bits: 1e-3 relative is within it.
  auto off = [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].mul(1 + 1e-3); };
  Policy tf32 = DefaultPolicy();
  tf32.cuda_tf32 = true;
  EXPECT_EQ(Planted(text, off, tf32, exec::Target::kCuda).expected_rule, "tf32");
  EXPECT_NE(Planted(text, off, DefaultPolicy(), exec::Target::kCuda).tier, "expected");
  // The side's own +tf32 switch (a campaign rotating --cuda_variants) counts too.
  const exec::CudaVariant* v = exec::FindCudaVariant("tf32");
  ASSERT_NE(v, nullptr);
  const exec::Target with_tf32(exec::Target::kCuda, exec::VariantBit(*v));
  EXPECT_EQ(Planted(text, off, DefaultPolicy(), with_tf32).expected_rule, "tf32");
  // 1% off is no TF32 rounding (session 34's rule had no bound).
  auto far = [](exec::NodeResult& n) { n.outputs[0] = n.outputs[0].mul(1.01); };
  EXPECT_NE(Planted(text, far, DefaultPolicy(), with_tf32).tier, "expected");
  EXPECT_NE(Planted(text, far, tf32, exec::Target::kCuda).tier, "expected");
}

TEST(ExpectedRules, AForcedAttentionKernelThatCannotRunTheCallRaisesByDesign) {
  const std::string text =
      "divfuzz v1\ninput %q: f32[1,2,4] = normal(seed=1)\ninput %k: f32[1,2,4] = normal(seed=2)\n"
      "input %v: f32[1,2,4] = normal(seed=3)\n"
      "%o = aten::scaled_dot_product_attention(%q, %k, %v)\noutput %o\n";
  auto raises = [](const char* message) {
    return [message](exec::NodeResult& n) {
      n.outputs.clear();
      n.error = exec::NodeError{exec::NodeError::Kind::kRaised, message};
    };
  };
  auto with = [](const char* name) {
    return exec::Target(exec::Target::kCuda, exec::VariantBit(*exec::FindCudaVariant(name)));
  };
  // FlashAttention takes float16 and bfloat16 only: f32 under +sdpa_flash raises.
  EXPECT_EQ(Planted(text, raises("Invalid backend"), DefaultPolicy(), with("sdpa_flash"))
                .expected_rule,
            "forced_kernel_unsupported");
  // Under the default switches, or under sdpa_math (the composite runs every
  // call), or with another message, raising is a finding.
  EXPECT_NE(Planted(text, raises("Invalid backend"), DefaultPolicy(), exec::Target::kCuda).tier,
            "expected");
  EXPECT_NE(Planted(text, raises("No available kernel"), DefaultPolicy(), with("sdpa_math")).tier,
            "expected");
  EXPECT_NE(Planted(text, raises("illegal memory access"), DefaultPolicy(), with("sdpa_flash"))
                .tier,
            "expected");
}

// PyTorch's own internal assertion failing is a bug of the side that raised
// it (session 34: linalg_ldl_factor of a zero pivot, pytorch#121683, stayed
// undecided); another raise on one side is judged as before.
TEST(Triage, AnInternalAssertionIsABugOfTheSideThatRaisedIt) {
  // (The CPU asserts on ldl_factor's zero pivot itself: a node the CPU
  // runs, with the assertion planted on side B.)
  const std::string text =
      "divfuzz v1\ninput %a: f32[2,2] = values(4.0, 1.0, 1.0, 3.0)\n"
      "%l, %p = aten::linalg_ldl_factor(%a)\noutput %l, %p\n";
  auto asserts = [](exec::NodeResult& n) {
    n.outputs.clear();
    n.error = exec::NodeError{exec::NodeError::Kind::kRaised,
                              "false INTERNAL ASSERT FAILED at \"BatchLinearAlgebra.cpp\":1642, "
                              "please report a bug to PyTorch. Unknown error code: 1"};
  };
  const Divergence d = Planted(text, asserts, DefaultPolicy(), exec::Target::kCuda);
  EXPECT_EQ(d.tier, "bug") << d.reason;
  EXPECT_EQ(d.wrong_side, "cuda") << d.reason;
  EXPECT_EQ(d.witness, "internal-assert");
  auto raises = [](exec::NodeResult& n) {
    n.outputs.clear();
    n.error = exec::NodeError{exec::NodeError::Kind::kRaised, "linalg.ldl_factor: singular"};
  };
  EXPECT_NE(Planted(text, raises, DefaultPolicy(), exec::Target::kCuda).witness,
            "internal-assert");
  // Fed a NaN, linear algebra may raise anything (the notes): lstsq's
  // internal assertion on MKL's argument check is not a bug there.
  // (A NaN into linear algebra is declined outside the isolated lane: an
  // op the CPU runs on it, the assertion planted.)
  const std::string nan_text =
      "divfuzz v1\ninput %a: f32[2,2] = values(4.0, 1.0, 1.0, nan)\n"
      "%l = aten::sin(%a)\noutput %l\n";
  EXPECT_NE(Planted(nan_text, asserts, DefaultPolicy(), exec::Target::kCuda).witness,
            "internal-assert");
}

TEST(Invariants, DecompositionsIgnoreSignsButNotMagnitudes) {
  graph::Program p = MustParse(
      "divfuzz v1\ninput %m: f64[3,3] = normal(seed=4, mean=0.0, std=1.0)\n"
      "%q, %r = aten::linalg_qr(%m)\noutput %q, %r\n");
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult a = exec::Run(p, t, exec::Target::kCpu), b = a;
  // Flip the sign of Q's first column and R's first row: the same factorization.
  at::Tensor sign = at::tensor(std::vector<double>{-1.0, 1.0, 1.0});
  b.nodes[0].outputs[0] = a.nodes[0].outputs[0].mul(sign);
  b.nodes[0].outputs[1] = a.nodes[0].outputs[1].mul(sign.unsqueeze(1));
  EXPECT_FALSE(Compare(p, t, a, b).Diverged());
  b.nodes[0].outputs[1] = a.nodes[0].outputs[1].mul(1.001);
  EXPECT_TRUE(Compare(p, t, a, b).Diverged());
}

// torch.svd (aten::svd, reached by the generic path) returns V, not Vh, and
// with some=False complete U and V whose extra columns are any basis of the
// complement: a judged CPU campaign had its sign-flipped vectors in the bug
// tier. aten::qr is linalg_qr's older name.
TEST(Invariants, TheOlderSvdAndQrAreComparedThroughTheirInvariantsToo) {
  EXPECT_EQ(ops::DecompositionName("aten::svd"), "svd_v");
  EXPECT_EQ(ops::DecompositionName("aten::qr"), "qr");
  EXPECT_EQ(ops::DecompositionName("aten::linalg_svd"), "svd");
  graph::Program p = MustParse(
      "divfuzz v1\ninput %m: f64[3,4] = normal(seed=4, mean=0.0, std=1.0)\n"
      "%u, %s, %v = aten::svd(%m, False)\noutput %u, %s, %v\n");
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult a = exec::Run(p, t, exec::Target::kCpu), b = a;
  ASSERT_FALSE(a.nodes[0].error) << a.nodes[0].error->message;
  ASSERT_EQ(a.nodes[0].outputs[2].size(-1), 4);  // complete V
  const at::Tensor flip = at::tensor(std::vector<double>{-1.0, 1.0, 1.0});
  b.nodes[0].outputs[0] = a.nodes[0].outputs[0].mul(flip);
  // The same flip of V's first column, and another basis of its last one.
  const at::Tensor flip_v = at::tensor(std::vector<double>{-1.0, 1.0, 1.0, -1.0});
  b.nodes[0].outputs[2] = a.nodes[0].outputs[2].mul(flip_v);
  EXPECT_FALSE(Compare(p, t, a, b).Diverged());
  b.nodes[0].outputs[1] = a.nodes[0].outputs[1].mul(1.001);
  EXPECT_TRUE(Compare(p, t, a, b).Diverged());
}

TEST(Invariants, EigenvaluesAreAMultisetAndLuIsItsProduct) {
  graph::Program p = MustParse(
      "divfuzz v1\ninput %m: f64[4,4] = normal(seed=9, mean=0.0, std=1.0)\n"
      "%w, %v = aten::linalg_eig(%m)\n%pp, %l, %u = aten::linalg_lu(%m)\noutput %w, %v, %u\n");
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult a = exec::Run(p, t, exec::Target::kCpu), b = a;
  // Another order of the same eigenvalues (and their vectors) is the same answer.
  b.nodes[0].outputs[0] = a.nodes[0].outputs[0].flip({0}).contiguous();
  b.nodes[0].outputs[1] = a.nodes[0].outputs[1].flip({1}).contiguous();
  EXPECT_FALSE(Compare(p, t, a, b).Diverged());
  b.nodes[0].outputs[0] = a.nodes[0].outputs[0].mul(1.01);
  EXPECT_TRUE(Compare(p, t, a, b).Diverged());
  b = a;
  b.nodes[1].outputs[2] = a.nodes[1].outputs[2].mul(1.01);
  EXPECT_TRUE(Compare(p, t, a, b).Diverged());
}

// The sides of a decomposition are compared through invariants: the
// reference shown beside their values is the float64 outputs' same
// invariant, not the raw factor at that index (report.md once printed the
// sides' reconstruction beside the reference's U[0,0]).
TEST(Invariants, TheReferenceIsTheSameInvariantOfTheFloat64Outputs) {
  graph::Program p = MustParse(
      "divfuzz v1\ninput %a: f32[2,3] = values(3.0, 1.0, 0.5, -2.0, 4.0, 1.0)\n"
      "%u, %s, %vh = aten::linalg_svd(%a, false)\noutput %u, %s, %vh\n");
  ops::TypeEnv t = MustInfer(p);
  const exec::RunResult b = exec::Run(p, t, exec::Target::kCpuF64);
  const double s0 = at::linalg_svdvals(b.inputs.at("a").to(at::kDouble))[0].item<double>();
  auto judge = [&](int factor) {
    exec::RunResult a = exec::Run(p, t, exec::Target::kCpu);
    a.nodes[0].outputs[factor] = a.nodes[0].outputs[factor].mul(1.01);
    Verdict v = Compare(p, t, a, b);
    Triage(p, t, a, b, DefaultPolicy(), v);
    EXPECT_EQ(v.Roots().size(), 1u);
    return v.Roots().empty() ? Divergence{} : *v.Roots()[0];
  };
  // S off by 1%: the singular values differ, and the reference is s_0.
  Divergence d = judge(1);
  EXPECT_EQ(d.invariant, 0);
  EXPECT_EQ(d.element, 0);
  EXPECT_NE(d.detail.find("the singular values S"), std::string::npos) << d.detail;
  EXPECT_NEAR(std::stod(d.value_a), 1.01 * s0, 1e-5 * s0);
  EXPECT_NEAR(std::stod(d.reference_a), s0, 1e-12 * s0) << d.reference_a;
  EXPECT_NEAR(std::stod(d.reference_b), s0, 1e-12 * s0) << d.reference_b;
  EXPECT_LT(d.ulp_a, 2e5);  // 1% of s_0, in f32 ULPs of s_0 (~1e5), not of a raw factor
  EXPECT_GT(d.ulp_a, 5e4);
  // U off by 1%: only the reconstruction differs; its reference is A itself.
  d = judge(0);
  EXPECT_EQ(d.invariant, 1);
  EXPECT_EQ(d.element, 0);
  EXPECT_NE(d.detail.find("the reconstruction U·diag(S)·Vh"), std::string::npos) << d.detail;
  EXPECT_NEAR(std::stod(d.reference_a), 3.0, 1e-12) << d.reference_a;
  EXPECT_NEAR(std::stod(d.reference_b), 3.0, 1e-12) << d.reference_b;
}

// A float64 program's eig returns complex128: its finding is filed under its
// input's dtype, f64, as every other float64 program's is (f32 for f32).
TEST(Invariants, EigIsBucketedUnderItsInputsDtype) {
  for (const std::string dtype : {"f64", "f32"}) {
    graph::Program p = MustParse(absl::StrCat(
        "divfuzz v1\ninput %m: ", dtype, "[3,3] = values(2.0, 1.0, 0.0, 0.0, 3.0, 1.0, 1.0, 0.0, "
        "4.0)\n%w, %v = aten::linalg_eig(%m)\noutput %w, %v\n"));
    ops::TypeEnv t = MustInfer(p);
    exec::RunResult a = exec::Run(p, t, exec::Target::kCpu);
    const exec::RunResult b = exec::Run(p, t, exec::Target::kCpuF64);
    a.nodes[0].outputs[0] = a.nodes[0].outputs[0].mul(1.01);
    Verdict v = Compare(p, t, a, b);
    Triage(p, t, a, b, DefaultPolicy(), v);
    ASSERT_EQ(v.Roots().size(), 1u) << dtype;
    const Divergence& d = *v.Roots()[0];
    EXPECT_EQ(d.dtype, dtype);
    EXPECT_EQ(Signature(d).rfind("aten::linalg_eig|" + dtype + "|", 0), 0u) << Signature(d);
    // The reference is the float64 spectrum's sorted real part there.
    EXPECT_EQ(d.invariant, 0);
    const at::Tensor re =
        std::get<0>(at::real(b.nodes[0].exact.empty() ? b.nodes[0].outputs[0]
                                                      : b.nodes[0].exact[0])
                        .to(at::kDouble)
                        .sort(-1));
    ASSERT_GE(d.element, 0);
    EXPECT_NEAR(std::stod(d.reference_b), re[d.element].item<double>(), 1e-9) << dtype;
  }
  // Other ops keep their output's dtype (the existing rule): argmax of f32
  // is filed under i64.
  graph::Program p = MustParse(
      "divfuzz v1\ninput %x: f32[3] = values(1.0, 3.0, 2.0)\n"
      "%i = aten::argmax(%x, 0, keepdim=False)\noutput %i\n");
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult a = exec::Run(p, t, exec::Target::kCpu);
  const exec::RunResult b = exec::Run(p, t, exec::Target::kCpuF64);
  a.nodes[0].outputs[0] = a.nodes[0].outputs[0].add(1);
  Verdict v = Compare(p, t, a, b);
  ASSERT_EQ(v.Roots().size(), 1u);
  EXPECT_EQ(v.Roots()[0]->dtype, "i64");
}

TEST(Policy, ShippedFileIsTheDefaultAndOverridesApply) {
  absl::StatusOr<Policy> shipped =
      LoadPolicy(std::string(DIVFUZZ_SOURCE_DIR) + "/oracles/default_policy.json");
  ASSERT_TRUE(shipped.ok()) << shipped.status();
  for (graph::DType d :
       {graph::DType::kF16, graph::DType::kBF16, graph::DType::kF32, graph::DType::kF64}) {
    EXPECT_EQ(shipped->For("aten::exp", d).rtol, DefaultPolicy().For("aten::exp", d).rtol);
    EXPECT_EQ(shipped->For("aten::exp", d).atol, DefaultPolicy().For("aten::exp", d).atol);
  }
  absl::StatusOr<Policy> custom = ParsePolicy(
      R"({"overrides": {"aten::exp": {"f32": {"rtol": 0.5, "atol": 0}}},
          "rules": {"index_ties": false}})",
      "custom.json");
  ASSERT_TRUE(custom.ok()) << custom.status();
  EXPECT_EQ(custom->For("aten::exp", graph::DType::kF32).rtol, 0.5);
  EXPECT_EQ(custom->For("aten::log", graph::DType::kF32).rtol, 1.3e-6);
  EXPECT_FALSE(custom->rules.index_ties);
  absl::StatusOr<Policy> bad =
      ParsePolicy(R"({"defaults": {"f32": {"rtol": -1, "atol": 0}}})", "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.json: expected {\"rtol\""), std::string::npos)
      << bad.status();
  EXPECT_FALSE(ParsePolicy("{not json", "broken.json").ok());
}

TEST(Severity, RanksCrashesFirstAndExpectedLast) {
  Divergence crash, bug_split, bug_tol, div, gap, expected;
  crash.cls = DivergenceClass::kCrash;
  bug_split.cls = DivergenceClass::kClassSplit;
  bug_split.tier = "bug";
  bug_tol.cls = DivergenceClass::kTolerance;
  bug_tol.tier = "bug";
  gap.cls = DivergenceClass::kDtypeGap;
  gap.tier = "dtype_gap";
  expected.tier = "expected";
  const int ranks[] = {SeverityRank(crash), SeverityRank(bug_split), SeverityRank(bug_tol),
                       SeverityRank(div),   SeverityRank(gap),       SeverityRank(expected)};
  for (size_t i = 1; i < std::size(ranks); ++i) EXPECT_LT(ranks[i - 1], ranks[i]);
}

}  // namespace
}  // namespace divfuzz::oracles
