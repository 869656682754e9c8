// The gradient oracle end to end: a deliberately faulty backward kernel
// (tests/faulty_backward_plugin.cc, relu's threshold_backward on the CPU in
// float32) replayed against the float64 CPU reference.
#include <sys/stat.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <fstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "nlohmann/json.hpp"
#include "exec/executor.h"
#include "graph/printer.h"
#include "oracles/gradient.h"
#include "oracles/policy.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace divfuzz {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunShell;

const std::string kTool = std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz";

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string Replay(const std::string& dir, const std::string& name, const std::string& text,
                   int* exit_code = nullptr) {
  std::ofstream(dir + "/" + name) << text;
  testing::CommandRun r =
      RunShell(kTool + " replay --targets=cpu,cpu-f64 --plugins=" +
               std::string(DIVFUZZ_FAULTY_BACKWARD_PLUGIN) + " " + dir + "/" + name + " 2>&1");
  if (exit_code != nullptr) *exit_code = r.exit_code;
  return r.output;
}

// The same without the faulty plugin: PyTorch's own kernels.
testing::CommandRun ReplayPlain(const std::string& dir, const std::string& name,
                                const std::string& text) {
  std::ofstream(dir + "/" + name) << text;
  return RunShell(kTool + " replay --targets=cpu,cpu-f64 " + dir + "/" + name + " 2>&1");
}

// A program of corpus/regressions/ (a judged real bug) on the CPU pair.
testing::CommandRun ReplayRegression(const std::string& name) {
  return RunShell(kTool + " replay --targets=cpu,cpu-f64 " + std::string(DIVFUZZ_SOURCE_DIR) +
                  "/corpus/regressions/" + name + " 2>&1");
}

TEST(GradientOracle, AWrongBackwardIsABugOnItsSideAtThatBackwardNode) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("wrong_backward");
  int rc = 0;
  const std::string out = Replay(dir, "wrong.dfz", R"(divfuzz v1
input %x: f32[4] = values(0.5, 3.0, -1.0, 2.0)
input %v: f32[4] = fill(1.0)
%s = aten::mul.Scalar(%x, 1.0)
%y = aten::relu(%s)
%z = aten::sin(%y)
%g = autograd::grad(%z, [%x], grad_outputs=%v)
output %g
)", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_THAT(out, HasSubstr("ReluBackward0"));
  EXPECT_THAT(out, HasSubstr("backward of node 1 (aten::relu)"));
  EXPECT_THAT(out, HasSubstr("tier: bug, wrong side: cpu"));
  EXPECT_THAT(out, HasSubstr("witness: cpu-f64"));
}

// Session 52's SincBackward0 f32 36f5833f (judged real on both sides: the
// shared formula cos(πz)/z - sin(πz)/(πz²) cancels near 0): the CPU is 2-3%
// off the exact derivative at elements where moving the formula's
// intermediates by eps would have cleared it. The exact derivative judges
// an elementwise op: a bug on the CPU at SincBackward0.
TEST(GradientOracle, SincsCancellingFormulaIsABugAgainstTheExactDerivative) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const testing::CommandRun r = ReplayRegression("SincBackward0-f32-tolerance-entr.dfz");
  EXPECT_THAT(r.output, HasSubstr("SincBackward0"));
  EXPECT_THAT(r.output, HasSubstr("tier: bug, wrong side: cpu"));
  EXPECT_THAT(r.output, HasSubstr("witness: exact-derivative"));
}

// A CUDA runtime error in a backward where the float64 backward from the
// same inputs runs and the other side agrees with it is a bug on the erring
// side (session 40's G6: CUDA group_norm's backward of an empty input,
// "CUDA error: invalid argument", left undecided). The plugin raises that
// message in hardsigmoid's float32 backward of an empty input; a non-empty
// input is untouched.
TEST(GradientOracle, ACudaRuntimeErrorWhereFloat64RunsIsABugOnItsSide) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("runtime_error_backward");
  int rc = 0;
  const std::string out = Replay(dir, "empty.dfz", R"(divfuzz v1
input %x: f32[2,0,2] = fill(0.0)
input %v: f32[2,0,2] = fill(0.0)
%y = aten::hardsigmoid(%x)
%g = autograd::grad(%y, [%x], grad_outputs=%v)
output %g
)", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_THAT(out, HasSubstr("HardsigmoidBackward0 raises a CUDA runtime error on cpu")) << out;
  EXPECT_THAT(out, HasSubstr("tier: bug, wrong side: cpu")) << out;
  const std::string fine = Replay(dir, "full.dfz", R"(divfuzz v1
input %x: f32[4] = values(0.5, 3.5, -1.0, 2.0)
input %v: f32[4] = fill(1.0)
%y = aten::hardsigmoid(%x)
%g = autograd::grad(%y, [%x], grad_outputs=%v)
output %g
)");
  EXPECT_THAT(fine, HasSubstr("verdict: agree")) << fine;
  // A kernel refusing a layout it runs once the gradient is contiguous: its
  // view of a transposed 2-d gradient (CUDA's ChannelShuffleBackward0), and
  // "Unsupported memory format" for a 3-d one (the CPU's
  // MaxPool3DWithIndicesBackward0 on a 4-d channels_last gradient).
  for (const auto& [shape, values, message] :
       {std::tuple<const char*, const char*, const char*>{
            "f32[2,3]", "0.5, 3.5, -1.0, 2.0, 1.0, -4.0", "view size is not compatible"},
        {"f32[2,3,2]", "0.5, 3.5, -1.0, 2.0, 1.0, -4.0, 0.25, 1.5, -2.0, 2.5, 0.0, -0.5",
         "Unsupported memory format"}}) {
    const std::string layout = Replay(dir, "layout.dfz", absl::StrCat(R"(divfuzz v1
input %x: )", shape, " = values(", values, R"()
input %v: )", shape, R"( layout=transposed = fill(1.0)
%y = aten::hardsigmoid(%x)
%g = autograd::grad(%y, [%x], grad_outputs=%v)
output %g
)"), &rc);
    EXPECT_EQ(rc, 1) << layout;
    EXPECT_THAT(layout, HasSubstr("HardsigmoidBackward0 refuses the layout of its inputs on cpu"))
        << layout;
    EXPECT_THAT(layout, HasSubstr(message)) << layout;
    EXPECT_THAT(layout, HasSubstr("tier: bug, wrong side: cpu")) << layout;
  }
}

