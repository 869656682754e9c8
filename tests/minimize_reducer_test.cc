// The reducer on real libtorch: each pass, signatures kept for divergences
// planted in deliberately faulty targets, the seed case, determinism.
#include <ATen/ops/full_like.h>
#include <ATen/ops/linalg_det.h>
#include <ATen/ops/linalg_lu_factor_ex.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "gmock/gmock.h"
#include "graph/printer.h"
#include "gtest/gtest.h"
#include "minimize/pass.h"
#include "minimize/program_edit.h"
#include "minimize/reducer.h"
#include "oracles/attribution.h"
#include "tests/faulty_targets.h"
#include "tests/test_util.h"

namespace divfuzz::minimize {
namespace {

using ::testing::HasSubstr;
using testing::MustInfer;
using testing::MustParse;

// A real run with node outputs of one op rewritten by `plant` (given the
// node's inputs on that side and its outputs).
using Plant =
    std::function<void(const std::map<std::string, at::Tensor>& inputs, exec::NodeResult& result)>;

Runner Planted(const std::string& op, Plant plant) {
  return [op, plant](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
    exec::RunResult r = exec::Run(p, t, target);
    for (size_t i = 0; i < p.nodes.size() && i < r.nodes.size(); ++i) {
      if (p.nodes[i].QualifiedName() != op || r.nodes[i].error) continue;
      plant(oracles::NodeInputs(p, static_cast<int>(i), r), r.nodes[i]);
    }
    return r;
  };
}

const at::Tensor& First(const std::map<std::string, at::Tensor>& inputs) {
  return inputs.begin()->second;
}

// Mimics CUDA on the GPU host for the seed case: logdet of an exactly
// singular matrix comes out finite there (LU leaves rounding-sized pivots
// instead of zeros). Runs on the CPU, labelled "cuda".
exec::RunResult GpuLikeLogdetRun(const graph::Program& p, const ops::TypeEnv& t, exec::Target) {
  exec::RunResult r = exec::Run(p, t, exec::Target::kCpu);
  r.target = exec::Target::kCuda;
  for (size_t i = 0; i < p.nodes.size() && i < r.nodes.size(); ++i) {
    if (p.nodes[i].op != "aten::logdet" || r.nodes[i].error) continue;
    const at::Tensor m = oracles::NodeInputs(p, static_cast<int>(i), r)
                             .at(p.nodes[i].args[0].value.s)
                             .to(at::kDouble);
    if (at::linalg_det(m).abs().max().item<double>() != 0) continue;
    const double floor = 0x1p-23 * m.abs().max().item<double>();
    const at::Tensor lu = std::get<0>(at::linalg_lu_factor_ex(m));
    const double v = lu.diagonal(0, -2, -1).abs().clamp_min(floor).log().sum().item<double>();
    r.nodes[i].outputs[0] = at::full_like(r.nodes[i].outputs[0], v);
  }
  return r;
}

ReduceOptions Options(Runner a = nullptr, Runner b = nullptr) {
  ReduceOptions o;
  o.target_a = exec::Target::kCpu;
  o.target_b = exec::Target::kCpuF64;
  o.runner_a = std::move(a);
  o.runner_b = std::move(b);
  o.max_seconds = 60;
  return o;
}

int Ops(const graph::Program& p) { return static_cast<int>(p.nodes.size()); }

// Reduces, checks the kept signature against a fresh evaluation of the
// result, and returns it.
ReduceResult MustReduce(const std::string& text, const ReduceOptions& o,
                        const std::string& want_signature) {
  std::ostringstream log;
  ReduceOptions opts = o;
  opts.log = &log;
  absl::StatusOr<ReduceResult> r = Reduce(MustParse(text), opts);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  EXPECT_EQ(r->signature, want_signature) << log.str();
  absl::StatusOr<Evaluation> e = Evaluate(r->program, o, r->signature, r->tier);
  EXPECT_TRUE(e.ok() && e->found) << graph::PrintProgram(r->program);
  EXPECT_FALSE(r->out_of_time) << log.str();
  EXPECT_EQ(r->program.outputs, std::vector<std::string>{r->evaluation.root.value});
  if (std::getenv("DIVFUZZ_TEST_VERBOSE") != nullptr) {
    std::cerr << log.str() << graph::PrintProgram(r->program);
  }
  return *r;
}

// ----- helpers ------------------------------------------------------------

TEST(ProgramEdit, SliceKeepsWhatTheValueReads) {
  graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[2] = fill(1.0)
input %y: f32[2] = fill(2.0)
%a = aten::exp(%x)
%b = aten::sin(%y)
%c = aten::add.Tensor(%a, %x)
%d = aten::neg(%c)
output %d, %b
)");
  graph::Program s = Slice(p, {"c"});
  EXPECT_EQ(graph::PrintProgram(s), graph::PrintProgram(MustParse(R"(divfuzz v1
input %x: f32[2] = fill(1.0)
%a = aten::exp(%x)
%c = aten::add.Tensor(%a, %x)
output %c
)")));
  EXPECT_EQ(Ancestors(p, 3), (std::set<int>{0, 2}));
}

TEST(ProgramEdit, ResizeKeepsTheLeadingElementsOfEveryKeptRow) {
  graph::Input in = MustParse(R"(divfuzz v1
input %m: f32[3,4] = values(0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23)
%y = aten::neg(%m)
output %y
)")
                        .inputs[0];
  graph::Input r = ResizeInput(in, {0, 1}, {2, 3});
  EXPECT_EQ(r.payload.values, (std::vector<double>{0, 1, 2, 10, 11, 12}));
  r = ResizeInput(in, {1}, {2});  // dim 0 dropped: row 0
  EXPECT_EQ(r.payload.values, (std::vector<double>{0, 1}));
  r = ResizeInput(in, {0}, {3});  // dim 1 dropped: column 0
  EXPECT_EQ(r.payload.values, (std::vector<double>{0, 10, 20}));
}

TEST(ProgramEdit, FrozenInputHoldsTheExactValue) {
  graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[2,2] = values(0.1, -2.5, 1e-30, 3.0)
%y = aten::exp(%x)
output %y
)");
  ops::TypeEnv t = MustInfer(p);
  exec::RunResult r = exec::Run(p, t, exec::Target::kCpu);
  std::optional<graph::Input> in = FrozenInput("y", t.at("y"), r.nodes[0].outputs[0]);
  ASSERT_TRUE(in.has_value());
  graph::Program q;
  q.inputs = {*in};
  graph::Node n;
  n.results = {"z"};
  n.op = "aten::neg";
  n.args = {{"", graph::Literal::Value("y")}};
  q.nodes = {n};
  q.outputs = {"z"};
  q = MustParse(graph::PrintProgram(q));  // survives the text format
  exec::RunResult r2 = exec::Run(q, MustInfer(q), exec::Target::kCpu);
  EXPECT_TRUE(r2.inputs.at("y").equal(r.nodes[0].outputs[0]));
  // A wrong type is refused.
  EXPECT_FALSE(FrozenInput("y", {graph::DType::kF64, {2, 2}}, r.nodes[0].outputs[0]));
}

TEST(Reducer, PassTableNamesEveryPassOnce) {
  std::set<std::string> names;
  for (const PassInfo& p : Passes()) EXPECT_TRUE(names.insert(p.name).second) << p.name;
  EXPECT_EQ(names, (std::set<std::string>{"slice", "delta", "freeze", "gradients", "shapes",
                                          "dtypes", "attributes", "layouts", "values"}));
  ReduceOptions o = Options();
  o.passes = {"nope"};
  EXPECT_EQ(Reduce(MustParse("divfuzz v1\ninput %x: f32[1] = fill(1.0)\n%y = aten::neg(%x)\n"
                             "output %y\n"),
                   o)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Reducer, NoDivergenceIsNotFound) {
  absl::StatusOr<ReduceResult> r =
      Reduce(MustParse("divfuzz v1\ninput %x: f32[3] = fill(0.5)\n%y = aten::neg(%x)\noutput %y\n"),
             Options());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
}

// ----- planted divergences: the signature survives ---------------------------

// logdet at the end of a long chain, with an unrelated branch: the faulty
// target's -inf for a small but well-conditioned determinant.
constexpr char kLogdetChain[] = R"(divfuzz v1
input %m: f32[4,4] = values(0.01, 0, 0, 0, 0, 0.01, 0, 0, 0, 0, 0.01, 0, 0, 0, 0, 0.01)
input %s: f32[4,4] = uniform(seed=5, low=0.5, high=1.5)
input %x: f32[3,5] = uniform(seed=1, low=-1.0, high=1.0)
%a = aten::mul.Scalar(%m, 1.0)
%b = aten::abs(%a)
%c = aten::add.Scalar(%b, 0.0)
%d = aten::relu(%c)
%e = aten::mul.Tensor(%d, %s)
%f = aten::div.Tensor(%e, %s)
%g = aten::neg(%f)
%h = aten::neg(%g)
%l = aten::logdet(%h)
%u = aten::exp(%x)
%v = aten::sin(%u)
output %l, %v
)";

TEST(Reducer, LogdetAfterALongChainReducesToTheLogdet) {
  ReduceOptions o =
      Options([](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
        return testing::FaultyLogdetRun(p, t, target);
      });
  ReduceResult r = MustReduce(kLogdetChain, o, "aten::logdet|f32|class_split|cpu");
  EXPECT_EQ(r.tier, "bug");
  EXPECT_EQ(Ops(r.program), 1) << graph::PrintProgram(r.program);
  ASSERT_EQ(r.program.inputs.size(), 1u);
  EXPECT_LE(r.program.inputs[0].type.Numel(), 16);
  EXPECT_EQ(r.nodes_before, 11);
  EXPECT_EQ(r.nodes_after, 1);
}

TEST(Reducer, PlantedNaNInExpShrinksToOneElement) {
  Runner faulty = Planted("aten::exp", [](const auto& inputs, exec::NodeResult& n) {
    const at::Tensor x = First(inputs);
    n.outputs[0] = n.outputs[0].masked_fill(x.gt(10), std::numeric_limits<double>::quiet_NaN());
  });
  ReduceResult r = MustReduce(R"(divfuzz v1
input %x: f32[6,5] = uniform(seed=3, low=0.0, high=12.0)
input %w: f32[6,5] = uniform(seed=4, low=0.0, high=1.0)
%y = aten::add.Scalar(%x, 0.5)
%z = aten::abs(%y)
%q = aten::mul.Tensor(%w, %w)
%e = aten::exp(%z)
%o = aten::add.Tensor(%e, %q)
output %o
)",
                              Options(faulty), "aten::exp|f32|class_split|cpu");
  EXPECT_EQ(Ops(r.program), 1) << graph::PrintProgram(r.program);
  EXPECT_EQ(r.elements_after, 1) << graph::PrintProgram(r.program);
}

TEST(Reducer, PlantedErrorSplitInMmKeepsTheSmallestFailingShape) {
  Runner faulty = Planted("aten::mm", [](const auto& inputs, exec::NodeResult& n) {
    for (const auto& [name, t] : inputs) {
      if (t.dim() == 2 && t.size(0) > 2 && t.size(1) > 2) {
        n.outputs.clear();
        n.error = exec::NodeError{exec::NodeError::Kind::kRaised, "planted: mm refuses"};
        return;
      }
    }
  });
  ReduceResult r = MustReduce(R"(divfuzz v1
input %a: f32[5,6] = normal(seed=1, mean=0.0, std=1.0)
input %b: f32[6,4] = normal(seed=2, mean=0.0, std=1.0)
%c = aten::sin(%a)
%d = aten::cos(%b)
%m = aten::mm(%c, %d)
%n = aten::neg(%m)
output %n
)",
                              Options(faulty), "aten::mm|f32|error_split|cpu");
  EXPECT_EQ(Ops(r.program), 1) << graph::PrintProgram(r.program);
  // One operand must stay at least 3x3; the other shrinks to the least that
  // still type-checks.
  EXPECT_LE(r.elements_after, 9 + 3) << graph::PrintProgram(r.program);
}

