// The Python repro emitter: the scripts it writes are run with python3 and
// torch (installed wherever the suite runs) and judged by their exit status.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "gmock/gmock.h"
#include "graph/materialize.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "gtest/gtest.h"
#include "minimize/emit_python.h"
#include "ops/infer.h"
#include "oracles/policy.h"
#include "tests/test_util.h"

namespace divfuzz::minimize {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string WriteScript(const std::string& script) {
  std::string tmpl = ::testing::TempDir() + "/repro_XXXXXX.py";
  int fd = ::mkstemps(tmpl.data(), 3);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream(tmpl, std::ios::binary) << script;
  return tmpl;
}

divfuzz::testing::CommandRun RunScript(const std::string& script, const std::string& args = "") {
  const std::string path = WriteScript(script);
  divfuzz::testing::CommandRun run =
      divfuzz::testing::RunShell(divfuzz::testing::Python() + " " + path + " " + args);
  std::remove(path.c_str());
  return run;
}

graph::Program Parse(const std::string& text) {
  auto program = graph::ParseProgram(text, "test.dfz");
  EXPECT_TRUE(program.ok()) << program.status();
  return program.ok() ? *program : graph::Program{};
}

ReproSpec Spec(int node, int output = 0) {
  ReproSpec spec;
  spec.node_index = node;
  spec.output_index = output;
  spec.title = "test";
  return spec;
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

constexpr char kCancellation[] = R"(divfuzz v1
input %a: f32[1] = fill(1e8)
input %b: f32[1] = fill(1.0)
%c = aten::add.Tensor(%a, %b)
%d = aten::sub.Tensor(%c, %a)
output %d
)";

// cpu: (1e8 + 1) - 1e8 = 0 in float32; cpu-f64 computes in float64 and
// rounds back: 1. |0 - 1| > 1e-5 + 1.3e-6 * 1.
TEST(EmitPython, CancellationReproducesAsTolerance) {
  divfuzz::testing::CommandRun run = RunScript(EmitPython(Parse(kCancellation), Spec(1)));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("VERDICT: divergence reproduces (cpu vs cpu-f64): tolerance"));
  EXPECT_THAT(run.output, HasSubstr("torch "));  // the environment
  EXPECT_THAT(run.output, HasSubstr("tensor([0.])"));
  EXPECT_THAT(run.output, HasSubstr("tensor([1.])"));
  // The intermediate node agrees (1e8 + 1 rounds to 1e8 both ways).
  EXPECT_EQ(RunScript(EmitPython(Parse(kCancellation), Spec(0))).exit_code, 0);
}

TEST(EmitPython, InMemoryProgramEmitsLikeParsedOne) {
  graph::Program p;
  graph::Input a, b;
  a.name = "a";
  a.type = {graph::DType::kF32, {1}};
  a.payload.kind = graph::Payload::Kind::kFill;
  a.payload.values = {1e8};
  b = a;
  b.name = "b";
  b.payload.values = {1.0};
  p.inputs = {a, b};
  graph::Node add, sub;
  add.results = {"c"};
  add.op = "aten::add";
  add.overload = "Tensor";
  add.args = {{"", graph::Literal::Value("a")}, {"", graph::Literal::Value("b")}};
  sub = add;
  sub.results = {"d"};
  sub.op = "aten::sub";
  sub.args = {{"", graph::Literal::Value("c")}, {"", graph::Literal::Value("a")}};
  p.nodes = {add, sub};
  p.outputs = {"d"};
  std::string script = EmitPython(p, Spec(1));
  EXPECT_EQ(script, EmitPython(Parse(kCancellation), Spec(1)));
  // node_index -1: the node of the first output.
  EXPECT_EQ(EmitPython(p, Spec(-1)), script);
  divfuzz::testing::CommandRun run = RunScript(script);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  // Same targets: nothing to reproduce.
  EXPECT_EQ(RunScript(script, "--target-b cpu").exit_code, 0);
}

