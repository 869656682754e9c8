// report.md, MakeRepro, the findings store's artifacts, and the divfuzz
// minimize / repro commands, on real libtorch (faulty targets where a side
// must be wrong).
#include <ATen/ops/linalg_svdvals.h>
#include <ATen/ops/tensor.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "exec/executor.h"
#include "gmock/gmock.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "gtest/gtest.h"
#include "minimize/emit_report.h"
#include "minimize/environment.h"
#include "minimize/repro.h"
#include "oracles/verdict.h"
#include "store/findings_store.h"
#include "tests/faulty_targets.h"
#include "tests/test_util.h"

namespace divfuzz::minimize {
namespace {

using testing::CommandRun;
using ::testing::HasSubstr;
using testing::MustParse;
using ::testing::Not;
using testing::Python;
using testing::RunShell;

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A well-conditioned 4x4 matrix with a tiny determinant behind a short chain
// and an unrelated branch: the faulty target's logdet gives -inf on cpu.
constexpr char kFaultyLogdet[] = R"(divfuzz v1
input %m: f32[4,4] = values(0.01, 0, 0, 0, 0, 0.01, 0, 0, 0, 0, 0.01, 0, 0, 0, 0, 0.01)
input %x: f32[3] = fill(0.5)
%a = aten::abs(%m)
%b = aten::mul.Scalar(%a, 1.0)
%l = aten::logdet(%b)
%e = aten::exp(%x)
output %l, %e
)";

ReproOptions FaultyOptions() {
  ReproOptions o;
  o.target_a = exec::Target::kCpu;
  o.target_b = exec::Target::kCpuF64;
  o.runner_a = [](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
    return testing::FaultyLogdetRun(p, t, target);
  };
  o.max_seconds = 30;
  return o;
}

TEST(Environment, NamesTorchTheCpuAndTheOs) {
  const Environment& env = CurrentEnvironment();
  EXPECT_FALSE(env.torch_version.empty());
  EXPECT_FALSE(env.cpu_capability.empty());
  EXPECT_FALSE(env.os.empty());
  EXPECT_GT(env.cpu_cores, 0);
  std::set<std::string> labels;
  for (const auto& [label, value] : env.Items()) {
    labels.insert(label);
    EXPECT_FALSE(value.empty()) << label;
  }
  for (const char* want : {"torch", "CUDA runtime", "cuBLAS", "cuSOLVER", "GPU", "GPU driver",
                           "CPU", "CPU vector ISA (ATen dispatch)", "OS"}) {
    EXPECT_TRUE(labels.count(want)) << want;
  }
  if (exec::CudaAvailable()) {
    EXPECT_FALSE(env.gpu.empty());
    EXPECT_FALSE(env.cuda_runtime.empty());
  }
}

TEST(Report, FaultyLogdetIsArguedAsABug) {
  absl::StatusOr<ReproFiles> f = MakeRepro(MustParse(kFaultyLogdet), FaultyOptions());
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->reproduced) << f->note;
  EXPECT_EQ(f->signature, "aten::logdet|f32|class_split|cpu");
  ASSERT_TRUE(f->reduction.has_value());
  EXPECT_EQ(f->reduction->nodes_after, 1);
  const std::string& md = f->report_md;
  EXPECT_THAT(md, HasSubstr("# aten::logdet (f32): cpu returns -inf where the exact value is -1"));
  EXPECT_THAT(md, HasSubstr("The expected value is the exact value"));
  EXPECT_THAT(md, HasSubstr("## Summary"));
  EXPECT_THAT(md, HasSubstr("This shows that **cpu** is wrong."));
  EXPECT_THAT(md, HasSubstr("None of PyTorch's documented reasons for expected variance applies"));
  EXPECT_THAT(md, HasSubstr("```python\nimport torch"));
  EXPECT_THAT(md, HasSubstr("| cpu | `-inf` |"));
  EXPECT_THAT(md, HasSubstr("not finite vs finite"));
  EXPECT_THAT(md, HasSubstr("| `ill_conditioned` |"));
  EXPECT_THAT(md, HasSubstr("| does not apply | condition number 1.0 <= 1/eps(f32)"));
  EXPECT_THAT(md, HasSubstr("| `info_gated` |"));
  EXPECT_THAT(md, HasSubstr("| not applicable | aten::logdet has no info output |"));
  EXPECT_THAT(md, Not(HasSubstr("| applies |")));
  EXPECT_THAT(md, HasSubstr("## Environment"));
  EXPECT_THAT(md, HasSubstr("- CPU vector ISA (ATen dispatch): "));
  EXPECT_THAT(md, HasSubstr("- cuSOLVER: "));
  EXPECT_THAT(md, HasSubstr("signature `aten::logdet|f32|class_split|cpu`"));
  EXPECT_THAT(md, HasSubstr("Reduced from 4 to 1 ops"));
  // The inline snippet is a working script on its own (real torch: no fault).
  const size_t begin = md.find("```python\n") + 10;
  const std::string snippet = md.substr(begin, md.find("```", begin) - begin);
  const std::string dir = testing::TempDir("snippet");
  std::ofstream(dir + "/snippet.py") << snippet;
  CommandRun r = RunShell(Python() + " " + dir + "/snippet.py");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("float64: "));
  // The other files are there, for the minimal program.
  EXPECT_THAT(f->repro_py, HasSubstr("aten.logdet.default"));
  EXPECT_THAT(f->main_cpp, HasSubstr("\"aten::logdet\""));
  EXPECT_THAT(f->min_dfz, HasSubstr("aten::logdet"));
  EXPECT_THAT(f->min_dfz, Not(HasSubstr("aten::exp")));
}

