// Gradient statements (graph/gradient.h) in the reducer and the repros:
// repro.py's gradients equal the executor's bit for bit on the CPU, the
// reducer shrinks a gradient program and keeps it valid, and `divfuzz
// repro` of a gradient finding writes a repro.py that reproduces it and a
// report.md that names the backward kernel and its derivative formula.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "gmock/gmock.h"
#include "graph/gradient.h"
#include "graph/printer.h"
#include "graph/validate.h"
#include "gtest/gtest.h"
#include "minimize/emit_python.h"
#include "minimize/emit_report.h"
#include "minimize/reducer.h"
#include "minimize/repro.h"
#include "ops/infer.h"
#include "tests/test_util.h"

namespace divfuzz::minimize {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::CommandRun;
using testing::MustInfer;
using testing::MustParse;

CommandRun RunScript(const std::string& script, const std::string& args = "") {
  std::string path = ::testing::TempDir() + "/grad_repro_XXXXXX.py";
  const int fd = ::mkstemps(path.data(), 3);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path, std::ios::binary) << script;
  CommandRun run = testing::RunShell(testing::Python() + " " + path + " " + args);
  std::remove(path.c_str());
  return run;
}

ReproSpec Spec(int node, int output = 0) {
  ReproSpec spec;
  spec.node_index = node;
  spec.output_index = output;
  spec.title = "gradient";
  return spec;
}

// The numbers of the "  exact: " line under "<side>: dtype ...".
std::vector<double> PrintedExact(const std::string& output, const std::string& side) {
  std::istringstream lines(output);
  std::string line;
  bool in_side = false;
  while (std::getline(lines, line)) {
    if (line.rfind(side + ": dtype", 0) == 0) in_side = true;
    if (in_side && line.rfind("  exact: ", 0) == 0) {
      std::vector<double> got;
      std::istringstream values(line.substr(9));
      std::string v;
      while (values >> v) {
        if (v != "...") got.push_back(std::strtod(v.c_str(), nullptr));
      }
      return got;
    }
  }
  return {};
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Each side's printed value of result `output` of node `node` is the
// executor's, bit for bit.
void ExpectExecutorBits(const graph::Program& p, int node, int output, const std::string& out) {
  const ops::TypeEnv types = MustInfer(p);
  for (exec::Target t : {exec::Target::kCpu, exec::Target::kCpuF64}) {
    const exec::RunResult r = exec::Run(p, types, t);
    ASSERT_LT(static_cast<size_t>(node), r.nodes.size());
    ASSERT_FALSE(r.nodes[node].error) << r.nodes[node].error->message;
    const at::Tensor want =
        r.nodes[node].outputs[output].to(at::kDouble).contiguous().reshape({-1});
    const std::string side(exec::TargetName(t));
    const std::vector<double> got = PrintedExact(out, side);
    ASSERT_EQ(got.size(), static_cast<size_t>(want.numel())) << side << "\n" << out;
    for (int64_t i = 0; i < want.numel(); ++i) {
      EXPECT_TRUE(SameBits(got[i], want.data_ptr<double>()[i]))
          << side << "[" << i << "]: " << got[i] << " vs " << want.data_ptr<double>()[i];
    }
  }
}

constexpr char kSinh[] = R"(divfuzz v1
input %x: f32[4] = values(0.5, -1.25, 2.0, 3.5)
input %v: f32[4] = values(1.0, 0.5, -0.25, 3.0)
%y = aten::sinh(%x)
%g = autograd::grad(%y, [%x], grad_outputs=%v)
output %g
)";

TEST(GradientRepro, PythonGradientEqualsTheExecutorsBitForBit) {
  const graph::Program p = MustParse(kSinh);
  const std::string script = EmitPython(p, Spec(1));
  EXPECT_THAT(script, HasSubstr("WRT = ('x',)"));
  EXPECT_THAT(script, HasSubstr("GRADIENT = True"));
  EXPECT_THAT(script, HasSubstr("_grad([v['y']], [v['x']], [v['v']], create_graph=False)[0]"));
  const CommandRun run = RunScript(script);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("VERDICT: no divergence"));
  EXPECT_THAT(run.output, HasSubstr("float64 gradient (the whole program in float64"));
  ExpectExecutorBits(p, 1, 0, run.output);
  // A forward node of a gradient program is judged as before.
  const CommandRun forward = RunScript(EmitPython(p, Spec(0)));
  EXPECT_EQ(forward.exit_code, 0) << forward.output;
  ExpectExecutorBits(p, 0, 0, forward.output);
}