TEST(Reducer, PlantedSumErrorIsATolerance) {
  Runner faulty = Planted("aten::sum", [](const auto& inputs, exec::NodeResult& n) {
    if (First(inputs).numel() >= 4) n.outputs[0] = n.outputs[0].mul(1.001);
  });
  ReduceResult r = MustReduce(R"(divfuzz v1
input %x: f32[8,8] = uniform(seed=9, low=1.0, high=2.0)
input %k: f32[8] = fill(3.0)
%y = aten::mul.Tensor(%x, %k)
%z = aten::sqrt(%y)
%s = aten::sum(%z)
%t = aten::exp(%s)
output %t
)",
                              Options(faulty), "aten::sum|f32|tolerance|cpu");
  EXPECT_EQ(Ops(r.program), 1) << graph::PrintProgram(r.program);
  EXPECT_EQ(r.elements_after, 4) << graph::PrintProgram(r.program);
  // Values simplified: a fill (of 1) is enough.
  EXPECT_EQ(r.program.inputs[0].payload.kind, graph::Payload::Kind::kFill)
      << graph::PrintProgram(r.program);
}

TEST(Reducer, AttributesGoBackToDefaultsAndDTypesToF32) {
  // The planted bug needs only the f32 sum; the f64 input, the dtype
  // argument and the keepdim flag are noise.
  Runner faulty = Planted("aten::sum.dim_IntList", [](const auto&, exec::NodeResult& n) {
    n.outputs[0] = n.outputs[0].add(1.0);
  });
  ReduceResult r = MustReduce(R"(divfuzz v1
input %x: f64[2,3] = uniform(seed=9, low=1.0, high=2.0)
%y = aten::to.dtype(%x, f32)
%s = aten::sum.dim_IntList(%y, [1], True, dtype=f32)
output %s
)",
                              Options(faulty), "aten::sum.dim_IntList|f32|tolerance|cpu");
  const std::string text = graph::PrintProgram(r.program);
  EXPECT_THAT(text, ::testing::Not(HasSubstr("dtype=")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("True")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("f64")));
}