TEST(EmitPython, BenignAddExitsZero) {
  divfuzz::testing::CommandRun run = RunScript(EmitPython(Parse(R"(divfuzz v1
input %x: f32[2,3] = values(0.5, 0.25, -1.5, 3.0, 0.125, -0.0)
input %y: f32[2,3] = uniform(seed=7, low=-1.0, high=1.0)
%z = aten::add.Tensor(%x, %y, alpha=2)
output %z
)"),
                                                          Spec(0)));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("VERDICT: no divergence"));
}

TEST(EmitPython, ClassSplit) {
  // exp(100) overflows float32: inf / inf = nan; in float64 it is 1.
  divfuzz::testing::CommandRun run = RunScript(EmitPython(Parse(R"(divfuzz v1
input %x: f32[2] = fill(100.0)
%e = aten::exp(%x)
%r = aten::div.Tensor(%e, %e)
output %r
)"),
                                                          Spec(1)));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("class_split"));
}

TEST(EmitPython, OrthogonalPolynomialReferenceIsNanAtANanX) {
  // PyTorch's kernel returns an unset variable at a NaN x (oracles/
  // nan_rule.h): whatever the sides print there, the reference says NaN.
  const std::string script = EmitPython(Parse(R"(divfuzz v1
input %x: f32[3] = values(0x1p-2, nan, 0x1p-1)
%y = aten::special_shifted_chebyshev_polynomial_u.n_scalar(%x, 3.0)
output %y
)"),
                                        Spec(0));
  EXPECT_THAT(script, HasSubstr("NAN_RULE = lambda v: (v['x'], F('0x1.8p+1'))"));
  divfuzz::testing::CommandRun run = RunScript(script);
  EXPECT_THAT(run.output, HasSubstr("float64 reference from cpu's own inputs: "
                                    "0x1.0000000000000p+0 nan "))
      << run.output;
  // Any other op: no rule.
  EXPECT_THAT(EmitPython(Parse(kCancellation), Spec(1)), HasSubstr("NAN_RULE = None"));
}

TEST(EmitPython, ErrorSplitAndDependentErrors) {
  // float32 @ float64 raises on cpu; cpu-f64 upcasts both and succeeds.
  std::string text = R"(divfuzz v1
input %a: f32[2,2] = fill(1.0)
input %b: f64[2,2] = fill(2.0)
%m = aten::mm(%a, %b)
%n = aten::neg(%m)
output %n
)";
  divfuzz::testing::CommandRun run = RunScript(EmitPython(Parse(text), Spec(1)));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("error_split"));
  EXPECT_THAT(run.output, HasSubstr("raised at node 0"));  // the dependent node fails too
  // cpu vs cpu: both raise, no divergence.
  run = RunScript(EmitPython(Parse(text), Spec(1)), "--target-b cpu");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("both targets raised"));
}

TEST(EmitPython, MultiResultNodeAndIntegers) {
  std::string text = R"(divfuzz v1
input %x: f32[3,4] = normal(seed=3, mean=0.0, std=1.0)
input %k: i32[3,4] = values(1, -2, 3, 4, 5, 6, 7, 8, 9, 10, 11, -128)
%v, %i = aten::max.dim(%x, 1, keepdim=False)
%s = aten::add.Tensor(%k, %k)
%t = aten::sum.dim_IntList(%x, [0], True, dtype=f64)
output %i, %s, %t
)";
  graph::Program p = Parse(text);
  for (int node : {0, 1, 2}) {
    divfuzz::testing::CommandRun run = RunScript(EmitPython(p, Spec(node, node == 0 ? 1 : 0)));
    EXPECT_EQ(run.exit_code, 0) << "node " << node << "\n" << run.output;
    EXPECT_THAT(run.output, HasSubstr("VERDICT: no divergence")) << run.output;
  }
  EXPECT_THAT(RunScript(EmitPython(p, Spec(1))).output, HasSubstr("dtype torch.int32"));
}

TEST(EmitPython, ComplexInputs) {
  divfuzz::testing::CommandRun run = RunScript(EmitPython(Parse(R"(divfuzz v1
input %z: c64[3] = values(1.0, 2.0, -0.5, 0.25, 3.0, -4.0)
input %w: c64[3] = fill(0.5)
%p = aten::mul.Tensor(%z, %w)
output %p
)"),
                                                          Spec(0)));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("complex64"));
}