// Sessions 46 and 47's bf16 grid_sampler_3d backward (3b30062b, 923a5359;
// judged real on the CPU alone): both sides missed the float64 backward, the
// CPU by rounding its coordinates in bf16, CUDA by its bf16 weights and
// atomic sums. The CPU's float32 backward rounded to bf16 (coordinates in
// opmath, as CUDA forms them) tells them apart: the CPU's bf16 kernel misses
// it, a side that computes as it does (here, it) does not.
TEST(GradientOracle, AHalfGridSamplersBackwardIsJudgedAgainstItsOpmathBackward) {
  const graph::Program p = testing::MustParse(testing::ReadTextFile(
      std::string(DIVFUZZ_SOURCE_DIR) +
      "/corpus/regressions/GridSampler3DBackward0-bf16-tolerance-coordinates.dfz"));
  const ops::TypeEnv types = testing::MustInfer(p);
  const exec::RunResult built = exec::Run(p, types, exec::Target::kCpu);
  const std::map<std::string, at::Tensor> inputs{{"x0", built.inputs.at("x0")},
                                                 {"x1", built.inputs.at("x1")}};
  const std::vector<at::Tensor> incoming{built.inputs.at("ct0").to(at::kBFloat16)};
  const exec::VjpResult cpu =
      exec::RunNodeVjp(p.nodes[0], inputs, incoming, types, exec::Target::kCpu);
  ASSERT_FALSE(cpu.result.error);
  std::map<std::string, at::Tensor> wide;
  for (const auto& [name, t] : inputs) wide[name] = t.to(at::kFloat);
  const exec::VjpResult f32 = exec::RunNodeVjp(p.nodes[0], wide, {incoming[0].to(at::kFloat)},
                                               types, exec::Target::kCpu);
  ASSERT_FALSE(f32.result.error);
  const at::Tensor opmath = f32.result.outputs[0].to(at::kBFloat16);
  const oracles::Policy policy = oracles::DefaultPolicy();
  auto misses = [&](const at::Tensor& judged) {
    return oracles::MissesOpmathBackward(p.nodes[0], types, inputs, incoming, judged, 0,
                                         graph::DType::kBF16, policy, "aten::grid_sampler_3d");
  };
  EXPECT_EQ(misses(cpu.result.outputs[0]), std::optional<bool>(true));
  EXPECT_EQ(misses(opmath), std::optional<bool>(false));
  // The grid gradient: CUDA's kernels accumulate it in the dtype, so the
  // rounded float32 backward does not judge it (session 52's 3b30062b).
  ASSERT_GE(cpu.result.outputs.size(), 2u);
  const at::Tensor grid_grad = cpu.result.outputs[1];
  ASSERT_EQ(grid_grad.sizes(), inputs.at("x1").sizes());
  // Half as large again: it would miss it, were it judged.
  EXPECT_EQ(oracles::MissesOpmathBackward(p.nodes[0], types, inputs, incoming,
                                          (grid_grad.to(at::kFloat) * 1.5).to(at::kBFloat16), 1,
                                          graph::DType::kBF16, policy, "aten::grid_sampler_3d"),
            std::nullopt);
}

// An error split in linear algebra's backward that read inf is the
// forward's nonfinite_inputs (session 40's G6: slogdet's backward solving with
// an inf matrix: LAPACK's LU gives NaN, cuSOLVER raises "singular"); finite
// inputs, or an elementwise op, are not.
TEST(GradientOracle, ANonFiniteInputIntoALinalgBackwardExcusesItsErrorSplit) {
  const graph::Program p = testing::MustParse(R"(divfuzz v1
input %a: f32[2,2] = values(1.0, 2.0, 3.0, 4.0)
input %x: f32[2] = values(1.0, 2.0)
%d = aten::det(%a)
%s = aten::sin(%x)
output %d, %s
)");
  const oracles::Policy policy = oracles::DefaultPolicy();
  const at::Tensor inf = at::tensor({1.0f, INFINITY, 0.5f, 2.0f}).reshape({2, 2});
  const at::Tensor fine = at::tensor({1.0f, 3.0f, 0.5f, 2.0f}).reshape({2, 2});
  const std::vector<at::Tensor> one{at::ones({})};
  const std::optional<std::string> why =
      oracles::NonFiniteIntoLinalgBackward(p.nodes[0], {{"a", inf}}, one, policy);
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("no guarantees")) << *why;
  EXPECT_FALSE(oracles::NonFiniteIntoLinalgBackward(p.nodes[0], {{"a", fine}}, one, policy).has_value());
  EXPECT_TRUE(oracles::NonFiniteIntoLinalgBackward(p.nodes[0], {{"a", fine}},
                                          {at::full({}, INFINITY)}, policy).has_value());
  EXPECT_FALSE(oracles::NonFiniteIntoLinalgBackward(p.nodes[1], {{"x", at::tensor({INFINITY, 1.0f})}},
                                           {at::ones({2})}, policy).has_value());
}

// A statement that raises on one side names the backward kernel that raised
// and the dtype it ran in: hardswish's bf16 backward (the plugin raises
// PyTorch's "not implemented" there), though the statement's first gradient
// is f32. A raise inside an earlier statement's backward is named from
// PyTorch's message.
TEST(GradientOracle, AOneSidedRaiseNamesItsKernelAndTheDtypeItRanIn) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("raising_backward");
  const std::string out = Replay(dir, "gap.dfz", R"(divfuzz v1
input %x: f32[4] = values(0.5, 3.0, -1.0, 2.0)
input %h: bf16[4] = values(0.5, 1.0, -4.0, 2.0)
input %v: f32[4] = fill(1.0)
input %w: bf16[4] = fill(1.0)
%s = aten::sin(%x)
%k = aten::hardswish(%h)
%c = aten::cos(%k)
%gx, %gh = autograd::grad([%s, %c], [%x, %h], grad_outputs=[%v, %w])
output %gx, %gh
)");
  EXPECT_THAT(out, HasSubstr("dtype_gap at node 3 (%gx = HardswishBackward0, bf16)")) << out;
  EXPECT_THAT(out, HasSubstr("backward of node 1 (aten::hardswish): HardswishBackward0 raises on "
                             "cpu only"))
      << out;
  EXPECT_THAT(out, HasSubstr("tier: dtype_gap")) << out;
  const std::string second = Replay(dir, "second.dfz", R"(divfuzz v1
input %x: f32[] = fill(0.0)
input %h: bf16[1,1] = fill(0.0)
input %vh: f32[1,1] = fill(1.0)
input %uh: f32[1,1] = fill(0.0)
%g = aten::i0(%h)
%gh = autograd::grad([%g], [%h], grad_outputs=[%vh])
%ggx, %ggh = autograd::grad([%gh], [%x, %h], grad_outputs=[%uh])
output %ggx
)");
  EXPECT_THAT(second, HasSubstr("dtype_gap at node 2 (%ggx = i1_backward, bf16)")) << second;
}