TEST(Reducer, LayoutsGoBackToContiguous) {
  // The planted bug does not depend on the layouts: they are noise.
  Runner faulty = Planted(
      "aten::neg", [](const auto&, exec::NodeResult& n) { n.outputs[0] = n.outputs[0].add(1.0); });
  ReduceResult r = MustReduce(R"(divfuzz v1
input %x: f32[2,3,4,5] layout=channels_last = planted(seed=1)
input %y: f32[4,6] layout=transposed = ill_conditioned(seed=2)
%a = aten::neg(%x)
%b = aten::mul.Tensor(%y, %y)
output %a, %b
)",
                              Options(faulty), "aten::neg|f32|tolerance|cpu");
  EXPECT_THAT(graph::PrintProgram(r.program), ::testing::Not(HasSubstr("layout=")));
}

TEST(Reducer, IsDeterministic) {
  ReduceOptions o =
      Options([](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
        return testing::FaultyLogdetRun(p, t, target);
      });
  absl::StatusOr<ReduceResult> r1 = Reduce(MustParse(kLogdetChain), o);
  absl::StatusOr<ReduceResult> r2 = Reduce(MustParse(kLogdetChain), o);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(graph::PrintProgram(r1->program), graph::PrintProgram(r2->program));
  EXPECT_EQ(r1->tests, r2->tests);
}