TEST(Report, ExpectedVarianceSaysWhichRuleApplies) {
  // A singular matrix: -inf on cpu (faulty and real), finite on a side that
  // adds rounding noise; the ill-conditioned rule explains it.
  ReproOptions o = FaultyOptions();
  o.runner_b = [](const graph::Program& p, const ops::TypeEnv& t, exec::Target) {
    exec::RunResult r = exec::Run(p, t, exec::Target::kCpu);
    r.target = exec::Target::kCuda;
    for (exec::NodeResult& n : r.nodes) {
      if (!n.error && n.outputs[0].dim() == 0) n.outputs[0] = n.outputs[0].clamp_min(-100.0);
    }
    return r;
  };
  o.target_b = exec::Target::kCuda;
  o.minimize = false;
  // fill(3.0): singular, and its elimination rounds (1/3), so ill_conditioned
  // applies; fill(1.0) would be exact and the exact witness would decide.
  absl::StatusOr<ReproFiles> f = MakeRepro(MustParse(R"(divfuzz v1
input %m: f32[2,2] = fill(3.0)
%l = aten::logdet(%m)
output %l
)"),
                                           o);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->reproduced) << f->note;
  EXPECT_TRUE(f->min_dfz.empty());
  EXPECT_THAT(f->report_md, HasSubstr("matches the documented expected-variance rule "
                                      "`ill_conditioned`"));
  EXPECT_THAT(f->report_md, HasSubstr("| `ill_conditioned` |"));
  EXPECT_THAT(f->report_md, HasSubstr("| applies |"));
  EXPECT_THAT(f->report_md, HasSubstr("tier `expected`"));
  EXPECT_THAT(f->report_md, HasSubstr("| `tf32` |"));
}