// The walk reruns each backward in the layouts the run held its values: the
// plugin's hardswish_backward is wrong in float32 for a channels_last input
// only, which a contiguous rerun would not show (no kernel would part the
// sides, and the finding would stay undecided at the statement).
TEST(GradientOracle, ReRunsKeepTheLayoutTheRunHeld) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("layout_backward");
  const std::string out = Replay(dir, "cl.dfz", R"(divfuzz v1
input %x: f32[1,2,3,3] layout=channels_last = uniform(seed=5, low=-2.0, high=2.0)
input %v: f32[1,2,3,3] = fill(1.0)
%k = aten::hardswish(%x)
%c = aten::sin(%k)
%g = autograd::grad([%c], [%x], grad_outputs=[%v])
output %g
)");
  EXPECT_THAT(out, HasSubstr("(%g = HardswishBackward0, f32) [root]")) << out;
  EXPECT_THAT(out, HasSubstr("tier: bug, wrong side: cpu")) << out;
}

TEST(GradientOracle, ReluAtItsKinkIsExpectedWithTheRuleNamed) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("kink");
  const std::string out = Replay(dir, "kink.dfz", R"(divfuzz v1
input %x: f32[4] = values(0.5, 0.0, 3.5, 2.0)
input %v: f32[4] = fill(1.0)
%y = aten::relu(%x)
%g = autograd::grad(%y, [%x], grad_outputs=%v)
output %g
)");
  EXPECT_THAT(out, HasSubstr("ReluBackward0"));
  EXPECT_THAT(out, HasSubstr("tier: expected"));
  EXPECT_THAT(out, HasSubstr("nondifferentiable_point"));
  EXPECT_THAT(out, Not(HasSubstr("tier: bug")));
}

TEST(GradientOracle, TheExactDerivativeOverrulesAFloat64ReferenceThatSharesTheFault) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("exact_derivative");
  int rc = 0;
  // The plugin's sigmoid_backward is 1% high in float64 only: cpu-f64 is the
  // wrong side, and the float64 witness (the same faulty kernel) would blame cpu.
  const std::string out = Replay(dir, "sigmoid.dfz", R"(divfuzz v1
input %x: f32[4] = values(0.5, -1.0, 2.0, 0.25)
input %v: f32[4] = fill(1.0)
%y = aten::sigmoid(%x)
%g = autograd::grad(%y, [%x], grad_outputs=%v)
output %g
)", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_THAT(out, HasSubstr("SigmoidBackward0"));
  EXPECT_THAT(out, HasSubstr("tier: bug, wrong side: cpu-f64"));
  EXPECT_THAT(out, HasSubstr("witness: exact-derivative"));
  EXPECT_THAT(out, HasSubstr("float64 backwards were set aside"));
}

// The cpu-scalar target's backward runs in its helper process, and so do the
// oracle's reruns of one backward kernel from that side's inputs. The
// plugin's sigmoid_backward is wrong in ATen's scalar kernels only in
// float32 (3% high); in float64 it is 5% high there and 1% on cpu, and a
// float64 side is not excused by its own kernel (session 49's 8c799968):
// both are wrong.
TEST(GradientOracle, TheScalarKernelsBackwardIsJudgedAtItsBackwardNode) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("scalar_backward");
  for (const std::string dtype : {"f32", "f64"}) {
    std::ofstream(dir + "/" + dtype + ".dfz") << "divfuzz v1\ninput %x: " << dtype
        << "[4] = values(0.5, -1.0, 2.0, 0.25)\ninput %v: " << dtype
        << "[4] = fill(1.0)\n%y = aten::sigmoid(%x)\n"
           "%g = autograd::grad(%y, [%x], grad_outputs=%v)\noutput %g\n";
  }
  const testing::CommandRun r = RunShell(
      kTool + " replay --targets=cpu,cpu-scalar --plugins=" +
      std::string(DIVFUZZ_FAULTY_BACKWARD_PLUGIN) + " " + dir + "/f32.dfz " + dir + "/f64.dfz 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const size_t f64 = r.output.find("f64.dfz (cpu vs cpu-scalar)");
  ASSERT_NE(f64, std::string::npos) << r.output;
  const std::string f32_out = r.output.substr(0, f64), f64_out = r.output.substr(f64);
  for (const std::string& out : {f32_out, f64_out}) {
    EXPECT_THAT(out, HasSubstr("SigmoidBackward0")) << out;
    EXPECT_THAT(out, HasSubstr("witness: exact-derivative")) << out;
  }
  EXPECT_THAT(f32_out, HasSubstr("tier: bug, wrong side: cpu-scalar")) << f32_out;
  EXPECT_THAT(f64_out, HasSubstr("tier: bug, wrong side: both")) << f64_out;
}

// A CUDA fault while the oracle reruns a backward kernel to judge it poisons
// the worker's context as a fault in the run itself does: nothing of that
// run is judged, and the harness aborts so the supervisor starts a fresh
// worker (session 35: two of C5's error splits were such reruns). The
// plugin's tanh_backward raises the fault's message on its rerun.
TEST(GradientOracle, ACudaFaultWhileTheOracleRerunsABackwardJudgesNothing) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("triage_fault");
  const char* program = R"(divfuzz v1
input %x: f32[4] = values(0.5, 3.0, -1.0, 2.0)
input %v: f32[4] = fill(1.0)
%y = aten::tanh(%x)
%g = autograd::grad(%y, [%x], grad_outputs=%v)
output %g
)";
  const std::string out = Replay(dir, "fault.dfz", program);
  EXPECT_THAT(out, HasSubstr("the CUDA context failed while the backward kernels were rerun"));
  EXPECT_THAT(out, Not(HasSubstr("tier: bug")));
  EXPECT_THAT(out, Not(HasSubstr("tier: expected")));
  // The harness: the worker aborts and files a crash of the gradient
  // statement; no bug or error split.
  const std::string findings = dir + "/findings";
  testing::CommandRun r = RunShell(
      "DIVFUZZ_PLUGINS=" + std::string(DIVFUZZ_FAULTY_BACKWARD_PLUGIN) +
      " DIVFUZZ_TARGETS=cpu,cpu-f64 DIVFUZZ_FINDINGS=" + findings + " " + kTool + " fuzz " + dir +
      "/fault.dfz 2>&1");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("CUDA fault; aborting so the supervisor restarts the worker"));
  std::ifstream index(findings + "/index.jsonl");
  ASSERT_TRUE(index.good()) << findings;
  int crashes = 0;
  for (std::string line; std::getline(index, line);) {
    const nlohmann::json e = nlohmann::json::parse(line);
    EXPECT_EQ(e["class"], "crash") << line;
    crashes += e["class"] == "crash" && e["signature"] == "autograd::grad|f32|crash|cpu-f64";
  }
  EXPECT_EQ(crashes, 1);
}

// A gradient statement that a later one differentiates again runs with
// create_graph, and PyTorch then takes another backward routine: group_norm's
// infinitely_differentiable_native_group_norm_backward rounds rstd^3 in f16
// and gives NaN for a constant group (session 36's 269a22ef, judged real),
// where the fused kernel gives 0. The oracle's reruns take the same routine,
// so they find the kernel; without the later statement nothing diverges.
TEST(GradientOracle, ReRunsTakeTheDifferentiableBackwardWhereTheProgramDid) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("create_graph");
  const std::string head = R"(divfuzz v1