TEST(Reducer, BudgetIsRespected) {
  ReduceOptions o =
      Options([](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
        return testing::FaultyLogdetRun(p, t, target);
      });
  o.max_seconds = 0;
  absl::StatusOr<ReduceResult> r = Reduce(MustParse(kLogdetChain), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->out_of_time);
  EXPECT_EQ(r->tests, 0);
  EXPECT_EQ(graph::PrintProgram(r->program), graph::PrintProgram(MustParse(kLogdetChain)));
}

TEST(Reducer, PrintsProgressPerPass) {
  std::ostringstream log;
  ReduceOptions o =
      Options([](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
        return testing::FaultyLogdetRun(p, t, target);
      });
  o.log = &log;
  ASSERT_TRUE(Reduce(MustParse(kLogdetChain), o).ok());
  EXPECT_THAT(log.str(), HasSubstr("reduce: round 1 slice      nodes 11 -> 9"));
  EXPECT_THAT(log.str(), HasSubstr("delta"));
  EXPECT_THAT(log.str(), HasSubstr("reduce: done: aten::logdet|f32|class_split|cpu"));
}

// ----- the seed case -----------------------------------------------------

graph::Program SeedCase() {
  std::ifstream in(std::string(DIVFUZZ_SOURCE_DIR) + "/corpus/seed/seed_case_logdet.dfz");
  std::stringstream text;
  text << in.rdbuf();
  return MustParse(text.str());
}