// An input no output reaches gets zeros; a gradient of a gradient builds the
// first one's graph (second order).
TEST(GradientRepro, UnusedInputsGetZerosAndSecondOrderRuns) {
  const graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[3] = values(0.5, -1.25, 2.0)
input %w: f32[2,2] layout=transposed = values(1.0, 2.0, 3.0, 4.0)
input %v: f32[3] = fill(1.0)
input %u: f32[3] = values(1.0, 0.5, 0.25)
%y = aten::sinh(%x)
%gx, %gw = autograd::grad(%y, [%x, %w], grad_outputs=%v)
%h = autograd::grad(%gx, [%x], grad_outputs=%u)
%k = aten::mul.Tensor(%h, %gx)
output %k, %gw
)");
  const std::string script = EmitPython(p, Spec(2));
  EXPECT_THAT(script, HasSubstr("create_graph=True"));
  CommandRun run = RunScript(script);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  ExpectExecutorBits(p, 2, 0, run.output);
  run = RunScript(EmitPython(p, Spec(1, 1)));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("exact: 0x0.0p+0"));
  ExpectExecutorBits(p, 1, 1, run.output);
  run = RunScript(EmitPython(p, Spec(3)));  // a node that reads gradients
  EXPECT_EQ(run.exit_code, 0) << run.output;
  ExpectExecutorBits(p, 3, 0, run.output);
  // The snippet for an issue runs on its own.
  const CommandRun snippet = RunScript(EmitPythonSnippet(p, Spec(2)));
  EXPECT_EQ(snippet.exit_code, 0) << snippet.output;
  EXPECT_THAT(snippet.output, HasSubstr("float64: "));
}

// sinh'(90) = cosh(90) overflows float32 on the CPU: inf * 0.01 where the
// float64 gradient is 6.1e36 (a class split the CPU's backward kernel makes).
constexpr char kOverflow[] = R"(divfuzz v1
input %x: f32[4] = values(90.0, 1.0, 2.0, -3.0)
input %w: f32[4] = values(0.5, 0.25, 1.0, 2.0)
input %v: f32[4] = values(0.01, 0.5, 0.25, 0.125)
%a = aten::mul.Tensor(%w, %w)
%y = aten::sinh(%x)
%z = aten::add.Tensor(%y, %a)
%gx, %gw = autograd::grad(%z, [%x, %w], grad_outputs=%v)
%q = aten::neg(%gx)
output %q, %gw
)";

TEST(GradientRepro, PythonReproducesAGradientClassSplit) {
  const graph::Program p = MustParse(kOverflow);
  ReproSpec spec = Spec(3);
  spec.backward = "SinhBackward0, the backward of node 1 (aten::sinh)";
  const CommandRun run = RunScript(EmitPython(p, spec));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("backward kernel: SinhBackward0"));
  EXPECT_THAT(run.output, HasSubstr("VERDICT: divergence reproduces (cpu vs cpu-f64): class_split"));
  EXPECT_THAT(run.output, HasSubstr("cpu misses the float64 gradient of the whole program"));
  EXPECT_THAT(run.output, HasSubstr("WRONG SIDE: cpu"));
  ExpectExecutorBits(p, 3, 0, run.output);
}

TEST(GradientRepro, EmittedGradientScriptsLint) {
  const CommandRun which = testing::RunShell("command -v pyflakes3 || command -v pyflakes");
  if (which.exit_code != 0) GTEST_SKIP() << "no pyflakes";
  const std::string pyflakes = which.output.substr(0, which.output.find('\n'));
  const graph::Program p = MustParse(kOverflow);
  for (const std::string& script : {EmitPython(p, Spec(3)), EmitPythonSnippet(p, Spec(3))}) {
    std::string path = ::testing::TempDir() + "/grad_lint_XXXXXX.py";
    const int fd = ::mkstemps(path.data(), 3);
    ::close(fd);
    std::ofstream(path, std::ios::binary) << script;
    const CommandRun run = testing::RunShell(pyflakes + " " + path);
    EXPECT_EQ(run.output, "") << script;
    std::remove(path.c_str());
  }
}