input %x: f16[2,2,1,1] = fill(0.0)
input %w: f16[2] = fill(1.0)
input %b: f16[2] = fill(0.0)
input %v: f32[2,2,1,1] = fill(1.0)
input %s: f32[3] = fill(0.5)
input %ct: f32[3] = fill(1.0)
%y = aten::group_norm(%x, 2, %w, %b)
%dx = autograd::grad(%y, [%x], grad_outputs=%v)
)";
  std::ofstream(dir + "/second.dfz") << head << R"(%z = aten::sin(%s)
%ds = autograd::grad(%z, [%s], grad_outputs=%ct)
output %dx, %ds
)";
  std::ofstream(dir + "/first.dfz") << head << "output %dx\n";
  testing::CommandRun r =
      RunShell(kTool + " replay --targets=cpu,cpu-f64 " + dir + "/second.dfz 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("backward of node 0 (aten::group_norm): "
                                  "NativeGroupNormBackward0"));
  EXPECT_THAT(r.output, HasSubstr("tier: bug, wrong side: cpu"));
  EXPECT_EQ(RunShell(kTool + " replay --targets=cpu,cpu-f64 " + dir + "/first.dfz 2>&1").exit_code,
            0);
}

// Blame measures a side's distance from the exact derivative in the dtype's
// ulps; below the smallest normal the spacing is fixed. sinc's f16 gradient
// at 65504 is -1.0e-7 exactly; the float64 side's -1.19e-7 is its f16
// rounding (a third of a subnormal step), not 195 eps off, so only the CPU's
// NaN is wrong (session 36's SincBackward0 f16 bucket had blamed both).
TEST(GradientOracle, ASubnormalGradientIsMeasuredInItsOwnSpacing) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("subnormal_ulps");
  testing::CommandRun r = ReplayPlain(dir, "sinc.dfz", R"(divfuzz v1
input %h: f16[2] = values(0.5, 0x1.ffcp+15)
input %vh: f32[2] = values(1.0, -0.0065)
%sh = aten::sinc(%h)
%gh = autograd::grad([%sh], [%h], grad_outputs=[%vh])
output %gh
)");
  EXPECT_THAT(r.output, HasSubstr("SincBackward0"));
  EXPECT_THAT(r.output, HasSubstr("wrong side: cpu,"));
  EXPECT_THAT(r.output, Not(HasSubstr("wrong side: both")));
}

// A hardsigmoid output used twice with a cotangent of 3e38: the engine sums
// 3e38 + 3e38 in f32 (inf) before HardsigmoidBackward0 divides by 6, while
// the float64 run carries 6e38 on to 1e38 (session 36's 06e52422, judged
// expected). No kernel parts the sides; the sum does, and the walk names it.
TEST(GradientOracle, TheEnginesSumOfTwoUsesIsARootAndItsOverflowIsExpected) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("accumulation");
  testing::CommandRun r = ReplayPlain(dir, "twice.dfz", R"(divfuzz v1
input %x: f32[2] = fill(0.0)
input %v: f32[2] = values(0x0p+0, 0x1.c363ccp+127)
%hg = aten::hardsigmoid(%x)
%gx = autograd::grad([%hg, %hg], [%x], grad_outputs=[%v, %v])
output %gx
)");
  EXPECT_THAT(r.output, HasSubstr("InputBuffer::add"));
  EXPECT_THAT(r.output, HasSubstr("the autograd engine's sum of the 2 gradients of %hg"));
  EXPECT_THAT(r.output, HasSubstr("rule: gradient_accumulation_overflow"));
  EXPECT_THAT(r.output, HasSubstr("tier: expected"));
}

// Session 37's judged gradient bug tier: three false alarms the rules now
// cover, beside two real bugs that must stay bugs. The engine's sum of x / x's
// two partials cancels in bf16 (gradient_summation, each use's partial
// apart); log10's x · ln10 overflows f16 at 65504 and flushes the gradient
// to 0, but the formula is right below 16x of the range (extremal); so is
// the triplet loss's distance past f32's range. asinh's (x^2 + 1).rsqrt()
// flushes from |x| = 256 (judged real), and linalg_matrix_exp's backward
// loses the gradient to an unscaled block (judged real, no upstream issue).
TEST(GradientOracle, JudgedExpectedGradientsAreExcusedAndJudgedBugsStay) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("judged_gradients");
  auto verdict = [&](const std::string& name, const std::string& text) {
    return ReplayPlain(dir, name, text).output;
  };
  std::string out = verdict("div.dfz", R"(divfuzz v1
input %h: bf16[2,2] = uniform(seed=143, low=-4.0, high=4.0)
input %uh: f32[2,2] = normal(seed=1520884622, mean=0.0, std=1.0)
%q = aten::div.Tensor(%h, %h)
%ggh = autograd::grad([%q], [%h], grad_outputs=[%uh])
output %ggh
)");
  EXPECT_THAT(out, HasSubstr("DivBackward0")) << out;
  EXPECT_THAT(out, HasSubstr("tier: expected, wrong side: cpu, rule: gradient_summation")) << out;
  out = verdict("log10.dfz", R"(divfuzz v1
input %h: f16[2] = values(0x0p+0, 0x1.ffcp+15)
input %vh: f32[2] = values(1.0, -2.1553)
%sh = aten::log10(%h)
%gh = autograd::grad([%sh], [%h], grad_outputs=[%vh])
output %gh
)");
  EXPECT_THAT(out, HasSubstr("Log10Backward0")) << out;
  EXPECT_THAT(out, HasSubstr("rule: gradient_extremal_values")) << out;
  out = verdict("triplet.dfz", R"(divfuzz v1
input %q: f32[1,1,1,1] = fill(3.0000000054977558e+38)
input %k: f32[1,1,2,2] = values(0x0p+0, 0x0p+0, nan, 0x0p+0)
input %v: f32[1,1,1,1] = fill(0.0)
input %c: f32[] = fill(1.0)
%o = aten::triplet_margin_loss(%q, %k, %v)
%gk = autograd::grad([%o], [%k], grad_outputs=[%c])
output %gk
)");
  EXPECT_THAT(out, HasSubstr("rule: gradient_extremal_values")) << out;
  // h / h at a subnormal bf16 h with a zero cotangent: the second use's
  // local derivative -h/h^2 is past the range, and 0 * inf is NaN.
  out = verdict("hh.dfz", R"(divfuzz v1
input %h: bf16[2] = values(1.0, 0x1p-133)
input %uh: f32[2] = fill(0.0)
%q = aten::true_divide.Tensor(%h, %h)
%gh = autograd::grad([%q], [%h], grad_outputs=[%uh])
output %gh
)");
  EXPECT_THAT(out, HasSubstr("DivBackward0")) << out;
  EXPECT_THAT(out, HasSubstr("rule: gradient_extremal_values")) << out;
  const std::string regressions = std::string(DIVFUZZ_SOURCE_DIR) + "/corpus/regressions/";
  // Session 41's rms_norm: the CPU composite's rstd³ underflows (judged real).
  // Session 42's gelu: the CPU's oneDNN backward gives gelu'(x) on a 2^-25
  // grid, 0 at x = -6.16 (judged real, pytorch#187806's family).
  // Session 46's bf16 grid_sampler_3d backward: the CPU rounds its
  // coordinates in bf16 (judged real); 4 eps of the grid had excused it.
  for (const char* bug : {"AsinhBackward0-f16-tolerance.dfz", "LinalgMatrixExpBackward0-f32-tolerance.dfz",
                          "MulBackward0-f32-tolerance-rms_norm.dfz",
                          "GeluBackward0-bf16-tolerance-onednn.dfz",
                          "GridSampler3DBackward0-bf16-tolerance-coordinates.dfz"}) {
    out = RunShell(kTool + " replay --targets=cpu,cpu-f64 " + regressions + bug + " 2>&1").output;
    EXPECT_THAT(out, HasSubstr("tier: bug, wrong side: cpu")) << bug << "\n" << out;
  }
}