// Every input comes back bit for bit: --dump-inputs prints each element as
// the exact hex of its float64 value (integers as integers).
TEST(EmitPython, InputsAreBitExact) {
  std::string text = R"(divfuzz v1
input %f: f32[8] = values(-0.0, 0x1p-149, 0x1.fffffep+127, inf, -inf, nan, 0.1, -3.5)
input %h: f16[2,2] = special(seed=5)
input %g: bf16[3] = uniform(seed=1, low=-2.0, high=2.0)
input %d: f64[5] = normal(seed=11, mean=1.0, std=100.0)
input %c: c128[2] = values(0.1, -0.2, inf, nan)
input %i: i64[3] = values(-9223372036854775808, 9223372036854774784, 0)
input %u: u8[2] = values(0, 255)
input %b: bool[3] = values(1, 0, 1)
input %s: f32[] = fill(0.3)
input %e: f32[0,3] = fill(1.0)
%y = aten::clone(%f)
output %y
)";
  graph::Program p = Parse(text);
  std::string script = EmitPython(p, Spec(0));
  divfuzz::testing::CommandRun run = RunScript(script, "--dump-inputs");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::map<std::string, std::vector<std::string>> dumped;
  std::istringstream lines(run.output);
  std::string line;
  while (std::getline(lines, line)) {
    size_t colon = line.find(':');
    ASSERT_NE(colon, std::string::npos) << line;
    std::string name = line.substr(0, line.find(' '));
    std::istringstream values(line.substr(colon + 1));
    std::string v;
    while (values >> v) dumped[name].push_back(v);
  }
  for (const graph::Input& input : p.inputs) {
    std::vector<double> want = graph::MaterializePayload(input);
    const std::vector<std::string>& got = dumped[input.name];
    ASSERT_EQ(got.size(), want.size()) << input.name;
    for (size_t i = 0; i < want.size(); ++i) {
      double g = std::strtod(got[i].c_str(), nullptr);
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(g)) << input.name << "[" << i << "]";
      } else {
        EXPECT_TRUE(SameBits(g, want[i])) << input.name << "[" << i << "]: " << got[i] << " vs "
                                          << graph::FormatHexFloat(want[i]);
      }
    }
  }
}

// No inexact number in the script: every float is a hex literal that parses
// back to a value of the program.
TEST(EmitPython, ScriptHoldsOnlyExactFloats) {
  graph::Program p = Parse(R"(divfuzz v1
input %x: f32[4] = uniform(seed=3, low=-0.35, high=0.35)
input %y: f64[3] = values(0.1, 1e-310, -2.5)
%z = aten::add.Scalar(%x, 0.1, alpha=3)
%w = aten::clamp(%y, min=-0.7, max=inf)
output %z, %w
)");
  std::string script = EmitPython(p, Spec(0));
  std::vector<double> allowed = {0.1, -0.7};
  for (const graph::Input& input : p.inputs) {
    for (double v : graph::MaterializePayload(input)) allowed.push_back(v);
  }
  std::regex hex(R"('(-?0x[0-9a-fA-F.]+p[-+][0-9]+)')");
  int count = 0;
  for (auto it = std::sregex_iterator(script.begin(), script.end(), hex);
       it != std::sregex_iterator(); ++it) {
    std::string text = (*it)[1];
    double v = std::strtod(text.c_str(), nullptr);
    EXPECT_EQ(graph::FormatHexFloat(v), text);  // canonical, so exact
    bool known = false;
    for (double a : allowed) known = known || SameBits(a, v);
    EXPECT_TRUE(known) << text;
    ++count;
  }
  EXPECT_EQ(count, 4 + 3 + 2);
  EXPECT_THAT(script, HasSubstr("float('inf')"));
  // No decimal float literal outside comments and the harness's tolerance table.
  std::string body = script.substr(0, script.find("# ---------------------------------"));
  std::istringstream lines(body);
  std::string line;
  std::regex decimal(R"((^|[^\w.'])\d+\.\d*([eE][-+]?\d+)?)");
  while (std::getline(lines, line)) {
    std::string code = line.substr(0, line.find('#'));
    EXPECT_FALSE(std::regex_search(code, decimal)) << line;
  }
}

