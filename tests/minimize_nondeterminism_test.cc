// Nondeterminism findings: the reducer keeps a `...|nondeterminism|<side>`
// signature by rerunning that side against itself (a deliberately racing op
// stands in for a real race), the repros rerun it, and the report says so.
#include <ATen/ATen.h>
#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "exec/malloc_perturb.h"
#include "gmock/gmock.h"
#include "graph/printer.h"
#include "gtest/gtest.h"
#include "minimize/emit_cpp.h"
#include "minimize/emit_python.h"
#include "minimize/reducer.h"
#include "minimize/repro.h"
#include "oracles/compare.h"
#include "oracles/expected_rules.h"
#include "store/findings_store.h"
#include "tests/faulty_targets.h"
#include "tests/test_util.h"

namespace divfuzz::minimize {
namespace {

using testing::CommandRun;
using ::testing::HasSubstr;
using testing::MustParse;
using ::testing::Not;
using testing::RunShell;

constexpr char kSignature[] = "aten::cumsum|f32|nondeterminism|cpu";

// The racing cumsum between deterministic neighbours.
constexpr char kChain[] = R"(divfuzz v1
input %x: f32[4,5] = uniform(seed=3, low=-1.0, high=1.0)
input %y: f32[4,5] = uniform(seed=4, low=-1.0, high=1.0)
%a = aten::exp(%x)
%b = aten::mul.Tensor(%a, %y)
%c = aten::cumsum(%b, 0)
%d = aten::tanh(%c)
%e = aten::sum(%d)
output %e
)";

Runner Racing(const std::string& op) {
  return [op](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
    return testing::RacingOpRun(p, t, target, op);
  };
}

ReduceOptions RacingCumsumOnA() {
  ReduceOptions o;
  o.target_a = exec::Target::kCpu;
  o.target_b = exec::Target::kCpuF64;
  o.runner_a = Racing("aten::cumsum");
  o.signature = kSignature;
  o.max_seconds = 60;
  return o;
}

TEST(Nondeterminism, BitwiseDifferenceMatchesNaNsButNotSignedZeros) {
  const at::Tensor a = at::tensor({NAN, 1.0f, 2.0f});
  EXPECT_FALSE(oracles::BitwiseDifference(a, a.clone()).has_value());
  const at::Tensor b = at::tensor({NAN, 1.0f, -0.0f});
  const at::Tensor c = at::tensor({NAN, 1.0f, 0.0f});
  std::optional<oracles::Divergence> d = oracles::BitwiseDifference(b, c);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->element, 2);
  EXPECT_EQ(d->cls, oracles::DivergenceClass::kNondeterminism);
  EXPECT_THAT(d->detail, HasSubstr("element 2"));
}

TEST(Nondeterminism, EvaluateRerunsTheBlamedSideWithItsOwnRunner) {
  const graph::Program p = MustParse(kChain);
  ReduceOptions o = RacingCumsumOnA();
  absl::StatusOr<Evaluation> e = Evaluate(p, o, kSignature);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(e->found);
  EXPECT_EQ(oracles::Signature(e->root), kSignature);
  EXPECT_EQ(e->root.cls, oracles::DivergenceClass::kNondeterminism);
  EXPECT_EQ(e->root.tier, "divergence");
  EXPECT_EQ(e->root.wrong_side, "cpu");
  EXPECT_EQ(e->root.node_index, 2);
  EXPECT_EQ(e->root.output_index, 0);
  EXPECT_EQ(e->root.value, "c");
  EXPECT_EQ(e->root.element, 0);
  EXPECT_TRUE(e->root.root);
  // Usually run 2: its blocks hold 0xa5 where run 1's were zeroed. But the
  // in-process reruns keep glibc's thread cache, whose blocks M_PERTURB never
  // fills, so under load run 1 can get a cached block; the later reruns are
  // there for that. The repro below turns the cache off and must alternate.
  EXPECT_GE(e->rerun, 2);
  EXPECT_LE(e->rerun, kNondeterminismReruns + 1);
  EXPECT_THAT(e->root.reason, HasSubstr("cpu gives different results for the same program"));
  ASSERT_EQ(e->verdict.Roots().size(), 1u);
  // The same race on the other target: the signature's side (cpu) is
  // deterministic here.
  o.runner_b = o.runner_a;
  o.runner_a = nullptr;
  e = Evaluate(p, o, kSignature);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_FALSE(e->found);
  e = Evaluate(p, o, "aten::cumsum|f32|nondeterminism|cpu-f64");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(e->found);
  EXPECT_EQ(e->root.wrong_side, "cpu-f64");
}