// mul(g, g) in f16: each partial is 36928 and their sum 73861 is past the
// range, inf on the f16 side; rounded, the float64 side's value is inf too,
// but its run carries 73861 on and gelu's backward brings it back (session
// 36's 269a22ef, judged expected). The kernel is the root, and expected.
TEST(GradientOracle, AGradientPastTheRangeThatTheReferenceCarriesOnIsRootedWhereItLeft) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("past_range");
  const std::string out = ReplayPlain(dir, "mul.dfz", R"(divfuzz v1
input %h: f16[2,2] = fill(1.0)
input %vh: f32[2,2] = fill(1.0)
input %uh: f32[2,2] = values(0x0p+0, 0x1.01dp+15, 0x0p+0, 0x0p+0)
%g = aten::gelu(%h)
%gh = autograd::grad([%g], [%h], grad_outputs=[%vh])
%q = aten::mul.Tensor(%gh, %gh)
%ggh = autograd::grad([%q], [%h], grad_outputs=[%uh])
output %ggh
)").output;
  EXPECT_THAT(out, HasSubstr("(%ggh = MulBackward0, f16) [root]")) << out;
  EXPECT_THAT(out, HasSubstr("rule: gradient_extremal_values")) << out;
}

// Second order: the later statement's gradient parts the sides inside the
// earlier one's backward, at gelu's double backward (FunctionsManual's
// gelu_double_backward, about 15 ops each rounded to bf16 at h = 1: within
// the rounding of its inputs, session 36's judge). The walk reruns that step
// from each side's own inputs and names it; before, no kernel was found.
TEST(GradientOracle, ASecondOrderDivergenceIsRootedAtTheDoubleBackwardInsideTheFirstStatement) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("second_order");
  const std::string out = ReplayPlain(dir, "gelu.dfz", R"(divfuzz v1
input %h: bf16[1,1] = fill(1.0)
input %vh: f32[1,1] = fill(1.0)
input %uh: f32[1,1] = fill(1.0)
%g = aten::gelu(%h, approximate="tanh")
%gh = autograd::grad([%g], [%h], grad_outputs=[%vh])
%ggh = autograd::grad([%gh], [%h], grad_outputs=[%uh])
output %ggh
)").output;
  EXPECT_THAT(out, HasSubstr("(%ggh = GeluBackwardBackward0, bf16) [root]: double backward of "
                             "node 0 (aten::gelu, inside an earlier gradient statement)"))
      << out;
  EXPECT_THAT(out, HasSubstr("tier: expected")) << out;
  // sigmoid's double backward reads the output y the forward saved, and its
  // (1 - 2y) at y = 0.5000250 amplifies y's f32 rounding 2e4 times: from that
  // y the CPU is right to an ulp. The rounding witness rounds the saved
  // output of the step's inner forward (session 37's judge: the oracle had
  // recomputed an exact y and blamed the CPU).
  const std::string sig = ReplayPlain(dir, "sigmoid.dfz", R"(divfuzz v1
input %x: f32[1] = values(0x1.a36e2ep-14)
input %c: f32[1] = values(0x1.000002p+24)
input %o: f32[1] = fill(1.0)
%s = aten::special_expit(%x)
%gx = autograd::grad([%s], [%x], grad_outputs=[%c])
%g0 = autograd::grad(%gx, [%x], grad_outputs=%o)
output %g0
)").output;
  EXPECT_THAT(sig, HasSubstr("SigmoidBackwardBackward0")) << sig;
  EXPECT_THAT(sig, HasSubstr("rule: gradient_backward_stable")) << sig;
  // The second statement differentiates with respect to %b only: the
  // root is on %b's path (mish's double backward, NaN in f32 at b = 300,
  // where float64 gives 0: exp overflows inside the composite), not relu6's
  // double backward on %x's path, whose NaN input gives a lane-dependent
  // gradient (pytorch#195075's pattern; session 37's judge found the
  // statement rooted there).
  const std::string nan = ReplayPlain(dir, "relu6.dfz", R"(divfuzz v1
input %x: f32[40] = fill(nan)
input %b: f32[1] = fill(300.0)
input %v: f32[40] = fill(0.0)
input %vb: f32[1] = fill(1.0)
input %ct0: f32[40] = fill(1.0)
input %ct1: f32[1] = fill(0.0)
%r6 = aten::relu6(%x)
%bs = aten::mish(%b)
%gx, %gb = autograd::grad([%r6, %bs], [%x, %b], grad_outputs=[%v, %vb])
%g1 = autograd::grad([%gx, %gb], [%b], grad_outputs=[%ct0, %ct1])
output %g1
)").output;
  EXPECT_THAT(nan, Not(HasSubstr("HardtanhBackwardBackward0, f32) [root]"))) << nan;
  EXPECT_THAT(nan, HasSubstr("(aten::mish, inside an earlier gradient statement)")) << nan;
}