TEST(EmitPython, KeywordsPythonCannotSpell) {
  graph::Program p = Parse(R"(divfuzz v1
input %x: f32[4] = fill(0.0)
%y = aten::random_.from(%x, from=1, to=5)
%z = aten::where.ScalarOther(%x, %y, other=-1.5)
output %z
)");
  ReproSpec spec = Spec(0);
  spec.title = "it's \"odd\"\n\xe2\x89\xa0 \xff \\";  // quotes, newline, UTF-8, a stray byte
  std::string script = EmitPython(p, spec);
  EXPECT_THAT(script, HasSubstr("getattr(aten.random_, 'from')(v['x'], to=5, **{'from': 1})"));
  EXPECT_THAT(script, HasSubstr("TITLE = 'it\\'s \"odd\"\\n\\xe2\\x89\\xa0 \\xff \\\\'"));
  EXPECT_THAT(script, HasSubstr("other=F('-0x1.8p+0')"));
  // The script compiles.
  std::string path = WriteScript(script);
  EXPECT_EQ(std::system((divfuzz::testing::Python() + " -m py_compile " + path).c_str()), 0);
  std::remove(path.c_str());
}

TEST(EmitPython, CudaTargetWithoutCuda) {
  if (std::system((divfuzz::testing::Python() +
                   " -c 'import sys, torch; sys.exit(torch.cuda.is_available())'")
                      .c_str()) != 0) {
    GTEST_SKIP() << "CUDA is available here";
  }
  ReproSpec spec = Spec(1);
  spec.target_a = "cuda";
  std::string script = EmitPython(Parse(kCancellation), spec);
  divfuzz::testing::CommandRun run = RunScript(script);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("CUDA not available: skipping"));
  // The other pair still runs when asked for.
  EXPECT_EQ(RunScript(script, "--target-a cpu").exit_code, 1);
}

TEST(EmitPython, ScalarKernelsTargetRunsInAChild) {
  ReproSpec spec = Spec(1);
  spec.target_a = "cpu-scalar";
  divfuzz::testing::CommandRun run = RunScript(EmitPython(Parse(kCancellation), spec));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("cpu-scalar vs cpu-f64"));
}

TEST(EmitPython, BadSpecExitsTwo) {
  divfuzz::testing::CommandRun run = RunScript(EmitPython(Parse(kCancellation), Spec(7)));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  run = RunScript(EmitPython(Parse(kCancellation), Spec(0, 1)));
  EXPECT_EQ(run.exit_code, 2) << run.output;
}

// The values the script prints for each side are the executor's, bit for
// bit; it shows each side's float64 reference and says which side is wrong.
TEST(EmitPython, PrintsTheValuesTheExecutorSaw) {
  graph::Program p = Parse(R"(divfuzz v1
input %a: f32[2,3] = values(100000000.0, 0.5, -2.0, 0.1, 3.0, -0.0)
input %b: f32[2,3] = uniform(seed=4, low=0.0, high=2.0)
%c = aten::add.Tensor(%a, %b, alpha=3)
%d = aten::sub.Tensor(%c, %a)
output %d
)");
  ReproSpec spec = Spec(1);
  spec.seen = "tolerance at element 0";
  divfuzz::testing::CommandRun run = RunScript(EmitPython(p, spec));
  ASSERT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("divfuzz saw: tolerance at element 0"));
  EXPECT_THAT(run.output, HasSubstr("float64 reference from cpu's own inputs: "));
  EXPECT_THAT(run.output, HasSubstr("cpu matches the float64 reference computed from its own"));
  EXPECT_THAT(run.output, HasSubstr("error 0 ULPs"));
  EXPECT_THAT(run.output, HasSubstr("WRONG SIDE: undecided"));
  const auto types = ops::InferProgram(p);
  ASSERT_TRUE(types.ok());
  for (exec::Target t : {exec::Target::kCpu, exec::Target::kCpuF64}) {
    const exec::RunResult r = exec::Run(p, *types, t);
    const at::Tensor want = r.nodes[1].outputs[0].to(at::kDouble).contiguous().reshape({-1});
    const std::string side(exec::TargetName(t));
    std::istringstream lines(run.output);
    std::string line;
    bool in_side = false;
    std::vector<double> got;
    while (std::getline(lines, line)) {
      if (line.rfind(side + ": dtype", 0) == 0) in_side = true;
      if (in_side && line.rfind("  exact: ", 0) == 0) {
        std::istringstream values(line.substr(9));
        std::string v;
        while (values >> v) got.push_back(std::strtod(v.c_str(), nullptr));
        break;
      }
    }
    ASSERT_EQ(got.size(), static_cast<size_t>(want.numel())) << side << "\n" << run.output;
    for (int64_t i = 0; i < want.numel(); ++i) {
      EXPECT_TRUE(SameBits(got[i], want.data_ptr<double>()[i])) << side << "[" << i << "]";
    }
  }
}