TEST(Nondeterminism, ReduceKeepsTheSignatureAndShrinksToTheRacingOp) {
  const graph::Program p = MustParse(kChain);
  ReduceOptions o = RacingCumsumOnA();
  absl::StatusOr<ReduceResult> r = Reduce(p, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->signature, kSignature);
  EXPECT_EQ(oracles::Signature(r->evaluation.root), kSignature);
  EXPECT_EQ(r->tier, "divergence");
  EXPECT_EQ(r->nodes_before, 5);
  ASSERT_EQ(r->program.nodes.size(), 1u) << graph::PrintProgram(r->program);
  EXPECT_EQ(r->program.nodes[0].QualifiedName(), "aten::cumsum");
  EXPECT_EQ(r->evaluation.root.node_index, 0);
  EXPECT_LT(r->elements_after, r->elements_before);
  EXPECT_FALSE(r->out_of_time);
}

TEST(Nondeterminism, DeterministicProgramIsNotFound) {
  const graph::Program p = MustParse(kChain);
  ReduceOptions o = RacingCumsumOnA();
  o.runner_a = nullptr;  // exec::Run: deterministic on the CPU
  absl::StatusOr<ReduceResult> r = Reduce(p, o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("reruns of cpu"));
  // A race in another op does not carry cumsum's signature.
  o.runner_a = Racing("aten::exp");
  r = Reduce(p, o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  // Nor does a deterministic divergence between the targets at the op.
  constexpr char kLogdet[] = R"(divfuzz v1
input %m: f32[4,4] = values(0.01, 0, 0, 0, 0, 0.01, 0, 0, 0, 0, 0.01, 0, 0, 0, 0, 0.01)
%l = aten::logdet(%m)
output %l
)";
  o.runner_a = [](const graph::Program& q, const ops::TypeEnv& t, exec::Target target) {
    return testing::FaultyLogdetRun(q, t, target);
  };
  o.signature = "aten::logdet|f32|class_split|cpu";
  ASSERT_TRUE(Reduce(MustParse(kLogdet), o).ok());  // the split is there ...
  o.signature = "aten::logdet|f32|nondeterminism|cpu";
  r = Reduce(MustParse(kLogdet), o);  // ... but no race
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
}

TEST(Nondeterminism, MakeReproWritesRerunningReprosAndSaysSoInTheReport) {
  ReproOptions o;
  static_cast<ReduceOptions&>(o) = RacingCumsumOnA();
  absl::StatusOr<ReproFiles> f = MakeRepro(MustParse(kChain), o);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->reproduced);
  EXPECT_EQ(f->signature, kSignature);
  ASSERT_TRUE(f->reduction.has_value());
  EXPECT_EQ(f->reduction->nodes_after, 1);
  EXPECT_THAT(f->repro_py, HasSubstr("RERUN = 'cpu'"));
  EXPECT_THAT(f->main_cpp, HasSubstr("kRerun = \"cpu\""));
  EXPECT_THAT(f->report_md,
              HasSubstr("# aten::cumsum (f32): cpu gives different results for the same inputs"));
  EXPECT_THAT(f->report_md, HasSubstr("## Two runs of cpu"));
  EXPECT_THAT(f->report_md, Not(HasSubstr("Expected (float64) vs actual")));
  EXPECT_THAT(f->report_md, HasSubstr(kSignature));
}

// "x + rand_like(x)": element 0 is NaN in every run (NaN matches NaN), the
// others are random; node 0 alone (x * 2) is deterministic.
constexpr char kRandom[] = R"(divfuzz v1
input %x: f32[3] = values(nan, -0.0, 1.0)
%d = aten::mul.Scalar(%x, 2.0)
%r = aten::rand_like(%x)
%s = aten::add.Tensor(%x, %r)
output %d, %s
)";

ReproSpec RerunSpec(int node, const std::string& target) {
  ReproSpec spec;
  spec.node_index = node;
  spec.title = "random";
  spec.rerun_target = target;
  return spec;
}

CommandRun RunPython(const std::string& script) {
  const std::string dir = testing::TempDir("nondet_py");
  std::ofstream(dir + "/repro.py") << script;
  return RunShell(testing::Python() + " " + dir + "/repro.py");
}