// The step inside an earlier statement recomputes its forward, so its
// gradient runs the forward's first-order backward too. Where that kernel
// parts the sides from agreeing incoming gradients, it is the root, named as
// such: the plugin's _softmax_backward_data is wrong for incoming gradients
// above 1e30, which only the second statement's SoftmaxBackward0 receives
// (session 43's softmax double backwards were blamed on
// SoftmaxBackwardDataBackward0, whose outputs were bit-identical).
TEST(GradientOracle, ADoubleBackwardPartingInTheForwardsOwnBackwardIsRootedThere) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("step_forward");
  int rc = 0;
  const std::string out = Replay(dir, "softmax.dfz", R"(divfuzz v1
input %b: f32[2,3] = values(0.1, -0.2, 0.3, 0.0, 0.5, -0.4)
input %c: f32[2,3] = values(1.0, 2.0, -1.0, 0.5, 0.25, 3.0)
input %u: f32[2,3] = values(1e31, -2e31, 3e31, 0.0, 1e31, 0.5)
%p = aten::softmax.int(%b, -1)
%g = autograd::grad(%p, [%b], grad_outputs=%c)
%gg = autograd::grad([%g], [%b], grad_outputs=[%u])
output %gg
)", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_THAT(out, HasSubstr("(%gg = SoftmaxBackward0, f32) [root]: backward of node 0 "
                             "(aten::softmax.int)"))
      << out;
  EXPECT_THAT(out, HasSubstr("tier: bug, wrong side: cpu")) << out;
}

// Session 45's recall audit: C3's ToCopyBackward0 bf16 (e712d0d9), the CPU's
// rms_norm composite at |x| ~ 1e18, whose rstd³ = 1.7e-54 underflows float32
// and drops a whole term (-5.9e-19 for an exact -2.4e-5), had been excused
// by bounds in bf16's eps: gradient_normalization_statistics' and
// gradient_summation's (2·n·eps = 2 at n = 128). rms_norm computes in
// float32 (ops::kComputesInOpmath), so its bounds take float32's eps, and a
// bound whose n makes 2·n·eps >= 1 excuses nothing.
TEST(GradientOracle, AnRmsNormComputingInFloat32IsNotExcusedByBf16Bounds) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("rms_norm_opmath");
  int rc = 0;
  const std::string out = Replay(dir, "rms.dfz", R"(divfuzz v1
input %f: bf16[1,32] = normal(seed=65, mean=0.0, std=1e+18)
input %vf: f32[1,32] = edges(seed=2862473739)
%yf = aten::rms_norm(%f, [32])
%gf = autograd::grad([%yf], [%f], grad_outputs=[%vf])
output %gf
)", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_THAT(out, HasSubstr("(%gf = ToCopyBackward0, bf16) [root]: backward of node 0 "
                             "(aten::rms_norm)"))
      << out;
  EXPECT_THAT(out, HasSubstr("tier: bug, wrong side: cpu")) << out;
}

// A statement's gradient is compared with the loosest policy entry of the
// ops whose backward it runs: erfc's backward -2/sqrt(pi)·exp(-x²)·g in f16
// is 3 ulps off at x = -2.2 (session 37's judge: f16 rounding of x², within
// OpInfo's f16 precisionOverride of 1e-2 for special.erfc), and erfc's own
// kernel passes under that entry; the statement failed the default 1e-3.
TEST(GradientOracle, AStatementHasTheToleranceOfTheOpsOnItsPath) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("path_tolerance");
  testing::CommandRun r = ReplayPlain(dir, "erfc.dfz", R"(divfuzz v1
input %h: f16[2] = values(0.0, -0x1.19cp+1)
input %vh: f32[2] = fill(1.0)
%sh = aten::special_erfc(%h)
%gh = autograd::grad([%sh], [%h], grad_outputs=[%vh])
output %gh
)");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("verdict: agree")) << r.output;
}

// One statement, two inputs, two real bugs on two paths: sinc's backward
// cancels to 0 at x = 1e-5 in f32 and asinh's (x² + 1).rsqrt() flushes to 0
// at -59904 in f16 (both judged real). Each input's gradient is a root of
// its own, rooted on its own path; before, the statement had one root, at
// whichever kernel the walk met first.
TEST(GradientOracle, EachDivergingGradientOfAStatementIsRootedOnItsOwnPath) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("two_paths");
  const std::string out = ReplayPlain(dir, "two.dfz", R"(divfuzz v1
input %x: f32[2] = values(1e-05, 0.5)
input %h: f16[2] = values(-59904.0, 1.0)
input %v: f32[2] = fill(1.0)
input %vh: f32[2] = fill(1.0)
%s = aten::sinc(%x)
%a = aten::arcsinh(%h)
%gx, %gh = autograd::grad([%s, %a], [%x, %h], grad_outputs=[%v, %vh])
output %gx, %gh
)").output;
  EXPECT_THAT(out, HasSubstr("(%gx = SincBackward0, f32) [root]")) << out;
  EXPECT_THAT(out, HasSubstr("(%gh = AsinhBackward0, f16) [root]")) << out;
}

// norm_backward at p = 0.5 multiplies |x|^(p-1) by the incoming gradient
// before the norm's factor: 1e40 in float32 where the gradient is 1e30. The
// CPU's inf is an intermediate past the range, found by rerunning its own
// backward under the RecordFunction observer; it was a bug before.
TEST(GradientOracle, AnIntermediatePastTheRangeInsideABackwardFormulaIsExtremal) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("intermediate_overflow");
  const testing::CommandRun r = ReplayPlain(dir, "norm.dfz", R"(divfuzz v1
input %x: f32[2] = values(1e-20, 1e-30)
input %v: f32[] = fill(1e25)
%y = aten::linalg_vector_norm(%x, 0.5)
%g = autograd::grad(%y, [%x], grad_outputs=%v)
output %g
)");
  EXPECT_THAT(r.output, HasSubstr("LinalgVectorNormBackward0"));
  EXPECT_THAT(r.output, HasSubstr("tier: expected, wrong side: cpu, rule: gradient_intermediate_overflow"));
  EXPECT_THAT(r.output, HasSubstr("aten::mul.Tensor turns finite f32 inputs"));
}

// Session 39's G3: nuclear_norm's double backward of a rank-deficient matrix
// (inside the first statement, named PermuteBackward0) inherits the
// forward's conditioning; the rule had looked the step's own node up and
// found no linear algebra there.
TEST(GradientOracle, ADoubleBackwardOfLinearAlgebraInheritsItsConditioning) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("nuclear_double_backward");
  const testing::CommandRun r = ReplayPlain(dir, "nuclear.dfz", R"(divfuzz v1
input %f: f32[1,2,3,5] = values(0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x1p+0, 0x0p+0, 0x1p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x1p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x1p+0, 0x0p+0, 0x0p+0)
input %ct0: f32[1,2,3,5] = values(0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x1.158e46p+64, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0)
input %ct4: f32[1,2] = fill(1.0)
%yf = aten::nuclear_norm(%f)
%gf = autograd::grad([%yf], [%f], grad_outputs=[%ct4])
%g0 = autograd::grad([%gf], [%f], grad_outputs=[%ct0])
output %g0
)");
  EXPECT_THAT(r.output, HasSubstr("inside an earlier gradient statement"));
  EXPECT_THAT(r.output, HasSubstr("tier: expected, wrong side: cpu, rule: gradient_conditioning"));
}