const graph::Node* OnlyGradNode(const graph::Program& p) {
  const graph::Node* found = nullptr;
  for (const graph::Node& n : p.nodes) {
    if (graph::IsGradNode(n)) {
      EXPECT_EQ(found, nullptr) << graph::PrintProgram(p);
      found = &n;
    }
  }
  return found;
}

TEST(GradientReducer, ShrinksAPaddedGradientProgramAndKeepsItValid) {
  const graph::Program p = MustParse(kOverflow);
  ReduceOptions o;
  o.target_a = exec::Target::kCpu;
  o.target_b = exec::Target::kCpuF64;
  o.max_seconds = 60;
  absl::StatusOr<ReduceResult> r = Reduce(p, o);
  ASSERT_TRUE(r.ok()) << r.status();
  const graph::Program& m = r->program;
  EXPECT_TRUE(graph::ValidateProgram(m).ok()) << graph::PrintProgram(m);
  EXPECT_THAT(r->signature, HasSubstr("SinhBackward0|f32|class_split"));
  EXPECT_LT(m.nodes.size(), p.nodes.size()) << graph::PrintProgram(m);
  const graph::Node* g = OnlyGradNode(m);
  ASSERT_NE(g, nullptr) << graph::PrintProgram(m);
  const graph::GradCallOrError call = graph::ParseGradCall(*g);
  ASSERT_TRUE(call.call.has_value()) << call.error;
  EXPECT_EQ(call.call->wrt, std::vector<std::string>{"x"}) << graph::PrintProgram(m);
  EXPECT_EQ(r->evaluation.root.backward_of >= 0, true) << graph::PrintProgram(m);
  // neg, mul and add are gone; sinh stays (its backward is the finding).
  EXPECT_THAT(graph::PrintProgram(m), HasSubstr("aten::sinh"));
  EXPECT_THAT(graph::PrintProgram(m), Not(HasSubstr("aten::neg")));
  EXPECT_THAT(graph::PrintProgram(m), Not(HasSubstr("aten::mul")));
}

// A side branch whose node raises on both sides leaves the gradient's
// divergence as it was: the attributes pass must not drop a required scalar
// (add.Scalar's `other`), or min.dfz holds a call no repro can make.
TEST(GradientReducer, KeepsRequiredScalarsOfNodesBesideTheFinding) {
  const graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[4] = values(90.0, 1.0, 2.0, -3.0)
input %v: f32[4] = values(0.01, 0.5, 0.25, 0.125)
%y = aten::sinh(%x)
%b = aten::add.Scalar(%x, 2.0)
%c = aten::atan(%b)
%gx = autograd::grad(%y, [%x], grad_outputs=%v)
output %gx, %c
)");
  ReduceOptions o;
  o.target_a = exec::Target::kCpu;
  o.target_b = exec::Target::kCpuF64;
  o.max_seconds = 60;
  o.passes = {"attributes"};
  absl::StatusOr<ReduceResult> r = Reduce(p, o);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string text = graph::PrintProgram(r->program);
  EXPECT_THAT(text, HasSubstr("aten::add.Scalar(%x, ")) << text;
  const exec::RunResult run =
      exec::Run(r->program, MustInfer(r->program), exec::Target::kCpu);
  for (const exec::NodeResult& n : run.nodes) {
    EXPECT_FALSE(n.error && n.error->kind == exec::NodeError::Kind::kBadArguments)
        << n.error->message << "\n" << text;
  }
}