// Real libtorch, no stand-in: torch 2.11's CPU linalg_lstsq (driver gelsy)
// takes its column pivots from an at::empty buffer (pytorch#187411), so with a
// zero first column the rank it returns is 0 or 1 by what that memory held.
// The reducer's reruns and the repros alternate malloc's perturb byte
// (exec/malloc_perturb.h), so they see it in a fresh process too.
constexpr char kLstsq[] = R"(divfuzz v1
input %a: f32[1,2] = values(0x0p+0, 0x1p+0)
input %b: f32[1] = fill(0.0)
%s, %r, %k, %v = aten::linalg_lstsq(%a, %b)
output %k
)";

TEST(Nondeterminism, AKernelThatReadsMemoryItNeverWroteDiffersBetweenPerturbedRuns) {
  // What the perturb byte does to a fresh CPU tensor's memory.
  for (const auto& [run, held] : {std::pair{1, 0x00}, std::pair{2, 0xa5}}) {
    exec::ScopedMallocPerturb perturb(exec::RerunPerturbByte(run));
    const at::Tensor fresh = at::empty({64}, at::kByte);
    EXPECT_TRUE(fresh.eq(held).all().item<bool>()) << "run " << run << ": " << fresh;
  }
  const graph::Program p = MustParse(kLstsq);
  ReduceOptions o;
  o.target_a = exec::Target::kCpu;
  o.target_b = exec::Target::kCpuF64;
  const std::string signature = "aten::linalg_lstsq|i64|nondeterminism|cpu";
  absl::StatusOr<Evaluation> e = Evaluate(p, o, signature);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(e->found) << "torch's lstsq no longer reads its pivots uninitialized?";
  // Usually run 2: its blocks hold 0xa5 where run 1's were zeroed. But the
  // in-process reruns keep glibc's thread cache, whose blocks M_PERTURB never
  // fills, so under load run 1 can get a cached block; the later reruns are
  // there for that. The repro below turns the cache off and must alternate.
  EXPECT_GE(e->rerun, 2);
  EXPECT_LE(e->rerun, kNondeterminismReruns + 1);
  EXPECT_EQ(oracles::Signature(e->root), signature);
  ReproSpec spec = RerunSpec(0, "cpu");
  spec.title = "lstsq";
  spec.output_index = 2;  // %k, the rank
  CommandRun r = RunPython(EmitPython(p, spec));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("runs alternate malloc's perturb byte (fresh memory zeroed, "
                                  "then 0xa5; glibc's thread cache off)"));
  EXPECT_THAT(r.output, HasSubstr("VERDICT: nondeterminism reproduces (cpu run 1 vs run 2): "
                                  "element 0: 1 vs 0"));
}

TEST(Nondeterminism, ReproPyRerunsTheTarget) {
  const graph::Program p = MustParse(kRandom);
  // A real race stand-in: rand_like differs from run to run.
  CommandRun r = RunPython(EmitPython(p, RerunSpec(2, "cpu")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("VERDICT: nondeterminism reproduces (cpu run 1 vs run 2): "
                                  "element 1: "));
  EXPECT_THAT(r.output, HasSubstr("cpu run 1: "));
  EXPECT_THAT(r.output, HasSubstr("Output %s: result 0 of node 2"));  // still the A/B results
  // NaN in the same place, -0.0 twice: the same bits in every run.
  r = RunPython(EmitPython(p, RerunSpec(0, "cpu")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("VERDICT: no nondeterminism in ",
                                               kNondeterminismRuns, " runs of cpu")));
  if (!exec::CudaAvailable()) {
    r = RunPython(EmitPython(p, RerunSpec(2, "cuda")));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("CUDA not available: skipping the nondeterminism check"));
  }
  // Without a rerun target the script judges A against B as before.
  const std::string plain = EmitPython(p, RerunSpec(0, ""));
  EXPECT_THAT(plain, HasSubstr("RERUN = None"));
  r = RunPython(plain);
  EXPECT_THAT(r.output, Not(HasSubstr("nondeterminism")));
  EXPECT_THAT(EmitPythonSnippet(p, RerunSpec(2, "cpu")),
              HasSubstr(absl::StrCat("for k in range(2, ", kNondeterminismRuns + 1, "):")));
}

// A kernel whose indexed writes may race (oracles::MayVaryBetweenRuns):
// here the wrong write lands on every third run only.
constexpr char kScatter[] = R"(divfuzz v1
input %x: f32[4] = values(1.0, 2.0, 3.0, 4.0)
input %i: i64[2] = values(0, 2)
input %s: f32[2] = values(5.0, 6.0)
%y = aten::scatter.src(%x, 0, %i, %s)
%z = aten::cumsum(%y, 0)
output %z
)";