// Real logcumsumexp bugs of corpus/regressions stay bugs, each beside the
// rule that had excused it:
// - session 38's f16 (judged REAL, both): the backward at 5000 forms
//   exp(12) = inf where the exact exponent gives 22000. The float64 run holds
//   -inf where the gradient is 0 (log 0) and float64's own lowest() where the
//   formula masks; neither is an intermediate past f16's range, so
//   gradient_intermediate_overflow must not excuse it;
// - session 39's G3 f32 (judged real, both devices): at 2.0e7, where f32's
//   spacing is 2, it keeps no digit of the exact 2.6 (the CPU gives 6.4).
//   gradient_backward_stable's hull, four eps of x moving the exponent by 9,
//   had cleared the CPU; the scan-carry rule alone judges it;
// - session 47's d34b0677 f16 (judged real, both): 20.08 for the exact 19,
//   from the formula's unshifted exponent, which gradient_scan_carry had
//   excused at M = |x|. The exact backward is its witness.
TEST(GradientOracle, LogcumsumexpBackwardRegressionsStayBugs) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::pair<const char*, const char*> cases[] = {
      {"LogcumsumexpBackward0-f16-class_split.dfz", "gradient_intermediate_overflow"},
      {"LogcumsumexpBackward0-f32-tolerance.dfz", "rule: gradient_backward_stable"},
      {"LogcumsumexpBackward0-f16-tolerance-unshifted.dfz", "rule: gradient_scan_carry"}};
  for (const auto& [file, excuse] : cases) {
    const testing::CommandRun r = ReplayRegression(file);
    EXPECT_THAT(r.output, HasSubstr("LogcumsumexpBackward0")) << file;
    EXPECT_THAT(r.output, HasSubstr("tier: bug")) << file;
    EXPECT_THAT(r.output, Not(HasSubstr(excuse))) << file;
  }
  const testing::CommandRun r = ReplayRegression("LogcumsumexpBackward0-f16-tolerance-unshifted.dfz");
  EXPECT_THAT(r.output, HasSubstr("tier: bug, wrong side: cpu")) << r.output;
  EXPECT_THAT(r.output, HasSubstr("witness: exact-derivative")) << r.output;
}

// Sessions 38 and 39: a statement asks for the gradient of an unrelated %c
// (0, as torch.autograd.grad gives); the executor's captures, kept to
// localize divergences, also asked for %kh's, which runs the CPU's flash
// attention backward twice, and it has no double backward. The statement
// raised on both sides; its own gradients alone do not.
TEST(GradientOracle, CapturesThatRaiseDoNotFailTheStatement) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("capture_raises");
  const testing::CommandRun r = ReplayPlain(dir, "capture.dfz", R"(divfuzz v1
input %qh: f16[1,1,1,1] = fill(0.0)
input %kh: f16[1,1,1,1] = fill(0.0)
input %vh: f16[1,1,1,1] = fill(0.0)
input %ch: f32[1,1,1,1] = fill(1.0)
input %c: f32[] = fill(0.0)
input %ct0: f32[1,1,1,1] = fill(1.0)
%oh = aten::scaled_dot_product_attention(%qh, %kh, %vh)
%gkh = autograd::grad([%oh], [%kh], grad_outputs=[%ch])
%g1 = autograd::grad([%gkh], [%c], grad_outputs=[%ct0])
output %g1
)");
  EXPECT_THAT(r.output, Not(HasSubstr("not implemented"))) << r.output;
  EXPECT_THAT(r.output, HasSubstr("verdict: agree"));
}

TEST(GradientOracle, WithoutTheFaultyKernelNothingDiverges) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("no_fault");
  std::ofstream(dir + "/ok.dfz") << R"(divfuzz v1
input %x: f32[4] = values(0.5, 3.0, 0.0, 2.0)
input %v: f32[4] = fill(1.0)
%y = aten::relu(%x)
%g = autograd::grad(%y, [%x], grad_outputs=%v)
output %g
)";
  testing::CommandRun r = RunShell(kTool + " replay --targets=cpu,cpu-f64 " + dir + "/ok.dfz 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Session 43's ConvolutionBackward0 bf16 (judged real, found in the expected
// tier): the CPU's oneDNN bf16 convolution backward (on AVX512-BF16) reads a
// subnormal incoming gradient, 2^-128, as 0 and gives 0 where the exact
// gradient is -0x1.c4p+127 · 2^-128 = -0.8828125. A weight of 3e38 and a
// float64 gradient past bf16's range at other elements had excused it as
// extremal values; the 0 stays when those large values are scaled down.
// Only on a CPU whose bf16 convolution backward flushes so.
TEST(GradientOracle, AFlushThatStaysWithoutTheLargeValuesIsABug) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  {
    at::Tensor x = at::zeros({1, 1, 1, 1}, at::kBFloat16).requires_grad_(true);
    const at::Tensor w = at::full({1, 1, 1, 1}, 1.0, at::kBFloat16);
    const at::Tensor ct = at::full({1, 1, 1, 1}, std::ldexp(1.0, -128), at::kBFloat16);
    const at::Tensor g = torch::autograd::grad({at::conv2d(x, w)}, {x}, {ct})[0];
    if (g.item<float>() != 0) GTEST_SKIP() << "this CPU's bf16 convolution keeps subnormals";
  }
  const std::string dir = testing::TempDir("conv_flush");
  const std::string out = ReplayPlain(dir, "conv.dfz", R"(divfuzz v1
input %xb: bf16[1,3,8,6] = fill(0.0)
input %wb: bf16[5,3,1,1] = values(0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, -0x1.c4p+127, 0x0p+0, 0x0p+0)
input %ct0: bf16[1,5,4,3] = planted(seed=1944089658)
%yb = aten::conv2d(%xb, %wb, None, [3, 3], [1, 1])
%gxb = autograd::grad([%yb], [%xb], grad_outputs=[%ct0])
output %gxb
)").output;
  EXPECT_THAT(out, HasSubstr("ConvolutionBackward0")) << out;
  EXPECT_THAT(out, HasSubstr("tier: bug, wrong side: cpu")) << out;
}