// A divergence planted at the gradient statement itself (no backward kernel
// singles it out): the pass drops the extra input and output and turns the
// computed cotangent into ones.
TEST(GradientReducer, DropsInputsAndOutputsAndMakesCotangentsOnes) {
  const graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[3] = values(0.5, -1.25, 2.0)
input %w: f32[3] = values(1.5, 2.5, -0.5)
input %u: f32[3] = values(0.3, 0.7, 0.9)
input %s: f32[3] = values(0.25, 0.5, 0.75)
%y = aten::sinh(%x)
%t = aten::mul.Tensor(%w, %x)
%v = aten::exp(%u)
%gx, %gw = autograd::grad([%y, %t], [%x, %w], grad_outputs=[%v, %s])
output %gx
)");
  ReduceOptions o;
  o.target_a = exec::Target::kCpu;
  o.target_b = exec::Target::kCpuF64;
  o.runner_a = [](const graph::Program& prog, const ops::TypeEnv& t, exec::Target target) {
    exec::RunResult r = exec::Run(prog, t, target);
    for (size_t i = 0; i < prog.nodes.size() && i < r.nodes.size(); ++i) {
      if (!graph::IsGradNode(prog.nodes[i]) || r.nodes[i].error) continue;
      r.nodes[i].outputs[0] = r.nodes[i].outputs[0].clone();
      r.nodes[i].outputs[0].reshape({-1})[0] = NAN;
    }
    return r;
  };
  o.passes = {"slice", "gradients"};
  o.max_seconds = 60;
  absl::StatusOr<ReduceResult> r = Reduce(p, o);
  ASSERT_TRUE(r.ok()) << r.status();
  const graph::Program& m = r->program;
  EXPECT_TRUE(graph::ValidateProgram(m).ok()) << graph::PrintProgram(m);
  const graph::Node* g = OnlyGradNode(m);
  ASSERT_NE(g, nullptr);
  const graph::GradCallOrError call = graph::ParseGradCall(*g);
  ASSERT_TRUE(call.call.has_value()) << call.error;
  EXPECT_EQ(call.call->wrt.size(), 1u) << graph::PrintProgram(m);
  EXPECT_EQ(call.call->outputs.size(), 1u) << graph::PrintProgram(m);
  EXPECT_THAT(graph::PrintProgram(m), HasSubstr("fill(1.0)")) << graph::PrintProgram(m);
  EXPECT_THAT(graph::PrintProgram(m), Not(HasSubstr("aten::exp"))) << graph::PrintProgram(m);
}

TEST(GradientRepro, ReproOfAGradientFindingNamesTheBackwardKernel) {
  const graph::Program p = MustParse(kOverflow);
  ReproOptions o;
  o.target_a = exec::Target::kCpu;
  o.target_b = exec::Target::kCpuF64;
  o.max_seconds = 60;
  absl::StatusOr<ReproFiles> f = MakeRepro(p, o);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->reproduced) << f->note;
  EXPECT_THAT(f->report_md, HasSubstr("## Backward kernel"));
  EXPECT_THAT(f->report_md, HasSubstr("`SinhBackward0`"));
  EXPECT_THAT(f->report_md, HasSubstr("`aten::sinh`"));
  EXPECT_THAT(f->report_md, HasSubstr("tools/autograd/derivatives.yaml, entry `sinh`"));
  EXPECT_THAT(f->repro_py, HasSubstr("BACKWARD = 'SinhBackward0, the backward of node"));
  EXPECT_THAT(f->main_cpp, HasSubstr("kBackward = \"SinhBackward0, the backward of node"));
  EXPECT_THAT(f->main_cpp, HasSubstr("kWrt = {\"x\"}"));
  const CommandRun run = RunScript(f->repro_py);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("backward kernel: SinhBackward0"));
  EXPECT_THAT(run.output, HasSubstr("WRONG SIDE: cpu"));
  // The report's snippet runs on its own too.
  const std::string snippet = EmitPythonSnippet(p, Spec(3));
  EXPECT_EQ(RunScript(snippet).exit_code, 0);
}

TEST(GradientReport, DerivativeFormulaNamesTheForwardOpsEntry) {
  oracles::Divergence d;
  EXPECT_EQ(DerivativeFormula(d), "");
  EXPECT_EQ(BackwardLine(d), "");
  d.backward_of = 2;
  d.forward_op = "aten::add.Tensor";
  d.op = "AddBackward0";
  EXPECT_EQ(DerivativeFormula(d), "PyTorch's tools/autograd/derivatives.yaml, entry `add.Tensor`");
  EXPECT_EQ(BackwardLine(d),
            "AddBackward0, the backward of node 2 (aten::add.Tensor); derivative formula: "
            "PyTorch's tools/autograd/derivatives.yaml, entry `add.Tensor`");
}

}  // namespace
}  // namespace divfuzz::minimize