Runner WrongEveryThirdRun(const std::string& op, std::shared_ptr<int> calls) {
  return [op, calls](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
    return ++*calls % 3 == 0 ? testing::RacingOpRun(p, t, target, op) : exec::Run(p, t, target);
  };
}

TEST(Nondeterminism, EvaluateRetriesADivergenceAtAKernelWhoseWritesRace) {
  const graph::Program p = MustParse(kScatter);
  EXPECT_TRUE(oracles::MayVaryBetweenRuns(p.nodes[0]));
  EXPECT_FALSE(oracles::MayVaryBetweenRuns(p.nodes[1]));
  // Seen varying on the GPU host's CPU, though no index is involved.
  graph::Node lstsq;
  lstsq.op = "aten::linalg_lstsq";
  EXPECT_TRUE(oracles::MayVaryBetweenRuns(lstsq));
  for (const std::string op : {"aten::scatter.src", "aten::cumsum"}) {
    SCOPED_TRACE(op);
    // The signature, from a run where the write is always wrong.
    ReduceOptions o;
    o.runner_a = Racing(op);
    absl::StatusOr<Evaluation> always = Evaluate(p, o);
    ASSERT_TRUE(always.ok()) << always.status();
    ASSERT_TRUE(always->found);
    ASSERT_EQ(always->root.op, op);
    const std::string signature = oracles::Signature(always->root);
    auto calls = std::make_shared<int>(0);
    o.runner_a = WrongEveryThirdRun(op, calls);
    absl::StatusOr<Evaluation> e = Evaluate(p, o, signature);
    ASSERT_TRUE(e.ok()) << e.status();
    if (op == "aten::scatter.src") {
      // Found on the third try.
      EXPECT_TRUE(e->found);
      EXPECT_EQ(oracles::Signature(e->root), signature);
      EXPECT_EQ(*calls, 3);
    } else {
      // A deterministic kernel gets one run: a clean run is no divergence.
      EXPECT_FALSE(e->found);
      EXPECT_EQ(*calls, 1);
    }
  }
}

// A race that loses a write on every run while it has 4 or more writes in
// flight (the scatter's src), and on one run in 4 with fewer: how real races
// behave as the reducer shrinks them (seen on the H200: a max_unpool2d race
// reduced to one collision did not show in 20 runs of its repro).
Runner RarerWhenSmaller(std::shared_ptr<int> calls) {
  return [calls](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
    int64_t writes = 0;
    for (const graph::Node& n : p.nodes) {
      if (n.op == "aten::scatter" && n.args.size() > 3) writes = t.at(n.args[3].value.s).Numel();
    }
    const bool loses = writes >= 4 || ++*calls % 4 == 0;
    return loses ? testing::RacingOpRun(p, t, target, "aten::scatter.src")
                 : exec::Run(p, t, target);
  };
}