// A decomposition is compared through invariants: report.md shows the
// sides' invariant beside the float64 reference's same invariant, and says
// which one (it once showed the sides' singular value beside the reference's
// U[0,0]).
TEST(Report, ADecompositionsValuesAndReferenceAreOfTheSameInvariant) {
  const graph::Program p = MustParse(
      "divfuzz v1\ninput %a: f32[2,3] = values(3.0, 1.0, 0.5, -2.0, 4.0, 1.0)\n"
      "%u, %s, %vh = aten::linalg_svd(%a, false)\noutput %u, %s, %vh\n");
  ReproOptions o;
  o.target_a = exec::Target::kCpu;
  o.target_b = exec::Target::kCpuF64;
  // A deliberately faulty cpu: its singular values 1% too large.
  o.runner_a = [](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
    exec::RunResult r = exec::Run(p, t, target);
    for (size_t i = 0; i < p.nodes.size() && i < r.nodes.size(); ++i) {
      if (p.nodes[i].QualifiedName() == "aten::linalg_svd" && !r.nodes[i].error) {
        r.nodes[i].outputs[1] = r.nodes[i].outputs[1].mul(1.01);
      }
    }
    return r;
  };
  o.minimize = false;
  o.max_seconds = 30;
  absl::StatusOr<ReproFiles> f = MakeRepro(p, o);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->reproduced) << f->note;
  const std::string& md = f->report_md;
  EXPECT_THAT(md, HasSubstr("at element 0 of the singular values S: cpu gives"));
  EXPECT_THAT(md, HasSubstr("so divfuzz compares the singular values S computed from each one's "
                            "outputs (the reference's too)"));
  EXPECT_THAT(md, HasSubstr("| side | value | float64 reference (the singular values S) from "
                            "this side's inputs | error |"));
  EXPECT_THAT(md, HasSubstr("Whole of the singular values S:"));
  // Each row's reference is s_0 of the float64 matrix, like its values.
  const double s0 = at::linalg_svdvals(at::tensor(std::vector<double>{3.0, 1.0, 0.5, -2.0, 4.0,
                                                                      1.0})
                                           .reshape({2, 3}))[0]
                        .item<double>();
  for (const std::string side : {"cpu", "cpu-f64"}) {
    const size_t row = md.find("\n| " + side + " | `");
    ASSERT_NE(row, std::string::npos) << side << "\n" << md;
    const std::string line = md.substr(row + 1, md.find('\n', row + 1) - row - 1);
    std::vector<std::string> cells = absl::StrSplit(line, " | ");
    ASSERT_GE(cells.size(), 3u) << line;
    const std::string ref = std::string(absl::StripAsciiWhitespace(cells[2]));
    ASSERT_GE(ref.size(), 2u) << line;
    EXPECT_NEAR(std::stod(ref.substr(1, ref.size() - 2)), s0, 1e-9 * s0) << line;
  }
}

TEST(Report, TitlesByClass) {
  oracles::Divergence d;
  d.op = "aten::sin";
  d.dtype = "f32";
  d.cls = oracles::DivergenceClass::kTolerance;
  d.wrong_side = "cuda";
  d.ulp_b = 1234;
  EXPECT_EQ(ReportTitle(d, "cpu", "cuda"),
            "aten::sin (f32): cuda is off by 1.23e+03 ULPs from the float64 reference");
  d.wrong_side = "undecided";
  EXPECT_EQ(ReportTitle(d, "cpu", "cuda"), "aten::sin (f32): cpu and cuda differ beyond tolerance");
  d.cls = oracles::DivergenceClass::kErrorSplit;
  d.value_a = "ok";
  d.value_b = "raised: boom";
  EXPECT_EQ(ReportTitle(d, "cpu", "cuda"), "aten::sin (f32): raises on cuda but not on cpu");
}

// A report headed by the first element past the tolerance also names the
// element off the most (session 41's bf16 logcumsumexp backward: headed by
// 0.3926 vs 0.4004, where element 109 is 32 vs 15.6).
TEST(Report, NamesTheElementTheSidesDifferMostAt) {
  const oracles::Tolerance tol{1.6e-2, 1e-5};
  const at::Tensor a = at::tensor({0.5, 0.392578125, 1.0, 32.0, 7.0}, at::kDouble);
  const at::Tensor b = at::tensor({0.5, 0.400390625, 1.0, 15.625, 7.0}, at::kDouble);
  const std::string line = LargestDifference(a, b, tol, 1, "0.392578125", "cpu", "cuda");
  EXPECT_THAT(line, HasSubstr("differ most at element 3: cpu gives `32.0`, cuda gives `15.625`"));
  EXPECT_THAT(line, HasSubstr("at element 1,"));
  // The headline is the worst element: nothing to add.
  EXPECT_EQ(LargestDifference(a, b, tol, 3, "32.0", "cpu", "cuda"), "");
  // The headline is another tensor's element (a backward kernel's own
  // gradient inside the statement): nothing to add.
  EXPECT_EQ(LargestDifference(a, b, tol, 1, "0.5", "cpu", "cuda"), "");
  // Non-finite elements are class splits, not the largest difference.
  const at::Tensor c = at::tensor({0.5, 0.392578125, 1.0, 32.0, INFINITY}, at::kDouble);
  const at::Tensor d = at::tensor({0.5, 0.400390625, 1.0, 32.0, 7.0}, at::kDouble);
  EXPECT_EQ(LargestDifference(c, d, tol, 1, "0.392578125", "cpu", "cuda"), "");
  // Shapes that differ: no element to name.
  EXPECT_EQ(LargestDifference(a, a.reshape({5, 1}).expand({5, 2}), tol, 1, "0.392578125", "cpu",
                              "cuda"),
            "");

  ReportInput in;
  in.program = MustParse("divfuzz v1\ninput %x: f32[2] = fill(1.0)\n%y = aten::sin(%x)\noutput %y\n");
  in.root.op = "aten::sin";
  in.root.dtype = "f32";
  in.root.cls = oracles::DivergenceClass::kTolerance;
  in.root.node_index = 0;
  in.root.element = 1;
  in.spec.target_a = "cpu";
  in.spec.target_b = "cuda";
  in.largest_difference = line;
  EXPECT_THAT(EmitReport(in), HasSubstr(line));
}

