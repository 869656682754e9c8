// References as a catalogue fact (issue 32): ops whose float64 run shares
// the suspect's algorithm get a reference computed in MPFR from their
// documented definition (exec/references/). For each: it agrees with
// libtorch's float64 CPU result on ordinary inputs (so the reference is
// right), and a wrong kernel planted on one side of a float64 program, where
// the float64 reference is the kernel under test and could only say
// "undecided", is blamed on that side through the reference. Real libtorch
// on the CPU; the planted faults are named as such.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/avg_pool2d.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/isclose.h>
#include <ATen/ops/logcumsumexp.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/native_batch_norm.h>
#include <ATen/ops/native_group_norm.h>
#include <ATen/ops/native_layer_norm.h>
#include <ATen/ops/_native_batch_norm_legit.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/zeros.h>

#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <functional>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "exec/exact_reference.h"
#include "exec/executor.h"
#include "exec/references/references.h"
#include "gtest/gtest.h"
#include "ops/catalogue.h"
#include "oracles/attribution.h"
#include "oracles/compare.h"
#include "oracles/policy.h"
#include "oracles/triage.h"
#include "tests/test_util.h"

namespace divfuzz::oracles {
namespace {

using testing::MustInfer;
using testing::MustParse;
using Plant = std::function<void(exec::RunResult&)>;

struct Judged {
  Divergence root;
  bool diverged = false;
};

Judged Judge(const std::string& text, const Plant& plant_b, const Plant& plant_a = {},
             const exec::WitnessPlan* plan = nullptr) {
  graph::Program p = MustParse(text);
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult a = exec::Run(p, t, exec::Target::kCpu);
  exec::RunResult b = exec::Run(p, t, exec::Target::kCpuScalar);
  if (plant_a) plant_a(a);
  plant_b(b);
  Judged j;
  Verdict v = Compare(p, t, a, b);
  Triage(p, t, a, b, DefaultPolicy(), v, plan);
  if (!v.Roots().empty()) {
    j.root = *v.Roots()[0];
    j.diverged = true;
  }
  return j;
}

// The planted fault is blamed on cpu-scalar by the reference, in the bug tier.
void ExpectBlamedByTheReference(const Judged& j) {
  ASSERT_TRUE(j.diverged);
  EXPECT_EQ(j.root.wrong_side, "cpu-scalar") << j.root.reason;
  EXPECT_EQ(j.root.tier, "bug") << j.root.reason;
  EXPECT_EQ(j.root.witness, "exact") << j.root.reason;
  // The reason says which witness decided and why float64 did not.
  EXPECT_TRUE(absl::StrContains(j.root.reason, "cpu-f64 was set aside")) << j.root.reason;
}

// Deliberately faulty: output 0 of node `n` scaled by (1 + rel).
Plant PlantScale(int n, double rel) {
  return [=](exec::RunResult& r) {
    at::Tensor& t = r.nodes[n].outputs[0];
    t = t.mul(1 + rel);
  };
}

// Deliberately faulty: flat element `i` of node `n`'s output 0 set to v.
Plant PlantElement(int n, int64_t i, double v) {
  return [=](exec::RunResult& r) {
    at::Tensor& t = r.nodes[n].outputs[0];
    t = t.clone().contiguous();
    t.view({-1})[i].fill_(v);
  };
}

// The reference of the last node of `text` beside libtorch's float64 CPU
// result of it: equal within `rtol` (and as much absolutely, scaled by 1).
void ExpectAgreesWithLibtorch(const std::string& text, double rtol = 1e-12) {
  SCOPED_TRACE(text);
  graph::Program p = MustParse(text);
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult cpu = exec::Run(p, t, exec::Target::kCpu);
  const int last = static_cast<int>(p.nodes.size()) - 1;
  ASSERT_FALSE(cpu.nodes[last].error.has_value()) << cpu.nodes[last].error->message;
  std::optional<exec::ExactResult> ref =
      exec::RunExact(p.nodes[last], NodeInputs(p, last, cpu), t);
  ASSERT_TRUE(ref.has_value()) << "no reference for " << p.nodes[last].QualifiedName();
  ASSERT_FALSE(ref->result.error.has_value());
  for (size_t o = 0; o < ref->result.outputs.size(); ++o) {  // every output it gives
    ASSERT_LT(o, cpu.nodes[last].outputs.size());
    const at::Tensor want = cpu.nodes[last].outputs[o].to(at::kDouble);
    const at::Tensor got = ref->result.outputs[o].to(at::kDouble);
    ASSERT_EQ(got.sizes(), want.sizes()) << "output " << o;
    const at::Tensor close = at::isclose(got, want, rtol, rtol, /*equal_nan=*/true);
    EXPECT_TRUE(close.all().item<bool>())
        << "output " << o << ": reference\n" << got << "\nlibtorch\n" << want;
  }
}

// --- a. The orthogonal polynomials ---------------------------------------

constexpr const char* kPolynomials[] = {
    "chebyshev_polynomial_t",         "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",         "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
    "hermite_polynomial_h",           "hermite_polynomial_he",
    "laguerre_polynomial_l",          "legendre_polynomial_p"};

TEST(References, OrthogonalPolynomialsAgreeWithLibtorch) {
  for (const char* name : kPolynomials) {
    // Degrees 0 to 12 (recurrence, and the kernels' trigonometric forms past
    // 6 or 8), 40 (Chebyshev's closed form here), -2 (0 in both kernels);
    // x inside and outside [-1, 1], at +-1 and 0.
    ExpectAgreesWithLibtorch(absl::StrCat(
        "divfuzz v1\ninput %x: f64[8,1] = values(-1.0, -0.83, -0.2, 0.0, 0.37, 0.91, 1.0, 1.3)\n"
        "input %n: f64[1,16] = values(-2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,"
        " 11.0, 12.0, 2.9, 40.0)\n",
        "%y = aten::special_", name, "(%x, %n)\noutput %y\n"),
        1e-9);
    // The scalar overloads take the same reference.
    ExpectAgreesWithLibtorch(
        absl::StrCat("divfuzz v1\ninput %x: f64[4] = values(-0.5, 0.25, 0.75, 1.5)\n",
                     "%y = aten::special_", name, ".n_scalar(%x, 5.0)\noutput %y\n"),
        1e-10);
  }
}

TEST(References, AFloat64PolynomialOutsideTheUnitIntervalIsJudged) {
  // legendre_p of degree 30 at 1.7 (about 1.3e13): the float64 reference is
  // the CPU's own recurrence, so before the reference a wrong value on the
  // other side was undecided.
  const std::string text =
      "divfuzz v1\ninput %x: f64[3] = values(1.7, -1.2, 0.4)\n"
      "%y = aten::special_legendre_polynomial_p.n_scalar(%x, 30.0)\noutput %y\n";
  Judged j = Judge(text, PlantScale(0, 1e-3));
  ExpectBlamedByTheReference(j);
  EXPECT_TRUE(absl::StrContains(j.root.reason, "recurrence")) << j.root.reason;
}

TEST(References, AFloat64PolynomialsValueAtANanIsJudged) {
  // pytorch#187761: at a NaN x with n >= 2 the kernels return a variable
  // they never set. Deliberately faulty: cpu-scalar returns such garbage at
  // the NaN element of a float64 program, the cpu side NaN (planted, since
  // the real CPU kernel has the bug too); the reference says NaN.
  const std::string text =
      "divfuzz v1\ninput %x: f64[3] = values(0.3, nan, -0.6)\n"
      "%y = aten::special_chebyshev_polynomial_w.n_scalar(%x, 5.0)\noutput %y\n";
  ExpectBlamedByTheReference(
      Judge(text, PlantElement(0, 1, 12.5), PlantElement(0, 1, std::nan(""))));
  // The real CPU kernel (torch 2.11) beside a side that returns NaN there:
  // the CPU is blamed wherever its unset variable is not NaN.
  Judged real = Judge(text, PlantElement(0, 1, std::nan("")));
  if (real.diverged) {
    EXPECT_EQ(real.root.wrong_side, "cpu") << real.root.reason;
    EXPECT_EQ(real.root.tier, "bug") << real.root.reason;
    EXPECT_EQ(real.root.witness, "exact") << real.root.reason;
  }
}

// --- b. renorm and embedding_renorm --------------------------------------

TEST(References, RenormsAgreeWithLibtorch) {
  for (const char* p : {"1.0", "2.0", "3.0", "inf", "0.5"}) {
    ExpectAgreesWithLibtorch(absl::StrCat(
        "divfuzz v1\ninput %x: f64[4,5] = uniform(seed=7, low=-2, high=2)\n"
        "%y = aten::renorm(%x, ",
        p, ", 0, 1.5)\noutput %y\n"));
  }
  ExpectAgreesWithLibtorch(
      "divfuzz v1\ninput %x: f64[3,4,2] = uniform(seed=9, low=-3, high=1)\n"
      "%y = aten::renorm(%x, 3.0, 1, 2.0)\noutput %y\n");
  for (const char* p : {"1.0", "2.0", "3.0"}) {
    ExpectAgreesWithLibtorch(absl::StrCat(
        "divfuzz v1\ninput %w: f64[5,4] = uniform(seed=11, low=-2, high=1)\n"
        "input %i: i64[4] = values(0, 2, 2, 4)\n"
        "%y = aten::embedding_renorm(%w, %i, 1.0, ",
        p, ")\noutput %y\n"));
  }
}

// Deliberately faulty, as CUDA's embedding_renorm (float64 too): the row
// norm as (sum x^p)^(1/p) without abs, so a row whose cubes sum below 0 has
// a NaN norm and is left unscaled.
Plant PlantCudaEmbeddingRenorm(double max_norm, double p) {
  return [=](exec::RunResult& r) {
    const at::Tensor w = r.inputs.at("w").to(at::kDouble);
    const at::Tensor idx = r.inputs.at("i");
    at::Tensor out = w.clone();
    for (int64_t k = 0; k < idx.numel(); ++k) {
      const int64_t row = idx[k].item<int64_t>();
      const double norm = std::pow(at::pow(w[row], p).sum().item<double>(), 1 / p);
      if (norm > max_norm) out[row] = w[row].mul(max_norm / (norm + 1e-7));
    }
    r.nodes[0].outputs[0] = out.to(r.nodes[0].outputs[0].scalar_type());
  };
}

TEST(References, AFloat64EmbeddingRenormWithNegativeEntriesIsJudged) {
  // p = 3, rows mostly negative: the cubes sum below 0. The abs-free norm is
  // NaN, so the faulty side leaves rows 0 and 2 unscaled.
  const std::string text =
      "divfuzz v1\ninput %w: f64[3,4] = values(-2.0, -1.5, 0.5, -0.25, 0.1, 0.2, 0.1, 0.0, "
      "-3.0, 1.0, -1.0, -0.5)\n"
      "input %i: i64[3] = values(0, 2, 1)\n"
      "%y = aten::embedding_renorm(%w, %i, 1.0, 3.0)\noutput %y\n";
  ExpectBlamedByTheReference(Judge(text, PlantCudaEmbeddingRenorm(1.0, 3.0)));
}

TEST(References, ASecondFloat64WitnessWithTheSameBugVetoesNothing) {
  // float32, a second float64 witness that runs the faulty side's kernel
  // with its bug (as cuda-f64 does for CUDA's embedding_renorm; planted):
  // the two float64 witnesses disagree, which left the finding undecided.
  // The reference decides, and the second witness is not consulted.
  const std::string text =
      "divfuzz v1\ninput %w: f32[3,4] = values(-2.0, -1.5, 0.5, -0.25, 0.1, 0.2, 0.1, 0.0, "
      "-3.0, 1.0, -1.0, -0.5)\n"
      "input %i: i64[3] = values(0, 2, 1)\n"
      "%y = aten::embedding_renorm(%w, %i, 1.0, 3.0)\noutput %y\n";
  exec::WitnessPlan shares_the_bug;
  shares_the_bug.second_f64 = exec::Target::kCudaF64;
  shares_the_bug.second_f64_runner = [](const graph::Node& n,
                                        const std::map<std::string, at::Tensor>& in,
                                        const ops::TypeEnv& t) {
    exec::RunResult r;
    r.inputs = in;
    r.nodes.push_back(exec::RunNode(n, in, t, exec::Target::kCpuF64));
    PlantCudaEmbeddingRenorm(1.0, 3.0)(r);
    return r.nodes[0];
  };
  Judged j = Judge(text, PlantCudaEmbeddingRenorm(1.0, 3.0), {}, &shares_the_bug);
  ASSERT_TRUE(j.diverged);
  EXPECT_EQ(j.root.wrong_side, "cpu-scalar") << j.root.reason;
  EXPECT_EQ(j.root.tier, "bug") << j.root.reason;
  EXPECT_EQ(j.root.witness, "exact") << j.root.reason;
}

TEST(References, AFloat64RenormIsJudged) {
  const std::string text =
      "divfuzz v1\ninput %x: f64[4,5] = uniform(seed=7, low=-2, high=2)\n"
      "%y = aten::renorm(%x, 3.0, 0, 1.5)\noutput %y\n";
  ExpectBlamedByTheReference(Judge(text, PlantScale(0, 1e-3)));
}

// --- c. Hurwitz zeta -------------------------------------------------------

TEST(References, HurwitzZetaAgreesWithLibtorch) {
  ExpectAgreesWithLibtorch(
      "divfuzz v1\ninput %x: f64[6,1] = values(1.0, 1.5, 2.0, 3.7, 10.0, 41.0)\n"
      "input %q: f64[1,6] = values(0.3, 1.0, 2.5, 100.0, 1e6, 7.25)\n"
      "%y = aten::special_zeta(%x, %q)\noutput %y\n",
      1e-12);
  // Negative q: inf at the integers, real for an integer x, NaN otherwise.
  ExpectAgreesWithLibtorch(
      "divfuzz v1\ninput %x: f64[4] = values(2.0, 3.0, 2.5, 0.5)\n"
      "input %q: f64[4] = values(-1.5, -2.0, -0.5, 2.0)\n"
      "%y = aten::special_zeta(%x, %q)\noutput %y\n",
      1e-10);
  ExpectAgreesWithLibtorch(
      "divfuzz v1\ninput %x: f64[3] = values(2.0, 4.0, 6.5)\n"
      "%y = aten::special_zeta.other_scalar(%x, 1.0)\noutput %y\n");
}

TEST(References, AFloat64ZetaThatUnderflowsIsJudged) {
  // zeta(400, 10) = 10^-400 + ... rounds to 0 in float64. Deliberately
  // faulty: cpu-scalar gives NaN there (as CUDA's float32 kernel did where
  // its answer underflowed).
  const std::string text =
      "divfuzz v1\ninput %x: f64[2] = values(400.0, 2.0)\ninput %q: f64[2] = values(10.0, 3.0)\n"
      "%y = aten::special_zeta(%x, %q)\noutput %y\n";
  ExpectBlamedByTheReference(Judge(text, PlantElement(0, 0, std::nan(""))));
}

// --- d. softmax, log_softmax and average pooling ---------------------------

TEST(References, SoftmaxAndPoolingAgreeWithLibtorch) {
  for (const char* op : {"softmax.int", "log_softmax.int", "special_softmax", "special_log_softmax"}) {
    for (const char* dim : {"1", "0", "-1"}) {
      ExpectAgreesWithLibtorch(absl::StrCat(
          "divfuzz v1\ninput %x: f64[3,7] = uniform(seed=3, low=-20, high=20)\n%y = aten::", op,
          "(%x, ", dim, ")\noutput %y\n"));
    }
  }
  ExpectAgreesWithLibtorch(
      "divfuzz v1\ninput %x: f64[2,3,7] = uniform(seed=5, low=-1, high=1)\n"
      "%y = aten::avg_pool1d(%x, [3], [2], [1], True, False)\noutput %y\n");
  for (const char* tail : {"True, False, None", "True, True, None", "False, False, 5",
                           "True, True, 7", "False, True, None"}) {
    ExpectAgreesWithLibtorch(absl::StrCat(
        "divfuzz v1\ninput %x: f64[1,2,5,6] = uniform(seed=5, low=-1, high=1)\n"
        "%y = aten::avg_pool2d(%x, [3, 2], [2, 1], [1, 1], ",
        tail, ")\noutput %y\n"));
  }
  ExpectAgreesWithLibtorch(
      "divfuzz v1\ninput %x: f64[2,4,4,5] = uniform(seed=5, low=-1, high=1)\n"
      "%y = aten::avg_pool3d(%x, [2, 2, 3], [2, 1, 2], [1, 0, 1], True, False, None)\n"
      "output %y\n");
}

TEST(References, AdaptivePoolingAndVarMeanAgreeWithLibtorch) {
  ExpectAgreesWithLibtorch(
      "divfuzz v1\ninput %x: f64[2,3,7] = uniform(seed=5, low=-1, high=1)\n"
      "%y = aten::adaptive_avg_pool1d(%x, [3])\noutput %y\n");
  ExpectAgreesWithLibtorch(
      "divfuzz v1\ninput %x: f64[1,2,5,7] = uniform(seed=5, low=-1, high=1)\n"
      "%y = aten::adaptive_avg_pool2d(%x, [3, 4])\noutput %y\n");
  ExpectAgreesWithLibtorch(
      "divfuzz v1\ninput %x: f64[2,5,4,6] = uniform(seed=5, low=-1, high=1)\n"
      "%y = aten::adaptive_avg_pool3d(%x, [2, 3, 4])\noutput %y\n");
  for (const char* call : {"var_mean(%x, False)", "std_mean(%x, True)",
                           "var_mean.dim(%x, [1], True, True)", "std_mean.dim(%x, [0], False, False)",
                           "var_mean.correction(%x, [1], correction=2, keepdim=False)"}) {
    ExpectAgreesWithLibtorch(
        absl::StrCat("divfuzz v1\ninput %x: f64[3,6] = uniform(seed=31, low=-4, high=9)\n"
                     "%v, %m = aten::",
                     call, "\noutput %v, %m\n"));
  }
}

TEST(References, AFloat64AdaptivePoolIsJudged) {
  const std::string text =
      "divfuzz v1\ninput %x: f64[1,2,5,7] = uniform(seed=5, low=-1, high=1)\n"
      "%y = aten::adaptive_avg_pool2d(%x, [3, 4])\noutput %y\n";
  ExpectBlamedByTheReference(Judge(text, PlantScale(0, 1e-3)));
}

TEST(References, AFloat64LogSoftmaxIsJudged) {
  const std::string text =
      "divfuzz v1\ninput %x: f64[3,7] = uniform(seed=3, low=-20, high=20)\n"
      "%y = aten::log_softmax.int(%x, 1, None)\noutput %y\n";
  ExpectBlamedByTheReference(Judge(text, PlantScale(0, 1e-3)));
}

TEST(References, AFloat64AveragePoolWithTheWrongDivisorIsJudged) {
  // Deliberately faulty: cpu-scalar divides by the padded window size where
  // count_include_pad=False says the window's inputs only.
  const std::string text =
      "divfuzz v1\ninput %x: f64[1,2,5,6] = uniform(seed=5, low=0, high=1)\n"
      "%y = aten::avg_pool2d(%x, [3, 2], [2, 1], [1, 1], True, False, None)\noutput %y\n";
  Plant wrong_divisor = [](exec::RunResult& r) {
    r.nodes[0].outputs[0] = at::avg_pool2d(r.inputs.at("x"), {3, 2}, {2, 1}, {1, 1}, true, true);
  };
  ExpectBlamedByTheReference(Judge(text, wrong_divisor));
}

// --- e. mode and the normalization layers ---------------------------------

TEST(References, ModeAndNormalizationLayersAgreeWithLibtorch) {
  ExpectAgreesWithLibtorch(
      "divfuzz v1\ninput %x: f64[3,6] = values(1.5, 2.0, 1.5, -3.0, 1.5, 2.0, 0.0, 0.0, 7.0, 7.0,"
      " 7.0, -1.0, nan, 4.0, nan, nan, 4.0, 2.0)\n%y, %i = aten::mode(%x, 1, False)\noutput %y\n",
      0);
  ExpectAgreesWithLibtorch(
      "divfuzz v1\ninput %x: f64[2,3,4] = uniform(seed=13, low=-3, high=5)\n"
      "input %w: f64[3,4] = uniform(seed=14, low=0.5, high=2)\n"
      "input %b: f64[3,4] = uniform(seed=15, low=-1, high=1)\n"
      "%y = aten::layer_norm(%x, [3, 4], %w, %b, 1e-05, True)\noutput %y\n",
      1e-10);
  ExpectAgreesWithLibtorch(
      "divfuzz v1\ninput %x: f64[2,6,5] = uniform(seed=16, low=-3, high=5)\n"
      "input %w: f64[6] = uniform(seed=17, low=0.5, high=2)\n"
      "input %b: f64[6] = uniform(seed=18, low=-1, high=1)\n"
      "%y = aten::group_norm(%x, 3, %w, %b, 1e-05, True)\noutput %y\n",
      1e-10);
  for (const char* training : {"True", "False"}) {
    for (const char* op : {"batch_norm", "instance_norm"}) {
      ExpectAgreesWithLibtorch(absl::StrCat(
          "divfuzz v1\ninput %x: f64[4,3,5] = uniform(seed=19, low=-3, high=5)\n"
          "input %w: f64[3] = uniform(seed=20, low=0.5, high=2)\n"
          "input %b: f64[3] = uniform(seed=21, low=-1, high=1)\n"
          "input %m: f64[3] = uniform(seed=22, low=-1, high=1)\n"
          "input %v: f64[3] = uniform(seed=23, low=0.5, high=2)\n"
          "%y = aten::", op, "(%x, %w, %b, %m, %v, ", training, ", 0.1, 1e-05, True)\noutput %y\n"),
          1e-10);
    }
  }
}

TEST(References, AFloat64ModeIsJudged) {
  // Deliberately faulty: cpu-scalar returns the row's second most frequent
  // value for row 1.
  const std::string text =
      "divfuzz v1\ninput %x: f64[2,5] = values(1.0, 2.0, 2.0, 3.0, 2.0, 5.0, 5.0, 5.0, 4.0, 4.0)\n"
      "%y, %i = aten::mode(%x, 1, False)\noutput %y\n";
  // Judged by counting each row (witness mode-count, before any float64
  // run): 4.0 occurs twice where 5.0 occurs three times.
  const Judged j = Judge(text, PlantElement(0, 1, 4.0));
  ASSERT_TRUE(j.diverged);
  EXPECT_EQ(j.root.wrong_side, "cpu-scalar") << j.root.reason;
  EXPECT_EQ(j.root.tier, "bug") << j.root.reason;
  EXPECT_EQ(j.root.witness, "mode-count") << j.root.reason;
}

TEST(References, AFloat64LayerNormIsJudged) {
  const std::string text =
      "divfuzz v1\ninput %x: f64[2,3,4] = uniform(seed=13, low=-3, high=5)\n"
      "%y = aten::layer_norm(%x, [4], None, None, 1e-05, True)\noutput %y\n";
  ExpectBlamedByTheReference(Judge(text, PlantScale(0, 1e-3)));
}

// --- f. the native_* normalizations and rms_norm ----------------------------

// The native_* ops are not in the generated catalogue (exec/generic_ops.cc
// excludes native_ ops), so a program cannot name them: their references are
// called directly on a node built here, with the values they read.
using graph::Literal;
struct NativeCall {
  graph::Node node;
  std::map<std::string, at::Tensor> values;
};

graph::Argument Pos(Literal l) { return {"", std::move(l)}; }

// A tensor argument as a program names it: None where there is none.
graph::Argument Tensor(const NativeCall& c, const std::string& name) {
  auto it = c.values.find(name);
  return Pos(it != c.values.end() && it->second.defined() ? Literal::Value(name) : Literal::None());
}

Literal Ints(std::vector<int64_t> v) {
  std::vector<Literal> items;
  for (int64_t i : v) items.push_back(Literal::Int(i));
  return Literal::List(std::move(items));
}

std::optional<exec::ExactResult> Reference(const NativeCall& c, graph::DType dtype) {
  return exec::exact_internal::RunStructured(c.node.op.substr(6), c.node, c.values, dtype,
                                             at::Tensor());
}

NativeCall LayerNormCall(const at::Tensor& x, std::vector<int64_t> normalized,
                         const at::Tensor& w, const at::Tensor& b, double eps) {
  NativeCall c;
  c.node.op = "aten::native_layer_norm";
  c.node.results = {"y", "m", "r"};
  c.values = {{"x", x}, {"w", w}, {"b", b}};
  c.node.args = {Tensor(c, "x"), Pos(Ints(normalized)), Tensor(c, "w"), Tensor(c, "b"),
                 Pos(Literal::Float(eps))};
  return c;
}

NativeCall GroupNormCall(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                         int64_t groups, double eps) {
  NativeCall c;
  c.node.op = "aten::native_group_norm";
  c.node.results = {"y", "m", "r"};
  c.values = {{"x", x}, {"w", w}, {"b", b}};
  const int64_t n = x.size(0), ch = x.size(1), hw = x.numel() / (n * ch);
  c.node.args = {Tensor(c, "x"),        Tensor(c, "w"),        Tensor(c, "b"),
                 Pos(Literal::Int(n)),  Pos(Literal::Int(ch)), Pos(Literal::Int(hw)),
                 Pos(Literal::Int(groups)), Pos(Literal::Float(eps))};
  return c;
}

NativeCall BatchNormCall(const char* op, const at::Tensor& x, const at::Tensor& w,
                         const at::Tensor& b, const at::Tensor& rm, const at::Tensor& rv,
                         bool training, double eps) {
  NativeCall c;
  c.node.op = std::string("aten::") + op;
  c.node.results = {"y", "m", "r"};
  c.values = {{"x", x}, {"w", w}, {"b", b}, {"rm", rm}, {"rv", rv}};
  c.node.args = {Tensor(c, "x"),  Tensor(c, "w"),  Tensor(c, "b"),
                 Tensor(c, "rm"), Tensor(c, "rv"), Pos(Literal::Bool(training)),
                 Pos(Literal::Float(0.1)), Pos(Literal::Float(eps))};
  return c;
}

// Each output of the reference beside libtorch's: same shape, equal to rtol.
void ExpectOutputs(const std::optional<exec::ExactResult>& ref,
                   const std::vector<at::Tensor>& want, double rtol) {
  ASSERT_TRUE(ref.has_value());
  ASSERT_EQ(ref->result.outputs.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o) {
    const at::Tensor got = ref->result.outputs[o].to(at::kDouble);
    ASSERT_EQ(got.sizes(), want[o].sizes()) << "output " << o;
    EXPECT_EQ(ref->result.outputs[o].scalar_type(), want[o].scalar_type()) << "output " << o;
    EXPECT_TRUE(at::isclose(got, want[o].to(at::kDouble), rtol, rtol).all().item<bool>())
        << "output " << o << ": reference\n" << got << "\nlibtorch\n" << want[o];
  }
}

at::Tensor Uniform(std::vector<int64_t> shape, double low, double high, at::ScalarType t) {
  return at::rand(shape, at::TensorOptions().dtype(at::kDouble)).mul(high - low).add(low).to(t);
}

TEST(References, NativeNormalizationsAndTheirStatisticsAgreeWithLibtorch) {
  at::manual_seed(7);
  const auto f64 = at::kDouble;
  for (int trial = 0; trial < 3; ++trial) {
    const at::Tensor x = Uniform({2, 3, 4}, -3, 5, f64);
    const at::Tensor w = Uniform({3, 4}, 0.5, 2, f64), b = Uniform({3, 4}, -1, 1, f64);
    // mean and rstd in input.shape[:-k] + [1] * k.
    auto [y, m, r] = at::native_layer_norm(x, {3, 4}, w, b, 1e-5);
    ASSERT_EQ(m.sizes(), (std::vector<int64_t>{2, 1, 1}));
    ExpectOutputs(Reference(LayerNormCall(x, {3, 4}, w, b, 1e-5), graph::DType::kF64), {y, m, r},
                  1e-12);
    auto [y1, m1, r1] = at::native_layer_norm(x, {4}, {}, {}, 1e-3);
    ExpectOutputs(Reference(LayerNormCall(x, {4}, at::Tensor(), at::Tensor(), 1e-3),
                            graph::DType::kF64),
                  {y1, m1, r1}, 1e-12);

    const at::Tensor xg = Uniform({2, 6, 5}, -3, 5, f64);
    const at::Tensor wg = Uniform({6}, 0.5, 2, f64), bg = Uniform({6}, -1, 1, f64);
    auto [yg, mg, rg] = at::native_group_norm(xg, wg, bg, 2, 6, 5, 3, 1e-5);
    ASSERT_EQ(mg.sizes(), (std::vector<int64_t>{2, 3}));  // [N, group]
    ExpectOutputs(Reference(GroupNormCall(xg, wg, bg, 3, 1e-5), graph::DType::kF64), {yg, mg, rg},
                  1e-12);

    const at::Tensor xb = Uniform({4, 3, 5}, -3, 5, f64);
    const at::Tensor wb = Uniform({3}, 0.5, 2, f64), bb = Uniform({3}, -1, 1, f64);
    const at::Tensor rm = Uniform({3}, -1, 1, f64), rv = Uniform({3}, 0.5, 2, f64);
    for (const char* op : {"native_batch_norm", "_native_batch_norm_legit"}) {
      for (bool training : {true, false}) {
        SCOPED_TRACE(::testing::Message() << op << " training=" << training);
        at::Tensor m2 = rm.clone(), v2 = rv.clone();  // training updates them in place
        auto out = std::string(op) == "native_batch_norm"
                       ? at::native_batch_norm(xb, wb, bb, m2, v2, training, 0.1, 1e-5)
                       : at::_native_batch_norm_legit(xb, wb, bb, m2, v2, training, 0.1, 1e-5);
        // Training: the batch's mean and 1/sqrt(biased var + eps) per
        // channel; evaluation: empty statistics.
        ASSERT_EQ(std::get<1>(out).numel(), training ? 3 : 0);
        ExpectOutputs(Reference(BatchNormCall(op, xb, wb, bb, rm, rv, training, 1e-5),
                                graph::DType::kF64),
                      {std::get<0>(out), std::get<1>(out), std::get<2>(out)}, 1e-12);
      }
    }
  }
}

TEST(References, ReferenceStatisticsAreExactWhereTheFloat32KernelRounds) {
  // A large common offset with a small spread: float32 statistics lose
  // digits that the reference keeps. Its float32 outputs are within half an
  // ulp of libtorch's float64 kernel on the same float32 values (itself
  // about 1e-11 off here: x - mean cancels); the float32 kernel's y is off by
  // 1e-4 or more.
  at::manual_seed(11);
  const at::Tensor x = Uniform({3, 64}, 1000, 1000.01, at::kFloat);
  auto [y32, m32, r32] = at::native_layer_norm(x, {64}, {}, {}, 1e-5);
  auto [y64, m64, r64] = at::native_layer_norm(x.to(at::kDouble), {64}, {}, {}, 1e-5);
  std::optional<exec::ExactResult> ref =
      Reference(LayerNormCall(x.to(at::kDouble), {64}, at::Tensor(), at::Tensor(), 1e-5),
                graph::DType::kF32);
  ASSERT_TRUE(ref.has_value());
  ASSERT_EQ(ref->result.outputs.size(), 3u);
  const std::vector<at::Tensor> f64 = {y64, m64, r64}, f32 = {y32, m32, r32};
  for (int o = 0; o < 3; ++o) {
    EXPECT_EQ(ref->result.outputs[o].scalar_type(), at::kFloat);
    EXPECT_TRUE(at::isclose(ref->result.exact[o], f64[o], 1e-9, 1e-9).all().item<bool>()) << o;
    // Half a float32 ulp, plus float64's own error (y near 0: x - mean).
    const at::Tensor half_ulp = f64[o].abs().mul(std::ldexp(1.0, -24)).add(1e-9);
    EXPECT_TRUE(ref->result.outputs[o].to(at::kDouble).sub(f64[o]).abs().le(half_ulp)
                    .all().item<bool>()) << o;
  }
  // The float32 kernel's y is off by far more than a rounding of the answer.
  const at::Tensor off = y32.to(at::kDouble).sub(y64).abs();
  EXPECT_GT(off.max().item<double>(), 1e-4) << "float32 rounding is not visible here";
  EXPECT_FALSE(ref->result.outputs[0].equal(y32));
}

TEST(References, APlantedUnbiasedVarianceIsNotMatched) {
  // Deliberately faulty: batch norm's statistics with the unbiased variance
  // (a plausible kernel bug). The reference's 1/sqrt(var + eps) is libtorch's,
  // not the planted one; likewise a planted mean one part in 1e9 off.
  at::manual_seed(5);
  const at::Tensor x = Uniform({4, 3, 5}, -3, 5, at::kDouble);
  std::optional<exec::ExactResult> ref = Reference(
      BatchNormCall("native_batch_norm", x, at::Tensor(), at::Tensor(), at::Tensor(),
                    at::Tensor(), true, 1e-5),
      graph::DType::kF64);
  ASSERT_TRUE(ref.has_value());
  const at::Tensor planted_rstd = x.var(at::IntArrayRef{0, 2}, /*unbiased=*/true).add(1e-5).rsqrt();
  const at::Tensor planted_mean = x.mean(at::IntArrayRef{0, 2}).mul(1 + 1e-9);
  EXPECT_FALSE(at::isclose(ref->result.outputs[2], planted_rstd, 1e-12, 1e-12).any().item<bool>());
  EXPECT_FALSE(at::isclose(ref->result.outputs[1], planted_mean, 1e-12, 1e-12).any().item<bool>());
  auto [y, m, r] = at::native_batch_norm(x, {}, {}, {}, {}, true, 0.1, 1e-5);
  EXPECT_TRUE(at::isclose(ref->result.outputs[2], r, 1e-12, 1e-12).all().item<bool>());
}

TEST(References, NativeNormalizationsOutsideTheirDefinitionAreDeclined) {
  at::manual_seed(3);
  const at::Tensor x = Uniform({2, 6, 5}, -1, 1, at::kDouble);
  // C not divisible by group, and N/C/HxW that do not describe x: the
  // kernels raise; the reference judges nothing.
  EXPECT_FALSE(Reference(GroupNormCall(x, at::Tensor(), at::Tensor(), 4, 1e-5),
                         graph::DType::kF64).has_value());
  NativeCall wrong = GroupNormCall(x, at::Tensor(), at::Tensor(), 3, 1e-5);
  wrong.node.args[5] = Pos(Literal::Int(4));  // HxW
  EXPECT_FALSE(Reference(wrong, graph::DType::kF64).has_value());
  // normalized_shape that is not x's trailing shape.
  EXPECT_FALSE(Reference(LayerNormCall(x, {6}, at::Tensor(), at::Tensor(), 1e-5),
                         graph::DType::kF64).has_value());
  // Evaluation without running statistics.
  EXPECT_FALSE(Reference(BatchNormCall("native_batch_norm", x, at::Tensor(), at::Tensor(),
                                       at::Tensor(), at::Tensor(), false, 1e-5),
                         graph::DType::kF64).has_value());
}

TEST(References, RmsNormAgreesWithLibtorch) {
  // rms_norm is in the catalogue: through a program, eps given and None
  // (float64's epsilon for a float64 input).
  for (const char* tail : {"%w, 1e-06", "%w", "None, None", "None, 0.5"}) {
    ExpectAgreesWithLibtorch(absl::StrCat(
        "divfuzz v1\ninput %x: f64[2,3,4] = uniform(seed=41, low=-3, high=5)\n"
        "input %w: f64[3,4] = uniform(seed=42, low=0.5, high=2)\n"
        "%y = aten::rms_norm(%x, [3, 4], ", tail, ")\noutput %y\n"));
  }
  ExpectAgreesWithLibtorch(
      "divfuzz v1\ninput %x: f64[5,7] = uniform(seed=43, low=-1e-3, high=1e-3)\n"
      "%y = aten::rms_norm(%x, [7])\noutput %y\n");
}

TEST(References, RmsNormsDefaultEpsIsTheInputsOpmathEpsilon) {
  // |x| near 1e-6: float32's epsilon (1.2e-7) against mean(x^2) ~ 1e-12 is
  // most of the denominator; float64's would be nothing. The reference of a
  // float32 program uses float32's, as the float32 kernel does.
  graph::Program p = MustParse(
      "divfuzz v1\ninput %x: f32[2,4] = values(1e-06, -2e-06, 3e-06, 1e-06, 2e-06, 1e-06, "
      "-1e-06, 4e-06)\n%y = aten::rms_norm(%x, [4])\noutput %y\n");
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult cpu = exec::Run(p, t, exec::Target::kCpu);
  std::optional<exec::ExactResult> ref = exec::RunExact(p.nodes[0], NodeInputs(p, 0, cpu), t);
  ASSERT_TRUE(ref.has_value());
  const at::Tensor x = cpu.inputs.at("x").to(at::kDouble);
  const at::Tensor want =
      x.mul(x.pow(2).mean({1}, true).add(std::numeric_limits<float>::epsilon()).rsqrt());
  EXPECT_TRUE(at::isclose(ref->result.exact[0], want, 1e-12, 0).all().item<bool>());
  EXPECT_TRUE(at::isclose(ref->result.outputs[0], cpu.nodes[0].outputs[0], 1e-5, 0)
                  .all()
                  .item<bool>());
}

TEST(References, AFloat64RmsNormIsJudged) {
  const std::string text =
      "divfuzz v1\ninput %x: f64[2,3,4] = uniform(seed=13, low=-3, high=5)\n"
      "%y = aten::rms_norm(%x, [4])\noutput %y\n";
  ExpectBlamedByTheReference(Judge(text, PlantScale(0, 1e-3)));
}

// --- The exact derivative witness through the references -----------------

// d/d%x of the last node of `text` by the exact witness's central
// differences (ExactOptions::derivative_wrt), or nullopt.
std::optional<at::Tensor> ExactDerivative(const std::string& text) {
  graph::Program p = MustParse(text);
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult cpu = exec::Run(p, t, exec::Target::kCpu);
  const int last = static_cast<int>(p.nodes.size()) - 1;
  exec::ExactOptions options;
  options.derivative_wrt = "x";
  std::optional<exec::ExactResult> e =
      exec::RunExact(p.nodes[last], NodeInputs(p, last, cpu), t, options);
  if (!e || e->result.exact.empty()) return std::nullopt;
  return e->result.exact[0];
}

TEST(References, ElementwiseReferencesHaveExactDerivatives) {
  // P_2(x) = (3x^2 - 1)/2: P_2' = 3x; zeta(x, q) in q: -x zeta(x + 1, q).
  std::optional<at::Tensor> d = ExactDerivative(
      "divfuzz v1\ninput %x: f64[2] = values(0.3, -1.7)\n"
      "%y = aten::special_legendre_polynomial_p.n_scalar(%x, 2.0)\noutput %y\n");
  ASSERT_TRUE(d.has_value());
  EXPECT_NEAR((*d)[0].item<double>(), 0.9, 1e-12);
  EXPECT_NEAR((*d)[1].item<double>(), -5.1, 1e-12);
  std::optional<at::Tensor> z = ExactDerivative(
      "divfuzz v1\ninput %x: f64[1] = values(3.0)\n"
      "%y = aten::special_zeta.self_scalar(2.0, %x)\noutput %y\n");
  ASSERT_TRUE(z.has_value());
  // d/dq zeta(2, q) at q = 3: -2 zeta(3, 3) = -2 (zeta(3) - 1 - 1/8).
  EXPECT_NEAR((*z)[0].item<double>(), -2 * (1.2020569031595942 - 1.125), 1e-12);
}

TEST(References, AReferenceThatIsNotElementwiseHasNoDerivative) {
  // Central differences move one element; softmax's or a sum's values
  // are no derivative, and the gradient oracle would take them as one.
  EXPECT_FALSE(ExactDerivative("divfuzz v1\ninput %x: f64[5] = uniform(seed=1, low=-1, high=1)\n"
                               "%y = aten::softmax.int(%x, 0)\noutput %y\n")
                   .has_value());
  EXPECT_FALSE(ExactDerivative("divfuzz v1\ninput %x: f64[5] = uniform(seed=1, low=-1, high=1)\n"
                               "%y = aten::sum(%x)\noutput %y\n")
                   .has_value());
}

TEST(References, OnlyTheRowsHoldingDifferingElementsAreEvaluated) {
  // A softmax row costs an exponential per element: rows where the sides
  // agree are left out (NaN, never compared), as elementwise witnesses do.
  graph::Program p = MustParse(
      "divfuzz v1\ninput %x: f64[3,4] = uniform(seed=2, low=-3, high=3)\n"
      "%y = aten::softmax.int(%x, 1)\noutput %y\n");
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult cpu = exec::Run(p, t, exec::Target::kCpu);
  exec::ExactOptions options;
  options.only = at::zeros({12}, at::kBool);
  options.only[6] = true;  // row 1
  std::optional<exec::ExactResult> e = exec::RunExact(p.nodes[0], NodeInputs(p, 0, cpu), t, options);
  ASSERT_TRUE(e.has_value());
  const at::Tensor y = e->result.outputs[0];
  EXPECT_TRUE(y[0].isnan().all().item<bool>());
  EXPECT_TRUE(y[2].isnan().all().item<bool>());
  EXPECT_TRUE(at::isclose(y[1], cpu.nodes[0].outputs[0][1], 1e-12, 1e-12).all().item<bool>());
}


// logcumsumexp's exact backward (OpSpec::exact_vjp): it agrees with
// libtorch's float64 backward where that formula keeps its digits, and where
// the formula's unshifted exponent does not (session 47's b28b94b2: a row
// (1e15 - 0.125, -0, pi/4, 2 pi), whose exact gradient at its first element
// is 4 to 1e-15, for any shift of x) it stays exact while float64 PyTorch
// rounds log 4 to a multiple of 0.125.
TEST(References, LogcumsumexpHasAnExactBackward) {
  const graph::Program p = MustParse(R"(divfuzz v1
input %x: f64[3,5] = normal(seed=4)
%y = aten::logcumsumexp(%x, 1)
output %y
)");
  // A generator of its own: the default one's state depends on what ran
  // before in the process, and some draws left the f16 check below within
  // 1e-6 (a flaky CI run in session 49).
  at::Generator gen = at::detail::createCPUGenerator(49);
  const at::Tensor x = at::randn({3, 5}, gen, at::kDouble).mul(3.0);
  const at::Tensor v = at::randn({3, 5}, gen, at::kDouble);
  const at::Tensor xg = x.clone().set_requires_grad(true);
  const at::Tensor torch_grad =
      torch::autograd::grad({at::logcumsumexp(xg, 1)}, {xg}, {v})[0];
  std::optional<at::Tensor> e = exec::RunExactVjp(p.nodes[0], {{"x", x}}, v, "x");
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(at::allclose(*e, torch_grad, 1e-12, 1e-12)) << *e << torch_grad;
  // Along dim 0 too (the rows are laid out along the scanned dim).
  graph::Program p0 = MustParse(R"(divfuzz v1
input %x: f64[3,5] = normal(seed=4)
%y = aten::logcumsumexp(%x, 0)
output %y
)");
  const at::Tensor g0 = torch::autograd::grad({at::logcumsumexp(xg, 0)}, {xg}, {v})[0];
  std::optional<at::Tensor> e0 = exec::RunExactVjp(p0.nodes[0], {{"x", x}}, v, "x");
  ASSERT_TRUE(e0.has_value());
  EXPECT_TRUE(at::allclose(*e0, g0, 1e-12, 1e-12)) << *e0 << g0;
  // b28b94b2's row.
  graph::Program big = MustParse(R"(divfuzz v1
input %x: f64[4] = fill(0.0)
%y = aten::logcumsumexp(%x, 0)
output %y
)");
  const at::Tensor xb = at::tensor({1e15 - 0.125, -0.0, M_PI / 4, 2 * M_PI}, at::kDouble);
  const at::Tensor ones = at::ones({4}, at::kDouble);
  std::optional<at::Tensor> eb = exec::RunExactVjp(big.nodes[0], {{"x", xb}}, ones, "x");
  ASSERT_TRUE(eb.has_value());
  EXPECT_NEAR((*eb)[0].item<double>(), 4.0, 1e-14);
  const at::Tensor xbg = xb.clone().set_requires_grad(true);
  const double pytorch =
      torch::autograd::grad({at::logcumsumexp(xbg, 0)}, {xbg}, {ones})[0][0].item<double>();
  EXPECT_GT(std::abs(pytorch - 4.0), 1e-3) << pytorch;  // the formula's own loss
  // A row with a non-finite value is declined (NaN), the others kept.
  at::Tensor xn = x.clone();
  xn[1][2] = std::numeric_limits<double>::infinity();
  std::optional<at::Tensor> en = exec::RunExactVjp(p.nodes[0], {{"x", xn}}, v, "x");
  ASSERT_TRUE(en.has_value());
  EXPECT_TRUE(at::isnan((*en)[1]).all().item<bool>());
  EXPECT_TRUE(at::allclose((*en)[0], torch_grad[0], 1e-12, 1e-12));
  // Another op has none; nor has logcumsumexp with respect to another value.
  EXPECT_FALSE(exec::RunExactVjp(p.nodes[0], {{"x", x}}, v, "other").has_value());
  // From the result a forward saved (rounded to f16 here, as an f16 side's
  // is): sum_j v_j exp(x_i - saved_j), the rounding charged to the forward.
  const at::Tensor xh = x.to(at::kHalf).to(at::kDouble).mul(20.0).to(at::kHalf).to(at::kDouble);
  const at::Tensor saved = at::logcumsumexp(xh, 1).to(at::kHalf).to(at::kDouble);
  std::optional<at::Tensor> es = exec::RunExactVjp(p.nodes[0], {{"x", xh}}, v, "x", saved);
  ASSERT_TRUE(es.has_value());
  at::Tensor by_hand = at::zeros_like(xh);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t i = 0; i < 5; ++i) {
      double sum = 0;
      for (int64_t j = i; j < 5; ++j) {
        sum += v[r][j].item<double>() * std::exp(xh[r][i].item<double>() - saved[r][j].item<double>());
      }
      by_hand[r][i] = sum;
    }
  }
  EXPECT_TRUE(at::allclose(*es, by_hand, 1e-12, 1e-12)) << *es << by_hand;
  EXPECT_FALSE(at::allclose(*es, *exec::RunExactVjp(p.nodes[0], {{"x", xh}}, v, "x"), 1e-6, 1e-6));
}

}  // namespace
}  // namespace divfuzz::oracles