TEST(Nondeterminism, TheReducerKeepsARaceAsLikelyAsItWas) {
  const graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[8] = uniform(seed=3, low=1.0, high=2.0)
input %i: i64[8] = values(0, 1, 2, 3, 4, 5, 6, 7)
input %s: f32[8] = uniform(seed=4, low=1.0, high=2.0)
%y = aten::scatter.src(%x, 0, %i, %s)
output %y
)");
  ReduceOptions o;
  auto calls = std::make_shared<int>(0);
  o.runner_a = RarerWhenSmaller(calls);
  absl::StatusOr<Evaluation> start = EvaluateStart(p, o);
  ASSERT_TRUE(start.ok()) << start.status();
  ASSERT_TRUE(start->found);
  const std::string signature = oracles::Signature(start->root);
  o.signature = signature;
  start = EvaluateStart(p, o);
  ASSERT_TRUE(start.ok()) << start.status();
  // The start's rate is measured over every attempt.
  EXPECT_EQ(start->hits, 1 + kNondeterminismReruns);
  EXPECT_EQ(start->runs, 1 + kNondeterminismReruns);

  // Two writes: the race shows on one run in 4. Once is enough to find it,
  // not to match a start that showed on every run; a miss ends the count.
  const graph::Program small = MustParse(R"(divfuzz v1
input %x: f32[8] = uniform(seed=3, low=1.0, high=2.0)
input %i: i64[2] = values(0, 1)
input %s: f32[2] = uniform(seed=4, low=1.0, high=2.0)
%y = aten::scatter.src(%x, 0, %i, %s)
output %y
)");
  *calls = 0;
  absl::StatusOr<Evaluation> once = Evaluate(small, o, signature, "", 0);
  ASSERT_TRUE(once.ok()) << once.status();
  EXPECT_TRUE(once->found);
  EXPECT_EQ(once->hits, 1);
  *calls = 0;
  absl::StatusOr<Evaluation> every = Evaluate(small, o, signature, "", 1 + kNondeterminismReruns);
  ASSERT_TRUE(every.ok()) << every.status();
  EXPECT_FALSE(every->found);
  EXPECT_EQ(every->runs, 1);

  // So the reducer shrinks everything but the writes in flight.
  *calls = 0;
  o.max_seconds = 60;
  absl::StatusOr<ReduceResult> r = Reduce(p, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->signature, signature);
  ASSERT_EQ(r->program.nodes.size(), 1u) << graph::PrintProgram(r->program);
  ops::TypeEnv types = r->evaluation.types;
  EXPECT_GE(types.at(r->program.nodes[0].args[3].value.s).Numel(), 4)
      << graph::PrintProgram(r->program);
  EXPECT_LT(r->elements_after, r->elements_before) << graph::PrintProgram(r->program);
}

// Two writes to destination 0 (src 5 and 6): which one lands is undefined, so
// a divergence there is expected (index_ties), and its class and wrong side
// are whatever that run's race gave.
constexpr char kRacingScatter[] = R"(divfuzz v1
input %x: f32[4] = values(1.0, 2.0, 3.0, 4.0)
input %i: i64[2] = values(0, 0)
input %s: f32[2] = values(5.0, 6.0)
%y = aten::scatter.src(%x, 0, %i, %s)
%z = aten::mul.Scalar(%y, 2.0)
output %z
)";

// Target A's race lands `value` at destination 0.
Runner LandsAtZero(double value) {
  return [value](const graph::Program& p, const ops::TypeEnv& t, exec::Target target) {
    exec::RunResult r = exec::Run(p, t, target);
    for (size_t i = 0; i < p.nodes.size() && i < r.nodes.size(); ++i) {
      if (p.nodes[i].op != "aten::scatter" || r.nodes[i].outputs.empty()) continue;
      at::Tensor y = r.nodes[i].outputs[0].clone();
      if (y.numel() > 0) y.view({-1})[0] = value;
      r.nodes[i].outputs[0] = y;
    }
    return r;
  };
}

TEST(Nondeterminism, AnExpectedRaceMatchesItsOpAndDTypeWhateverItsClass) {
  const graph::Program p = MustParse(kRacingScatter);
  ReduceOptions o;
  o.runner_a = LandsAtZero(5.0);  // the other write: a tolerance divergence
  absl::StatusOr<Evaluation> first = Evaluate(p, o);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->found);
  ASSERT_EQ(first->root.tier, "expected");
  EXPECT_EQ(first->root.expected_rule, "index_ties");
  const std::string signature = oracles::Signature(first->root);
  ASSERT_EQ(signature.rfind("aten::scatter.src|f32|tolerance|", 0), 0u) << signature;
  // Another run's race lands NaN: a class split, still the same race.
  o.runner_a = LandsAtZero(NAN);
  absl::StatusOr<Evaluation> e = Evaluate(p, o, signature, "expected");
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(e->found);
  EXPECT_EQ(e->root.cls, oracles::DivergenceClass::kClassSplit);
  EXPECT_EQ(e->root.tier, "expected");
  // Without the tier the signature must match in full.
  e = Evaluate(p, o, signature);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_FALSE(e->found);
  // A stored bucket's tier reaches the reducer, which keeps the race.
  o.max_seconds = 30;
  ReduceOptions ro = o;
  ro.signature = signature;
  ro.tier = "expected";
  absl::StatusOr<ReduceResult> r = Reduce(p, ro);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tier, "expected");
  EXPECT_EQ(r->program.nodes.size(), 1u);
  EXPECT_EQ(r->program.nodes[0].op, "aten::scatter");
}

// "rand_like(x) > 0.95" on one element: cpu and cpu-f64 disagree on about
// one run in ten, like a race between two writes.
constexpr char kCoin[] = R"(divfuzz v1
input %x: f32[1] = values(1.0)
%d = aten::mul.Scalar(%x, 2.0)
%r = aten::rand_like(%x)
%c = aten::gt.Scalar(%r, 0.95)
output %d, %c
)";