TEST(Repro, WritesArtifactsIntoTheFindingsStore) {
  const std::string dir = testing::TempDir("findings");
  auto store = store::FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok());
  store::FindingHit hit =
      testing::HitFor("aten::logdet|f32|class_split|cpu", "cpu vs cpu-f64", "bug");
  absl::StatusOr<store::RecordResult> rec = (*store)->Record(hit, kFaultyLogdet);
  ASSERT_TRUE(rec.ok());
  ReproOptions o = FaultyOptions();
  o.signature = hit.signature;
  o.finding_id = rec->id;
  absl::StatusOr<ReproFiles> f = MakeRepro(MustParse(kFaultyLogdet), o);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(WriteReproToStore(**store, rec->id, *f).ok());
  auto index = (*store)->Load();
  ASSERT_TRUE(index.ok());
  ASSERT_EQ(index->size(), 1u);
  const nlohmann::json& e = (*index)[0];
  for (const char* field : {"minimized", "repro_py", "repro_cpp", "report_md"}) {
    ASSERT_TRUE(e.contains(field) && e[field].is_string()) << field << ": " << e.dump();
    EXPECT_TRUE(Exists(dir + "/" + e[field].get<std::string>())) << field;
  }
  EXPECT_TRUE(Exists(dir + "/" + rec->id + "/repro_cpp/CMakeLists.txt"));
  EXPECT_THAT(Read(dir + "/" + rec->id + "/report.md"), HasSubstr(rec->id));
  // min.dfz parses back to the minimal program.
  EXPECT_TRUE(graph::ParseProgram(Read(dir + "/" + rec->id + "/min.dfz")).ok());
}

TEST(Repro, NotReproducedHereStillWritesRunnableRepros) {
  ReproOptions o;
  o.signature = "aten::exp|f32|class_split|cpu";  // nothing like it here
  o.seen = "class_split on the GPU host";
  absl::StatusOr<ReproFiles> f = MakeRepro(MustParse(kFaultyLogdet), o);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_FALSE(f->reproduced);
  EXPECT_THAT(f->note,
              HasSubstr("no root divergence with signature aten::exp|f32|class_split|cpu"));
  EXPECT_TRUE(f->min_dfz.empty());
  EXPECT_THAT(f->report_md, HasSubstr("Did not reproduce on this machine"));
  EXPECT_THAT(f->repro_py, HasSubstr("SEEN = 'class_split on the GPU host'"));
  EXPECT_THAT(f->main_cpp, HasSubstr("int main"));
}

// ----- the divfuzz commands --------------------------------------------

const std::string kTool = std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz";

// (1e8 + 1) - 1e8: 0 in float32, 1 in float64, behind noise.
constexpr char kCancellation[] = R"(divfuzz v1
input %a: f32[3] = values(100000000.0, 200000000.0, 5.0)
input %b: f32[3] = fill(1.0)
input %n: f32[2,2] = uniform(seed=2, low=0.5, high=1.5)
%x = aten::exp(%n)
%y = aten::sin(%x)
%c = aten::add.Tensor(%a, %b)
%d = aten::sub.Tensor(%c, %a)
%e = aten::abs(%d)
output %e, %y
)";