// Session 43's AcosBackward0 c64 (judged expected): acos's backward forms
// 1 - z·z, which overflows both components of c64 at z = 1.5 + 1.7e38i; the
// CPU's complex rsqrt of (inf, -inf) gives NaN where CUDA's gives 0
// (pytorch#156152), and the gradient (incoming 0) is -0. A complex operand
// within 16x of the range is extremal, by its modulus.
TEST(GradientOracle, AComplexOperandNearTheRangeIsExtremal) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("complex_extremal");
  const std::string out = ReplayPlain(dir, "acos.dfz", R"(divfuzz v1
input %xb: bf16[1,3,5,5] = fill(0.0)
input %wb: bf16[4,3,1,1] = fill(0.0)
input %vb: f32[1,4,3,3] = fill(0.0)
input %x16: c64[4,1] = special(seed=2844540516)
input %ct0: f32[1,3,5,5] = fill(1.0)
input %ct1: c64[4,1] = fill(0.0)
%yb = aten::conv2d(%xb, %wb, None, [3, 3], [1, 1])
%gxb = autograd::grad([%yb], [%xb], grad_outputs=[%vb])
%v17 = aten::arccos(%x16)
%g0 = autograd::grad([%gxb, %v17], [%x16], grad_outputs=[%ct0, %ct1])
output %g0
)").output;
  EXPECT_THAT(out, HasSubstr("AcosBackward0")) << out;
  EXPECT_THAT(out, HasSubstr("tier: expected, wrong side: cpu, rule: gradient_extremal_values"))
      << out;
}

// Session 38's MulBackward1 bucket (8eed812d), reduced on a 2xH200 host: the
// double backward of attention over constant values, exactly 0, where the
// CPU's f32 gives 1.9e-5 (the order of its sums over the keys).
TEST(GradientOracle, AttentionDoubleBackwardResidueIsTheOrderOfTheKeys) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("attention_order");
  const std::string out = ReplayPlain(dir, "sdpa.dfz", R"(divfuzz v1
input %q: f32[1,1,6,2] = values(0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, -0x1.4p+3)
input %k: f32[1,1,6,2] = values(0x0p+0, 0x0p+0, 0x0p+0, -0x1p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0)
input %v: f32[6,2] = fill(1.0)
input %ct5: f32[1,1,6,2] = fill(1.0)
input %ct6: f32[1,1,6,2] = fill(1.0)
input %ct2: f32[1,1,6,2] = fill(1.0)
%o = aten::scaled_dot_product_attention(%q, %k, %v, scale=1.0)
%gq, %gk = autograd::grad([%o], [%q, %k], grad_outputs=[%ct2])
%g5 = autograd::grad([%gq, %gk], [%k], grad_outputs=[%ct5, %ct6])
output %g5
)").output;
  EXPECT_THAT(out, HasSubstr("double backward of node 0 (aten::scaled_dot_product_attention"));
  EXPECT_THAT(out, HasSubstr("rule: gradient_attention_key_order")) << out;
}


}  // namespace

// Session 47's 923a5359: the report named element 3, where the blamed CPU was
// the closer side (CUDA's miss there excused by a rule); the judge found
// element 16, the CPU 14% off and CUDA 0.2%. A bug blamed on one side is
// shown where that side alone misses.
TEST(GradientOracle, ABugIsShownWhereTheBlamedSideAloneMisses) {
  const at::Tensor ref = at::tensor({1.0, 2.0, 3.0, 4.0, 5.0}, at::kDouble);
  const at::Tensor cpu = at::tensor({1.0f, 2.0f, 3.001f, 4.0f, 5.7f});  // 14% off at 4
  const at::Tensor cuda = at::tensor({1.0f, 2.0f, 3.06f, 4.0f, 5.001f});  // 2% off at 2
  oracles::Divergence d;
  d.cls = oracles::DivergenceClass::kTolerance;
  d.element = 2;
  const oracles::Tolerance tol{1e-3, 1e-5};
  ASSERT_TRUE(oracles::ShowWhereTheBlamedSideAloneMisses(d, /*a_blamed=*/true, cpu, cuda, ref, ref,
                                                at::Tensor(), tol, graph::DType::kF32));
  EXPECT_EQ(d.element, 4);
  EXPECT_EQ(d.value_a, graph::FormatFloat(5.7f));
  EXPECT_EQ(d.value_b, graph::FormatFloat(5.001f));
  EXPECT_NEAR(d.rel_a, 0.14, 1e-6);
  EXPECT_NEAR(d.rel_b, 0.0002, 1e-6);
  // Blamed on CUDA instead: element 2 is where it alone misses; d is there.
  oracles::Divergence e = d;
  e.element = 2;
  EXPECT_FALSE(oracles::ShowWhereTheBlamedSideAloneMisses(e, false, cpu, cuda, ref, ref, at::Tensor(), tol,
                                                 graph::DType::kF32));
  EXPECT_EQ(e.element, 2);
  // Nowhere alone (both off everywhere the blamed side is): d stays.
  oracles::Divergence f = d;
  f.element = 0;
  EXPECT_FALSE(oracles::ShowWhereTheBlamedSideAloneMisses(f, true, cpu, cpu, ref, ref, at::Tensor(), tol,
                                                 graph::DType::kF32));
  EXPECT_EQ(f.element, 0);
  // Only the elements where the sides differ count.
  oracles::Divergence g = d;
  g.element = 0;
  const at::Tensor only_two = at::tensor({0, 0, 1, 0, 0}).to(at::kBool);
  EXPECT_FALSE(oracles::ShowWhereTheBlamedSideAloneMisses(g, true, cpu, cuda, ref, ref, only_two, tol,
                                                 graph::DType::kF32));
}


// Session 48's judge: MseLossBackward0, HuberLossBackward0 and AddrBackward0
// raise on the CPU for mixed dtypes their forwards took and promoted
// (mse_loss(f16, f32) is f32; its backward: "Found dtype Float but expected
// Half"; pytorch#94086, #76646, #76785, open). The float64 side's inputs are
// one dtype, so only the CPU raises: a bug there, not an undecided split.
TEST(GradientOracle, ABackwardRefusingTheDtypesItsForwardTookIsABug) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("mixed_dtype_backward");
  // mse_loss of an f16 input against a target of `target` dtype.
  auto mse = [&](const std::string& name, const std::string& target) {
    return ReplayPlain(dir, name, "divfuzz v1\ninput %x: f16[4] = values(0.5, 1.0, 2.0, -1.0)\n"
                       "input %t: " + target + "[4] = values(0.25, 1.5, 2.0, 0.0)\n"
                       "input %v: " + target + "[] = fill(1.0)\n%y = aten::mse_loss(%x, %t)\n"
                       "%g = autograd::grad([%y], [%x], grad_outputs=[%v])\noutput %g\n")
        .output;
  };
  const std::string out = mse("mse.dfz", "f32");
  EXPECT_THAT(out, HasSubstr("MseLossBackward0 raises on cpu only")) << out;
  EXPECT_THAT(out, HasSubstr("tier: bug, wrong side: cpu")) << out;
  EXPECT_THAT(out, HasSubstr("refuses on cpu the dtypes (Float, Half) its forward took")) << out;
  // One dtype throughout: the backward runs, nothing to judge.
  const std::string same = mse("same.dfz", "f16");
  EXPECT_THAT(same, Not(HasSubstr("raises on"))) << same;
}

}  // namespace divfuzz