TEST(Nondeterminism, ReproPyTriesARacingDivergenceUpToItsAttempts) {
  const graph::Program p = MustParse(kCoin);
  ReproSpec spec = RerunSpec(2, "");
  spec.attempts = 400;  // misses with probability 0.905^400 < 1e-17
  const std::string script = EmitPython(p, spec);
  EXPECT_THAT(script, HasSubstr("ATTEMPTS = 400"));
  EXPECT_THAT(script, HasSubstr("runs both targets up to 400 times"));
  // One attempt alone reproduces about one time in ten; 400 always do.
  CommandRun r = RunPython(script);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("VERDICT: divergence reproduces (cpu vs cpu-f64)"));
  // After the first attempt the script says the results vary and shows the
  // run that diverged.
  if (r.output.find("The results vary") != std::string::npos) {
    EXPECT_THAT(r.output, ::testing::ContainsRegex("diverge on attempt [0-9]+ of 400:"));
  }
  // A deterministic node never diverges: "no divergence" after every attempt.
  const std::string dir = testing::TempDir("attempts_py");
  std::ofstream(dir + "/repro.py") << EmitPython(p, RerunSpec(0, ""));
  r = RunShell(testing::Python() + " " + dir + "/repro.py --attempts 3");
  EXPECT_NE(r.output.find("VERDICT: no divergence (cpu vs cpu-f64, 3 attempts)"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // The C++ repro has the same loop.
  const std::string cpp = EmitCpp(p, spec).main_cpp;
  EXPECT_THAT(cpp, HasSubstr("const int kAttempts = 400;"));
  EXPECT_THAT(cpp, HasSubstr("while (v.cls.empty() && attempt < kAttempts) {"));
  EXPECT_THAT(EmitCpp(p, RerunSpec(2, "")).main_cpp, HasSubstr("const int kAttempts = 1;"));
}

TEST(Nondeterminism, ReproCppHasTheRerunLogic) {
  // The build and run are in EmitCpp.BuildsAgainstLibtorchAndReproducesWhatTheExecutorSees.
  const graph::Program p = MustParse(kRandom);
  const std::string cpp = EmitCpp(p, RerunSpec(2, "cuda")).main_cpp;
  EXPECT_THAT(cpp, HasSubstr("const char* const kRerun = \"cuda\";"));
  EXPECT_THAT(cpp, HasSubstr("if (*kRerun != '\\0') return CheckNondeterminism(kRerun, cuda);"));
  EXPECT_THAT(cpp, HasSubstr("VERDICT: nondeterminism reproduces ("));
  EXPECT_THAT(EmitCpp(p, RerunSpec(2, "")).main_cpp, HasSubstr("const char* const kRerun = \"\";"));
}

// `divfuzz repro` of a stored nondeterminism finding reduces with its own
// signature: here a cpu finding from a cpu vs cuda campaign, replayed on a
// deterministic CPU (and without a GPU, if there is none).
TEST(Nondeterminism, ReproOfAStoredFindingUsesItsSignature) {
  const std::string tool = std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz";
  struct stat st {};
  if (::stat(tool.c_str(), &st) != 0) GTEST_SKIP() << "built without the divfuzz tool";
  const std::string dir = testing::TempDir("findings");
  auto store = store::FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok());
  store::FindingHit hit = testing::HitFor(kSignature, "cpu vs cuda");
  hit.detail = {{"node", 2}, {"output", 0}, {"summary", "element 0: 1.0 vs 1.5"}};
  absl::StatusOr<store::RecordResult> rec = (*store)->Record(hit, kChain);
  ASSERT_TRUE(rec.ok());
  CommandRun r = RunShell(tool + " repro " + dir + "/" + rec->id);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("did not reproduce here: no " + std::string(kSignature) +
                                  " in 3 reruns of cpu here"));
  const std::string script = testing::ReadTextFile(dir + "/" + rec->id + "/repro.py");
  EXPECT_THAT(script, HasSubstr("RERUN = 'cpu'"));
  r = RunShell(testing::Python() + " " + dir + "/" + rec->id + "/repro.py");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("VERDICT: no nondeterminism in ",
                                               kNondeterminismRuns, " runs of cpu")));
}

}  // namespace
}  // namespace divfuzz::minimize