TEST(Commands, MinimizeWritesTheMinimalProgram) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("minimize");
  std::ofstream(dir + "/p.dfz") << kCancellation;
  CommandRun r =
      RunShell(kTool + " minimize --targets=cpu,cpu-f64 --max_seconds=30 " + dir + "/p.dfz");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("reduce: round 1 slice"));
  EXPECT_THAT(r.output, HasSubstr("reduce: done: aten::sub.Tensor|f32|tolerance|undecided"));
  absl::StatusOr<graph::Program> p = graph::ParseProgram(Read(dir + "/p.min.dfz"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->nodes.size(), 2u) << graph::PrintProgram(*p);
  EXPECT_LE(p->inputs.size(), 2u);
  // A program that does not diverge: exit 1.
  std::ofstream(dir + "/ok.dfz") << "divfuzz v1\ninput %x: f32[2] = fill(0.5)\n%y = aten::neg(%x)\n"
                                    "output %y\n";
  r = RunShell(kTool + " minimize --targets=cpu,cpu-f64 " + dir + "/ok.dfz");
  EXPECT_EQ(r.exit_code, 1) << r.output;
}

TEST(Commands, ReproWritesAllFilesAndTheScriptReproduces) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("repro");
  std::ofstream(dir + "/p.dfz") << kCancellation;
  CommandRun r = RunShell(kTool + " repro --targets=cpu,cpu-f64 " + dir + "/p.dfz");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f :
       {"min.dfz", "repro.py", "repro_cpp/main.cpp", "repro_cpp/CMakeLists.txt", "report.md"}) {
    EXPECT_TRUE(Exists(dir + "/p.repro/" + f)) << f;
  }
  // The script reproduces on the minimal program, with the values the
  // executor computes for it.
  r = RunShell(Python() + " " + dir + "/p.repro/repro.py");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("VERDICT: divergence reproduces (cpu vs cpu-f64): tolerance"));
  absl::StatusOr<graph::Program> p = graph::ParseProgram(Read(dir + "/p.repro/min.dfz"));
  ASSERT_TRUE(p.ok());
  const exec::RunResult cpu = exec::Run(*p, testing::MustInfer(*p), exec::Target::kCpu);
  // (1e8 + 1) - 1e8 in float32: 0, printed as Python's float.hex.
  EXPECT_EQ(cpu.nodes.back().outputs[0].reshape({-1})[0].item<double>(), 0.0);
  EXPECT_THAT(r.output, HasSubstr("cpu: dtype torch.float32"));
  EXPECT_THAT(r.output, HasSubstr("  exact: 0x0.0p+0\n"));
  EXPECT_THAT(Read(dir + "/p.repro/report.md"), HasSubstr("## Why this is not expected variance"));
  // --minimize=false keeps the program as given and writes no min.dfz.
  r = RunShell(kTool + " repro --targets=cpu,cpu-f64 --minimize=false --out=" + dir + "/full " +
               dir + "/p.dfz");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(Exists(dir + "/full/min.dfz"));
  EXPECT_THAT(Read(dir + "/full/repro.py"), HasSubstr("aten.exp.default"));
}

// Judged on this machine's campaign: j0 of -inf (an f32 mm overflow) is NaN
// on the CPU; its limit is 0. The float64 run gives NaN too (the same
// kernel), so repro.py said "WRONG SIDE: undecided" while report.md, which
// judges by the exact value, blamed cpu. The repros carry that value now.
TEST(Commands, ReproAndReportNameTheSideTheExactValueShowsWrong) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("repro_exact");
  std::ofstream(dir + "/j0.dfz") << R"(divfuzz v1
input %a: f32[1,1] = fill(-1.2000000476837158)
input %b: f32[1,1] = fill(3.0000000054977558e+38)
%m = aten::mm(%a, %b)
%v = aten::special_bessel_j0(%m)
output %v
)";
  CommandRun r = RunShell(kTool + " repro --targets=cpu,cpu-f64 " + dir + "/j0.dfz");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(Read(dir + "/j0.repro/report.md"), HasSubstr("This shows that **cpu** is wrong"));
  r = RunShell(Python() + " " + dir + "/j0.repro/repro.py");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cpu matches the float64 reference computed from its own"));
  EXPECT_THAT(r.output, HasSubstr("cpu gives nan (nan), the exact value is 0.0 (0x0.0p+0): misses"));
  EXPECT_THAT(r.output, HasSubstr("WRONG SIDE: cpu\n"));
  EXPECT_THAT(Read(dir + "/j0.repro/repro_cpp/main.cpp"),
              HasSubstr("const std::map<std::string, double> kExact = {{\"cpu\", 0x0p+0}"));
}