void ExpectSeedAcceptance(const ReduceResult& r) {
  EXPECT_LE(Ops(r.program), 2) << graph::PrintProgram(r.program);
  for (const graph::Input& in : r.program.inputs) {
    ASSERT_LE(in.type.shape.size(), 2u) << graph::PrintProgram(r.program);
    for (int64_t s : in.type.shape) EXPECT_LE(s, 4) << graph::PrintProgram(r.program);
  }
}

// cpu vs cpu-f64 on this machine: u has rank 1 and both sides round it to an
// exactly singular matrix here, so logdet is -inf on both and the program may
// not diverge at all. Whatever divergence it has here must reduce.
TEST(SeedCase, CpuVsReferenceReducesWhateverDivergesHere) {
  const graph::Program seed = SeedCase();
  absl::StatusOr<Evaluation> e = Evaluate(seed, Options());
  ASSERT_TRUE(e.ok());
  absl::StatusOr<ReduceResult> r = Reduce(seed, Options());
  if (!e->found) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
    GTEST_SKIP() << "the seed program does not diverge on cpu vs cpu-f64 here";
  }
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSeedAcceptance(*r);
}

// The faulty target gives -inf on cpu, like the report; the GPU-like target
// gives a finite value for the exactly singular u, like the GPU host's CUDA.
TEST(SeedCase, FaultyCpuVsGpuLikeReducesToLogdetOnASmallInput) {
  const graph::Program seed = SeedCase();
  ReduceOptions o =
      Options([](const graph::Program& p, const ops::TypeEnv& t,
                 exec::Target target) { return testing::FaultyLogdetRun(p, t, target); },
              GpuLikeLogdetRun);
  o.target_b = exec::Target::kCuda;
  absl::StatusOr<Evaluation> e = Evaluate(seed, o);
  ASSERT_TRUE(e.ok() && e->found);
  EXPECT_EQ(e->root.op, "aten::logdet");
  EXPECT_EQ(e->a.nodes[4].outputs[0].item<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isfinite(e->b.nodes[4].outputs[0].item<double>()));
  std::ostringstream log;
  o.log = &log;
  absl::StatusOr<ReduceResult> r = Reduce(seed, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->signature, oracles::Signature(e->root));
  EXPECT_EQ(r->evaluation.root.op, "aten::logdet");
  ExpectSeedAcceptance(*r);
  EXPECT_FALSE(r->out_of_time) << log.str();
  if (std::getenv("DIVFUZZ_TEST_VERBOSE") != nullptr) {
    std::cerr << log.str() << graph::PrintProgram(r->program);
  }
}

}  // namespace
}  // namespace divfuzz::minimize