TEST(EmitPython, SnippetRunsOnItsOwn) {
  ReproSpec spec = Spec(1);
  std::string snippet = EmitPythonSnippet(Parse(kCancellation), spec);
  EXPECT_THAT(snippet, Not(HasSubstr("def main")));
  divfuzz::testing::CommandRun run = RunScript(snippet);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("cpu:      tensor([0.])"));
  EXPECT_THAT(run.output, HasSubstr("float64:  tensor([1.], dtype=torch.float64)"));
}

// Input layouts are rebuilt on each side's device and dtype: aten::stride.int
// reports them, and a view that needs a contiguous input fails on them.
constexpr char kLayoutProgram[] = R"(divfuzz v1
input %x: f32[3,5] layout=strided = planted(seed=1)
input %c: f64[2,3,4,5] layout=channels_last = edges(seed=2)
input %t: f32[4,6] layout=transposed = planted(seed=3)
%a = aten::stride.int(%x, 1)
%b = aten::stride.int(%c, 1)
%v = aten::view(%t, [24])
output %a, %b, %v
)";

TEST(EmitPython, RebuildsInputLayouts) {
  const graph::Program p = Parse(kLayoutProgram);
  const std::string script = EmitPython(p, Spec(0));
  EXPECT_THAT(script, HasSubstr("LAYOUTS = {'x': 'strided', 'c': 'channels_last', "
                                "'t': 'transposed'}"));
  // stride 2 on every side (the scalar kernels' child runs the same run()).
  divfuzz::testing::CommandRun run = RunScript(script);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  std::vector<std::string> sides = {"cpu", "cpu-f64"};
  if (exec::CudaAvailable()) sides.push_back("cuda");
  for (const std::string& side : sides) {
    EXPECT_THAT(run.output, HasSubstr(side + ": dtype torch.int64, shape []\ntensor(2)"));
  }
  // The snippet too: the transposed input cannot be viewed flat.
  run = RunScript(EmitPythonSnippet(p, Spec(2)));
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("view size is not compatible"));
}

// A decomposition's factors are free up to sign: like the oracle, the script
// compares invariants (here eigenvalues and V diag(w) V^T). Found by a
// campaign here: eigh of a matrix with one huge off-diagonal entry.
TEST(EmitPython, DecompositionsCompareInvariants) {
  graph::Program p = Parse(R"(divfuzz v1
input %m: f32[4,4] = values(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, 0x1.2ced32p+126, 0, 0)
%w, %v = aten::linalg_eigh(%m)
output %w
)");
  std::string script = EmitPython(p, Spec(0));
  EXPECT_THAT(script, HasSubstr("INVARIANTS = 'eigh'"));
  divfuzz::testing::CommandRun run = RunScript(script);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("cpu invariant 1: dtype torch.float32, shape [4, 4]"));
  EXPECT_THAT(run.output, HasSubstr("tolerance: invariant 1 of the decomposition"));
  EXPECT_THAT(EmitPython(Parse(kCancellation), Spec(1)), HasSubstr("INVARIANTS = None"));
}