// On the H100, CUDA's linalg_eigvals of QR's Q (stored column-major)
// overwrote Q with its Schur form, and the finding named the next op that
// read Q. A deliberately faulty plugin does the same on the CPU: the op that
// writes is the finding (an error split), the program after it reads the
// values it made, and repro.py (run with the plugin preloaded) says so.
TEST(Commands, AnOpThatWritesIntoItsInputIsTheFindingAndItsReproSaysSo) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("input_writer");
  const std::string plugin = DIVFUZZ_FAULTY_INPUT_WRITER_PLUGIN;
  std::ofstream(dir + "/ev.dfz") << R"(divfuzz v1
input %m: f32[2,2] layout=transposed = values(1.0, 2.0, 3.0, 4.0)
%w = aten::linalg_eigvals(%m)
%t = aten::t(%m)
output %w, %t
)";
  CommandRun r = RunShell(kTool + " replay --targets=cpu,cpu-f64 --plugins=" + plugin + " " + dir +
                          "/ev.dfz 2>&1 | grep -v '^W'");
  EXPECT_THAT(r.output, HasSubstr("verdict: error_split at node 0 (%w = aten::linalg_eigvals"));
  EXPECT_THAT(r.output, HasSubstr("wrote into its input %m, which its schema does not declare"));
  EXPECT_THAT(r.output, HasSubstr("tier: bug, wrong side: cpu"));
  EXPECT_THAT(r.output, Not(HasSubstr("[root]: element")));  // t reads what the program made
  r = RunShell(kTool + " repro --targets=cpu,cpu-f64 --plugins=" + plugin + " " + dir + "/ev.dfz");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(Read(dir + "/ev.repro/repro.py"), HasSubstr("GUARDED = (0, )"));
  EXPECT_THAT(Read(dir + "/ev.repro/repro_cpp/main.cpp"), HasSubstr("kGuarded = {0}"));
  r = RunShell("LD_PRELOAD=" + plugin + " " + Python() + " " + dir + "/ev.repro/repro.py");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("VERDICT: divergence reproduces (cpu vs cpu-f64): error_split: "
                                  "only cpu raised: RuntimeError: wrote into its input %m"));
  EXPECT_THAT(r.output, HasSubstr("WRONG SIDE: cpu\n"));
  // Without the faulty kernel nothing writes, and nothing diverges.
  r = RunShell(Python() + " " + dir + "/ev.repro/repro.py");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(Commands, ReproOfAFindingFolderUpdatesTheIndex) {
  if (!Exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("findings");
  auto store = store::FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok());
  store::FindingHit hit =
      testing::HitFor("aten::sub.Tensor|f32|tolerance|undecided", "cpu vs cpu-f64");
  hit.detail = {{"node", 3}, {"output", 0}, {"summary", "element 0: 0.0 vs 1.0"}};
  absl::StatusOr<store::RecordResult> rec = (*store)->Record(hit, kCancellation);
  ASSERT_TRUE(rec.ok());
  CommandRun r = RunShell(kTool + " repro " + dir + "/" + rec->id);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("reduce: keeping aten::sub.Tensor|f32|tolerance|undecided"));
  auto index = (*store)->Load();
  ASSERT_TRUE(index.ok());
  const nlohmann::json& e = (*index)[0];
  EXPECT_EQ(e.value("minimized", ""), rec->id + "/min.dfz");
  EXPECT_EQ(e.value("repro_py", ""), rec->id + "/repro.py");
  EXPECT_EQ(e.value("repro_cpp", ""), rec->id + "/repro_cpp/main.cpp");
  EXPECT_EQ(e.value("report_md", ""), rec->id + "/report.md");
  EXPECT_THAT(Read(dir + "/" + rec->id + "/repro.py"), HasSubstr("element 0: 0.0 vs 1.0"));
  // Asked for a GPU pair without a GPU: the repros are written, unminimized,
  // for a GPU host, and the exit status is 2 (a target it cannot run).
  if (!exec::CudaAvailable()) {
    r = RunShell(kTool + " repro --targets=cpu,cuda --out=" + dir + "/gpu " + dir + "/" + rec->id);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr("cuda cannot run on this machine"));
    EXPECT_THAT(r.output, HasSubstr("did not reproduce here: CUDA is not available"));
    EXPECT_TRUE(Exists(dir + "/gpu/repro.py"));
    EXPECT_FALSE(Exists(dir + "/gpu/min.dfz"));
  }
}

}  // namespace
}  // namespace divfuzz::minimize
