// Pairs only some device accepts (issue 19): the learned table's per-device
// counts, their generation, replay of the programs that show them, and how
// the oracle files a one-sided error (faulty targets in tests/faulty_targets).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "exec/executor.h"
#include "fuzz/harness/harness.h"
#include "graph/printer.h"
#include "gtest/gtest.h"
#include "mutators/mutator.h"
#include "ops/catalogue.h"
#include "ops/generic.h"
#include "ops/infer.h"
#include "oracles/compare.h"
#include "oracles/triage.h"
#include "tests/faulty_targets.h"
#include "tests/test_util.h"

namespace divfuzz {
namespace {

using graph::DType;
using testing::MustInfer;
using testing::MustParse;

const std::string kTool = std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz";

TEST(PerDeviceTable, CountsPerDeviceRoundTrip) {
  ops::GenericOp op;
  op.name = "aten::angle";
  ops::GenericForm gap{DType::kF16, ops::ShapeForm::kSame1, 0, 3};
  gap.per_device = {{"cpu", 3}, {"cuda", 0}};
  ops::GenericForm both{DType::kF32, ops::ShapeForm::kSame2, 3, 3};
  both.per_device = {{"cpu", 3}, {"cuda", 3}};
  op.forms = {gap, both};
  const std::string text = ops::FormatGenericTable({op}, "cpu,cuda");
  EXPECT_NE(text.find("f16:same1:0/3:cpu=3:cuda=0"), std::string::npos) << text;
  auto table = ops::ParseGenericTable(text);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->size(), 1u);
  const std::vector<ops::GenericForm>& forms = (*table)[0].second;
  ASSERT_EQ(forms.size(), 2u);
  EXPECT_EQ(forms[0].per_device, gap.per_device);
  EXPECT_EQ(forms[1].per_device, both.per_device);
  op.forms = forms;
  EXPECT_EQ(ops::FormatGenericTable({op}, "cpu,cuda"), text);
  // A table learned before devices were counted apart still reads.
  auto legacy = ops::ParseGenericTable("aten::exp f32:same2:3/3\n");
  ASSERT_TRUE(legacy.ok()) << legacy.status();
  EXPECT_TRUE((*legacy)[0].second[0].per_device.empty());
  // A device count outside accepted..tried is an error naming the line.
  auto bad = ops::ParseGenericTable("# devices: cpu,cuda\naten::exp f32:same2:1/3:cpu=4\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("op table:2"), std::string::npos) << bad.status();
}

TEST(PerDeviceTable, OneDeviceAcceptingKeepsTheFormAsOneSided) {
  auto form = [](int accepted, int tried, int cpu, int cuda) {
    ops::GenericForm f{DType::kF16, ops::ShapeForm::kSame1, accepted, tried};
    f.per_device = {{"cpu", cpu}, {"cuda", cuda}};
    return f;
  };
  EXPECT_EQ(ops::UseOf(form(3, 3, 3, 3)), ops::FormUse::kKept);
  EXPECT_EQ(ops::UseOf(form(0, 3, 3, 0)), ops::FormUse::kOneSided);  // a dtype gap on CUDA
  EXPECT_EQ(ops::UseOf(form(0, 3, 0, 3)), ops::FormUse::kOneSided);  // ... on the CPU
  EXPECT_EQ(ops::UseOf(form(0, 3, 0, 0)), ops::FormUse::kDropped);   // nobody runs it
  EXPECT_EQ(ops::UseOf(form(1, 3, 1, 3)), ops::FormUse::kDropped);   // flaky, not one-sided
  EXPECT_EQ(ops::UseOf(form(0, 1, 1, 0)), ops::FormUse::kDropped);   // one call proves little
  ops::GenericForm legacy{DType::kF16, ops::ShapeForm::kSame1, 0, 3};
  EXPECT_EQ(ops::UseOf(legacy), ops::FormUse::kDropped);
}

// The learner writes per-device counts for the targets it has, and what it
// writes parses back to the same line.
TEST(PerDeviceTable, TheLearnerWritesCountsPerDeviceThatParseBack) {
  const std::string dir = testing::TempDir("learn");
  const std::string out = dir + "/table.txt";
  const testing::CommandRun run =
      testing::RunShell(kTool + " ops --learn=2 --only=aten::angle --out=" + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  auto table = ops::ParseGenericTable(ss.str());
  ASSERT_TRUE(table.ok()) << table.status() << "\n" << ss.str();
  bool angle = false;
  for (const auto& [name, forms] : *table) {
    if (name != "aten::angle") continue;
    angle = true;
    ASSERT_FALSE(forms.empty());
    bool f16 = false;
    for (const ops::GenericForm& g : forms) {
      ASSERT_FALSE(g.per_device.empty()) << name;
      EXPECT_EQ(g.per_device[0].first, "cpu");
      // The CPU runs angle on f16 (CUDA does not): the current table, which
      // lacks f16 on CUDA, must not keep the learner from trying it.
      f16 |= g.dtype == DType::kF16 && g.per_device[0].second == g.tried;
    }
    EXPECT_TRUE(f16) << ss.str();
    ops::GenericOp op;
    op.name = "aten::angle";
    op.forms = forms;
    const std::string line = ops::FormatGenericTable({op}, "");
    EXPECT_NE(ss.str().find(line.substr(line.rfind('\n', line.size() - 2) + 1)),
              std::string::npos);
  }
  EXPECT_TRUE(angle) << ss.str();
}

// The built-in table was learned on a GPU host: CUDA has no f16 angle.
TEST(OneSided, TheBuiltInTableKeepsDtypeGaps) {
  const ops::OpSpec* angle = ops::FindOp("aten::angle");
  ASSERT_NE(angle, nullptr);
  EXPECT_FALSE(ops::Has(angle->dtypes, DType::kF16));
  EXPECT_TRUE(ops::Has(angle->one_sided_dtypes, DType::kF16));
  EXPECT_TRUE(ops::OneSided(*angle, DType::kF16));
  EXPECT_FALSE(ops::OneSided(*angle, DType::kF32));
}

// The programs of issue 19 parse and replay: exit 0 (agree) or 1 (diverge),
// never 2 (refused).
TEST(OneSided, ProgramsTheCatalogueUsedToRefuseReplay) {
  const std::string dir = testing::TempDir("one_sided_replay");
  const std::vector<std::pair<std::string, std::string>> programs = {
      {"angle_f16",
       "divfuzz v1\ninput %x: f16[40] = uniform(seed=1, low=-10.0, high=10.0)\n"
       "%a = aten::angle(%x)\noutput %a\n"},
      // Integer division by zero: the CPU raises, CUDA has no such check.
      {"floor_divide_i32",
       "divfuzz v1\ninput %x: i32[40] = uniform(seed=1, low=-100.0, high=100.0)\n"
       "input %y: i32[40] = fill(0)\n%a = aten::floor_divide(%x, %y)\noutput %a\n"},
      // Past float64's overflow threshold for exp but not for sinh, inside the
      // vector loop's body.
      {"sinh_f64",
       "divfuzz v1\ninput %x: f64[40] = uniform(seed=1, low=709.5, high=710.4)\n"
       "%a = aten::sinh(%x)\noutput %a\n"},
  };
  for (const auto& [name, text] : programs) {
    const std::string path = dir + "/" + name + ".dfz";
    std::ofstream(path) << text;
    const testing::CommandRun run = testing::RunShell(kTool + " replay " + path);
    EXPECT_TRUE(run.exit_code == 0 || run.exit_code == 1) << name << "\n" << run.output;
    EXPECT_EQ(run.output.find("not learned"), std::string::npos) << run.output;
    EXPECT_EQ(run.output.find("in the catalogue"), std::string::npos) << run.output;
  }
}

TEST(OneSided, GenerationPicksOneSidedPairsNowAndThen) {
  int nodes = 0, one_sided = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const graph::Program p = mutators::Generate(seed);
    const ops::TypeEnv types = MustInfer(p);
    for (const graph::Node& n : p.nodes) {
      const ops::OpSpec* spec = ops::FindOp(n.QualifiedName());
      if (spec == nullptr) continue;
      ++nodes;
      for (const graph::Argument& a : n.args) {
        if (a.value.kind != graph::Literal::Kind::kValue) continue;
        const DType d = types.at(a.value.s).dtype;
        one_sided += !ops::Has(spec->dtypes, d) && ops::Has(spec->one_sided_dtypes, d);
        break;
      }
    }
  }
  ASSERT_GT(nodes, 400);
  EXPECT_GT(one_sided, 0) << "of " << nodes;
  EXPECT_LT(one_sided, nodes * 3 * ops::kOneSidedShare) << "of " << nodes;
}

fuzz::Outcome RunAgainst(const std::string& name, const std::string& program,
                         fuzz::Runner runner_b) {
  fuzz::HarnessConfig config;
  config.target_a = exec::Target::kCpu;
  config.target_b = exec::Target::kCpuScalar;
  config.findings_dir = testing::TempDir(name);
  config.runner_b = std::move(runner_b);
  fuzz::Harness harness(config);
  return harness.RunProgram(MustParse(program));
}

fuzz::Outcome RunWithOneSidedError(const std::string& name, const std::string& program,
                                   const std::string& op, const std::string& message) {
  return RunAgainst(name, program,
                    [op, message](const graph::Program& p, const ops::TypeEnv& t,
                                  exec::Target target) {
                      return testing::OneSidedErrorRun(p, t, target, op, message);
                    });
}

TEST(OneSided, AOneSidedErrorOfAFaultyTargetIsADtypeGapOrAnErrorSplitOnItsSide) {
  const std::string program =
      "divfuzz v1\ninput %x: f16[40] = uniform(seed=1, low=-3.0, high=3.0)\n"
      "%y = aten::exp(%x)\n%z = aten::neg(%y)\noutput %z\n";
  fuzz::Outcome gap = RunWithOneSidedError("gap", program, "aten::exp",
                                           "\"exp_cuda\" not implemented for 'Half'");
  ASSERT_EQ(gap.verdict.Roots().size(), 1u);
  const oracles::Divergence& g = *gap.verdict.Roots()[0];
  EXPECT_EQ(g.cls, oracles::DivergenceClass::kDtypeGap);
  EXPECT_EQ(g.tier, "dtype_gap");
  EXPECT_EQ(g.op, "aten::exp");
  // A kernel's own refusal of a dtype is a gap too (CUDA histc on Half).
  fuzz::Outcome histc = RunWithOneSidedError("histc_gap", program, "aten::exp",
                                             "HalfTensor is not supported");
  ASSERT_EQ(histc.verdict.Roots().size(), 1u);
  EXPECT_EQ(histc.verdict.Roots()[0]->tier, "dtype_gap");
  // So is cuDNN's (an integer convolution on CUDA: 12 divergence buckets on the H100).
  fuzz::Outcome cudnn = RunWithOneSidedError(
      "cudnn_gap", program, "aten::exp", "getCudnnDataTypeFromScalarType() not supported for Long");
  ASSERT_EQ(cudnn.verdict.Roots().size(), 1u);
  EXPECT_EQ(cudnn.verdict.Roots()[0]->tier, "dtype_gap");

  fuzz::Outcome split = RunWithOneSidedError("split", program, "aten::exp",
                                             "divfuzz faulty target: exp refuses this input");
  ASSERT_EQ(split.verdict.Roots().size(), 1u);
  const oracles::Divergence& s = *split.verdict.Roots()[0];
  EXPECT_EQ(s.cls, oracles::DivergenceClass::kErrorSplit);
  // The float64 witness computes exp: the side that raised is wrong.
  EXPECT_EQ(s.wrong_side, "cpu-scalar") << s.reason;
  EXPECT_EQ(s.tier, "bug") << s.reason;
}

// lstsq's driver: CUDA takes only 'gels' (documented), so CUDA raising on
// 'gelsy' is expected; the CPU raising on it is not.
TEST(OneSided, ADriverTheRaisingDeviceDoesNotTakeIsExpected) {
  const graph::Program p = MustParse(
      "divfuzz v1\ninput %a: f32[4,3] = normal(seed=3, mean=0.0, std=1.0)\n"
      "input %b: f32[4,2] = normal(seed=4, mean=0.0, std=1.0)\n"
      "%s, %r, %k, %v = aten::linalg_lstsq(%a, %b, driver=\"gelsy\")\noutput %s\n");
  const ops::TypeEnv types = MustInfer(p);
  const exec::RunResult a = exec::Run(p, types, exec::Target::kCpu);
  for (const exec::Target raising : {exec::Target::kCuda, exec::Target::kCpuScalar}) {
    const exec::RunResult b = testing::OneSidedErrorRun(
        p, types, raising, "aten::linalg_lstsq",
        "torch.linalg.lstsq: `driver` other than `gels` is not supported on CUDA");
    oracles::Verdict v = oracles::Compare(p, types, a, b, oracles::DefaultPolicy());
    oracles::Triage(p, types, a, b, oracles::DefaultPolicy(), v);
    ASSERT_EQ(v.Roots().size(), 1u);
    const oracles::Divergence& d = *v.Roots()[0];
    EXPECT_EQ(d.cls, oracles::DivergenceClass::kErrorSplit);
    if (raising == exec::Target::kCuda) {
      EXPECT_EQ(d.tier, "expected") << d.reason;
      EXPECT_EQ(d.expected_rule, "device_argument") << d.reason;
    } else {
      EXPECT_NE(d.expected_rule, "device_argument") << d.reason;
    }
  }
}

// matrix_exp's error is normwise: a relative change far below
// 8 n eps ||A|| ||exp(A)|| is expected, a gross one is not.
TEST(OneSided, MatrixExpIsJudgedNormwise) {
  for (const double factor : {2e-6, 1e-2}) {
    fuzz::Outcome o = RunAgainst(
        "matrix_exp",
        "divfuzz v1\ninput %a: f32[4,4] = values(1.5, 2.0, -1.0, 0.5, 0.25, 1.0, 3.0, -2.0, 1.0, "
        "-0.5, 2.5, 1.0, 0.5, 1.5, -1.0, 2.0)\n%e = aten::matrix_exp(%a)\noutput %e\n",
        [factor](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
          return testing::ScaledOpRun(p, t, target, "aten::matrix_exp", factor);
        });
    ASSERT_EQ(o.verdict.Roots().size(), 1u) << factor;
    const oracles::Divergence& d = *o.verdict.Roots()[0];
    if (factor < 1e-3) {
      EXPECT_EQ(d.tier, "expected") << d.reason;
      EXPECT_EQ(d.expected_rule, "normwise_backward_error") << d.reason;
    } else {
      EXPECT_EQ(d.tier, "bug") << d.reason;
    }
  }
}

// vander carries x^k in the dtype on CUDA: where the exact power sits at f16's
// overflow threshold, inf against a value within the carry's bound of the
// largest f16 is expected; inf against an ordinary value is not.
TEST(JudgedRun10, AScanCarryAtTheOverflowThresholdIsExpected) {
  const std::string program =
      "divfuzz v1\ninput %x: f16[1] = values(-0x1.17p+0)\n"
      "%v = aten::vander(%x, 130)\noutput %v\n";
  for (const double value : {-65152.0, -100.0}) {
    fuzz::Outcome o = RunAgainst("vander", program,
                                 [value](const graph::Program& p, const ops::TypeEnv& t,
                                         exec::Target target) {
                                   return testing::ReplaceElementRun(p, t, target, "aten::vander",
                                                                     0, value);
                                 });
    ASSERT_EQ(o.verdict.Roots().size(), 1u) << value;
    const oracles::Divergence& d = *o.verdict.Roots()[0];
    EXPECT_EQ(d.cls, oracles::DivergenceClass::kClassSplit) << value;
    if (value < -60000) {
      EXPECT_EQ(d.expected_rule, "scan_carry") << d.reason;
    } else {
      EXPECT_EQ(d.tier, "bug") << d.reason;
    }
  }
}

// An FFT of values whose sum|x| passes float32's range may overflow inside
// (inf - inf: NaN); of ordinary values it may not.
TEST(JudgedRun10, NonFiniteFftOutputsOfAnInputBeyondTheRangeAreExpected) {
  for (const std::string big : {"3e38", "3.0"}) {
    const std::string program =
        "divfuzz v1\ninput %x: f32[24] = values(0, 0, 0, 0, 0, 0, 0, 0, 0, -" + big + ", " + big +
        ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)\n%y = aten::fft_rfft(%x)\noutput %y\n";
    fuzz::Outcome o = RunAgainst("fft", program,
                                 [](const graph::Program& p, const ops::TypeEnv& t,
                                    exec::Target target) {
                                   return testing::ScaledOpRun(p, t, target, "aten::fft_rfft",
                                                               std::nan(""));
                                 });
    ASSERT_EQ(o.verdict.Roots().size(), 1u) << big;
    const oracles::Divergence& d = *o.verdict.Roots()[0];
    if (big == "3e38") {
      EXPECT_EQ(d.expected_rule, "transform_normwise") << d.reason;
    } else {
      EXPECT_NE(d.expected_rule, "transform_normwise") << d.reason;
      EXPECT_NE(d.tier, "expected") << d.reason;
    }
  }
}

// cholesky_solve(B, L) solves with L L^T from L's lower triangle: its
// conditioning is that matrix's, not the whole second input's (whose upper
// triangle the op never reads).
TEST(JudgedRun10, CholeskySolveIsConditionedByItsFactor) {
  for (const std::string diag : {"0.001", "2.0"}) {
    const std::string program =
        "divfuzz v1\ninput %b: f32[2,1] = values(1.0, 1.0)\n"
        "input %l: f32[2,2] = values(" + diag + ", 5.0, 1.0, " + diag + ")\n"
        "%x = aten::cholesky_solve(%b, %l)\noutput %x\n";
    fuzz::Outcome o = RunAgainst("cholesky_solve", program,
                                 [](const graph::Program& p, const ops::TypeEnv& t,
                                    exec::Target target) {
                                   return testing::ScaledOpRun(p, t, target,
                                                               "aten::cholesky_solve", 1e-3);
                                 });
    ASSERT_EQ(o.verdict.Roots().size(), 1u) << diag;
    const oracles::Divergence& d = *o.verdict.Roots()[0];
    if (diag == "0.001") {
      EXPECT_EQ(d.expected_rule, "ill_conditioned") << d.reason;
    } else {
      EXPECT_EQ(d.tier, "bug") << d.reason;
    }
  }
}

}  // namespace
}  // namespace divfuzz