// The seed case runs end to end. Its verdict depends on the CPU (see
// /work/shared/seed-case.md): only the script's own success is checked.
TEST(EmitPython, SeedCase) {
#ifdef DIVFUZZ_SOURCE_DIR
  std::string path = std::string(DIVFUZZ_SOURCE_DIR) + "/corpus/seed/seed_case_logdet.dfz";
#else
  std::string path = "corpus/seed/seed_case_logdet.dfz";
#endif
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  graph::Program p = Parse(text.str());
  ASSERT_EQ(p.nodes.size(), 6u);
  ASSERT_EQ(p.nodes[4].op, "aten::logdet");
  divfuzz::testing::CommandRun run = RunScript(EmitPython(p, Spec(4)));
  EXPECT_TRUE(run.exit_code == 0 || run.exit_code == 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("VERDICT"));
  EXPECT_THAT(run.output, HasSubstr("Output %d: result 0 of node 4, aten::logdet"));
}

// The policy in effect (--policy) reaches the script: its tolerances at the
// diverging op, which decide the verdict as they do in the oracle.
TEST(EmitPython, PolicyTolerancesReachTheScript) {
  const graph::Program p = Parse(kCancellation);
  // The default policy: |0 - 1| > 1e-5 + 1.3e-6 * 1 reproduces.
  EXPECT_THAT(EmitPython(p, Spec(1)), HasSubstr("torch.float32: (1.3e-06, 1e-05),"));
  absl::StatusOr<oracles::Policy> loose = oracles::ParsePolicy(
      R"({"defaults": {"f32": {"rtol": 2, "atol": 1e-5}}})", "loose.json");
  ASSERT_TRUE(loose.ok()) << loose.status();
  std::string script = EmitPython(p, Spec(1), *loose);
  EXPECT_THAT(script, HasSubstr("torch.float32: (2.0, 1e-05),"));
  EXPECT_THAT(script, HasSubstr("torch.complex64: (2.0, 1e-05),"));
  EXPECT_THAT(script, HasSubstr("torch.float64: (1e-07, 1e-07),"));
  divfuzz::testing::CommandRun run = RunScript(script);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("equal within rtol 2.0, atol 1e-05"));
  // An override for the diverging op wins over the defaults, as in the oracle.
  oracles::Policy per_op = oracles::DefaultPolicy();
  per_op.overrides["aten::sub"][graph::DType::kF32] = {1.3e-6, 2.0};
  script = EmitPython(p, Spec(1), per_op);
  EXPECT_THAT(script, HasSubstr("torch.float32: (1.3e-06, 2.0),"));
  EXPECT_EQ(RunScript(script).exit_code, 0);
  // Not for another node's op.
  EXPECT_THAT(EmitPython(p, Spec(0), per_op), HasSubstr("torch.float32: (1.3e-06, 1e-05),"));
}

// An emitted script is lint-clean: pyflakes finds no undefined or unused name
// in the program part the emitter writes around the harness.
TEST(EmitPython, EmittedScriptsLint) {
  divfuzz::testing::CommandRun which =
      divfuzz::testing::RunShell("command -v pyflakes3 || command -v pyflakes");
  if (which.exit_code != 0) GTEST_SKIP() << "no pyflakes (Debian python3-pyflakes)";
  const std::string pyflakes = which.output.substr(0, which.output.find('\n'));
  const graph::Program p = Parse(R"(divfuzz v1
input %a: f32[2] = values(1.0, 2.0)
input %c: c64[1] = values(0.5, -0.5)
input %i: i32[2] layout=strided = values(1, 2)
%b = aten::add.Tensor(%a, %a, alpha=2)
%q, %r = aten::linalg_qr(%b)
output %b
)");
  ReproSpec rerun = Spec(0);
  rerun.rerun_target = "cpu";
  for (const std::string& script :
       {EmitPython(p, Spec(0)), EmitPython(p, Spec(1, 1)), EmitPython(p, rerun),
        EmitPythonSnippet(p, Spec(0)), EmitPythonSnippet(p, rerun)}) {
    const std::string path = WriteScript(script);
    divfuzz::testing::CommandRun run = divfuzz::testing::RunShell(pyflakes + " " + path);
    EXPECT_EQ(run.exit_code, 0) << run.output << "\n" << script;
    EXPECT_EQ(run.output, "") << script;
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace divfuzz::minimize
