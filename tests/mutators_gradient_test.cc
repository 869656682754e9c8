// Gradient statements in generation and mutation (issue 31, item 5): with
// grad_share=1 generated programs carry a valid autograd::grad over inputs
// reaching its outputs, cotangents new inputs of their outputs' exact types,
// and run on the CPU; every gradient mutation keeps the program valid;
// grad_share=0 never adds one; random ops are never differentiated.
#include <algorithm>
#include <map>
#include <set>

#include "exec/executor.h"
#include "graph/gradient.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/validate.h"
#include "gtest/gtest.h"
#include "mutators/gradient_mutations.h"
#include "mutators/mutator.h"
#include "ops/infer.h"

namespace divfuzz::mutators {
namespace {

using graph::Program;

// Valid as the harness takes it: it prints, parses back, validates and types.
bool Valid(const Program& p) {
  absl::StatusOr<Program> reparsed = graph::ParseProgram(graph::PrintProgram(p), "g.dfz");
  return reparsed.ok() && graph::ValidateProgram(*reparsed).ok() &&
         ops::InferProgram(*reparsed).ok() && !p.nodes.empty();
}

const graph::Input* FindInput(const Program& p, const std::string& name) {
  for (const graph::Input& in : p.inputs) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

int GradCount(const Program& p) {
  int n = 0;
  for (const graph::Node& node : p.nodes) n += graph::IsGradNode(node);
  return n;
}

GenerateOptions Share(double s) {
  GenerateOptions o;
  o.grad_share = s;
  return o;
}

// What the generator promises of each gradient statement it writes. A
// mutant's cotangent may be shared with a forward node (so it keeps its dtype
// when its output's changes: autograd casts it) or be a computed value
// (spliced in by CrossOver): `exact` off checks only what typing requires.
void ExpectWellFormedGradients(const Program& p, bool exact = true) {
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(p);
  ASSERT_TRUE(types.ok()) << types.status();
  for (const graph::Node& node : p.nodes) {
    if (!graph::IsGradNode(node)) continue;
    graph::GradCallOrError g = graph::ParseGradCall(node);
    ASSERT_TRUE(g.call) << g.error;
    const std::set<std::string> reaching = InputsReaching(p, g.call->outputs);
    for (const std::string& x : g.call->wrt) {
      const graph::Input* in = FindInput(p, x);
      ASSERT_NE(in, nullptr) << x;
      EXPECT_TRUE(graph::IsFloating(in->type.dtype) || graph::IsComplex(in->type.dtype)) << x;
      EXPECT_TRUE(reaching.count(x)) << x << " does not reach the outputs";
    }
    for (size_t i = 0; i < g.call->outputs.size() && exact; ++i) {
      const graph::Input* v = FindInput(p, g.call->cotangents[i]);
      ASSERT_NE(v, nullptr) << "cotangent " << g.call->cotangents[i] << " is no input";
      EXPECT_EQ(v->type, types->at(g.call->outputs[i])) << g.call->cotangents[i];
    }
    for (const std::string& r : node.results) {
      EXPECT_NE(std::find(p.outputs.begin(), p.outputs.end(), r), p.outputs.end()) << r;
    }
  }
}

TEST(GradientGeneration, ShareOneGivesValidGradientStatements) {
  int with = 0;
  std::set<graph::Payload::Kind> cotangent_kinds;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const Program p = Generate(seed, Share(1));
    ASSERT_TRUE(Valid(p)) << graph::PrintProgram(p);
    EXPECT_EQ(graph::PrintProgram(p), graph::PrintProgram(Generate(seed, Share(1))));
    if (GradCount(p) == 0) continue;
    ++with;
    ASSERT_NO_FATAL_FAILURE(ExpectWellFormedGradients(p)) << graph::PrintProgram(p);
    for (const graph::Node& node : p.nodes) {
      if (!graph::IsGradNode(node)) continue;
      const graph::GradCallOrError g = graph::ParseGradCall(node);
      for (const std::string& v : g.call->cotangents) {
        cotangent_kinds.insert(FindInput(p, v)->payload.kind);
      }
    }
  }
  // Programs with no floating result reached by a floating input get none.
  EXPECT_GE(with, 240) << with << " of 300";
  for (graph::Payload::Kind k : {graph::Payload::Kind::kFill, graph::Payload::Kind::kNormal,
                                 graph::Payload::Kind::kSpecial, graph::Payload::Kind::kLimits,
                                 graph::Payload::Kind::kEdges}) {
    EXPECT_TRUE(cotangent_kinds.count(k)) << graph::PayloadKindName(k);
  }
}

TEST(GradientGeneration, ShareRoughlyHolds) {
  int with = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) with += GradCount(Generate(seed, Share(0.25))) > 0;
  EXPECT_GE(with, 60);
  EXPECT_LE(with, 140);
}

TEST(GradientGeneration, ShareZeroNeverAddsOne) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    Program p = Generate(seed, Share(0));
    // The default options are share 0 and draw exactly as before.
    EXPECT_EQ(graph::PrintProgram(p), graph::PrintProgram(Generate(seed)));
    EXPECT_EQ(GradCount(p), 0);
    for (unsigned m = 0; m < 4; ++m) {
      p = Mutate(p, seed * 31 + m, MutateOptions{0});
      ASSERT_EQ(GradCount(p), 0) << graph::PrintProgram(p);
    }
    EXPECT_EQ(GradCount(CrossOver(p, Generate(seed + 500), seed)), 0);
  }
}

// Share 0 is forward only: a gradient program from the corpus loses its
// statements at its first mutation or crossover (a --grad_share=0 campaign
// ran half its executions with one, session 44).
TEST(GradientMutation, ShareZeroStripsTheCorpusGradients) {
  int stripped = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const Program p = Generate(seed, Share(1));
    if (GradCount(p) == 0) continue;
    const Program q = Mutate(p, seed, MutateOptions{0});
    ASSERT_TRUE(Valid(q)) << graph::PrintProgram(q);
    EXPECT_EQ(GradCount(q), 0) << graph::PrintProgram(p) << "\n->\n" << graph::PrintProgram(q);
    const Program c = CrossOver(p, Generate(seed + 700, Share(1)), seed, MutateOptions{0});
    ASSERT_TRUE(Valid(c)) << graph::PrintProgram(c);
    EXPECT_EQ(GradCount(c), 0) << graph::PrintProgram(c);
    ++stripped;
  }
  EXPECT_GE(stripped, 50);
}

// A simple program: its gradient runs on the CPU and is v * exp(x).
TEST(GradientGeneration, ASimpleProgramsGradientRunsOnTheCpu) {
  absl::StatusOr<Program> p = graph::ParseProgram(R"(divfuzz v1
input %x: f32[2,3] = normal(seed=3)
%y = aten::exp(%x)
output %y
)");
  ASSERT_TRUE(p.ok()) << p.status();
  Random random(7);
  ASSERT_TRUE(AddGradient(*p, random));
  ASSERT_TRUE(Valid(*p)) << graph::PrintProgram(*p);
  ASSERT_EQ(GradCount(*p), 1);
  const graph::Node& grad = p->nodes.back();
  const graph::GradCall call = *graph::ParseGradCall(grad).call;
  EXPECT_EQ(call.outputs, std::vector<std::string>{"y"});
  EXPECT_EQ(call.wrt, std::vector<std::string>{"x"});
  const exec::RunResult r = exec::Run(*p, *ops::InferProgram(*p), exec::Target::kCpu);
  ASSERT_TRUE(r.setup_error.empty()) << r.setup_error;
  ASSERT_EQ(r.nodes.size(), 2u);
  ASSERT_FALSE(r.nodes[1].error) << r.nodes[1].error->message;
  ASSERT_EQ(r.nodes[1].outputs.size(), 1u);
  EXPECT_EQ(r.nodes[1].outputs[0].sizes(), (std::vector<int64_t>{2, 3}));
}

// Generated gradient programs run on the CPU; their gradient statements
// mostly without an error (a backward PyTorch does not implement is one).
TEST(GradientGeneration, GeneratedGradientsRunOnTheCpu) {
  int ran = 0, total = 0;
  for (uint64_t seed = 0; seed < 80; ++seed) {
    const Program p = Generate(seed, Share(1));
    if (GradCount(p) == 0) continue;
    const exec::RunResult r = exec::Run(p, *ops::InferProgram(p), exec::Target::kCpu);
    ASSERT_TRUE(r.setup_error.empty()) << r.setup_error << "\n" << graph::PrintProgram(p);
    for (size_t i = 0; i < p.nodes.size() && i < r.nodes.size(); ++i) {
      if (!graph::IsGradNode(p.nodes[i])) continue;
      ++total;
      // A forward node that failed leaves the statement nothing to run.
      bool forward_failed = false;
      for (size_t k = 0; k < i; ++k) forward_failed = forward_failed || r.nodes[k].error;
      if (forward_failed || !r.nodes[i].error) {
        ++ran;
      } else {
        // Not the generator's fault: "derivative for aten::linspace is not implemented".
        EXPECT_NE(r.nodes[i].error->message.find("derivative for"), std::string::npos)
            << r.nodes[i].error->message << "\n"
            << graph::PrintProgram(p);
      }
    }
  }
  EXPECT_GE(total, 60);
  EXPECT_GE(ran, total * 9 / 10) << ran << " of " << total;
}

TEST(GradientMutation, EachMutationKeepsTheProgramValid) {
  using Fn = bool (*)(Program&, Random&);
  const std::map<std::string, Fn> mutations = {
      {"add", &AddGradient},         {"drop_input", &DropGradientInput},
      {"add_input", &AddGradientInput}, {"cotangent", &ChangeCotangent},
      {"remove", &RemoveGradient}};
  std::map<std::string, int> applied;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const Program p = Generate(seed, Share(1));
    int k = 0;
    for (const auto& [name, fn] : mutations) {
      Program q = p;
      Random random(seed * 17 + static_cast<uint64_t>(k++));
      if (!fn(q, random)) {
        EXPECT_EQ(q, p) << name << " failed but changed the program";
        continue;
      }
      ++applied[name];
      ASSERT_TRUE(Valid(q)) << name << "\n" << graph::PrintProgram(p) << "\n->\n"
                            << graph::PrintProgram(q);
      EXPECT_NE(graph::PrintProgram(q), graph::PrintProgram(p)) << name;
      ASSERT_NO_FATAL_FAILURE(ExpectWellFormedGradients(q)) << name << "\n"
                                                            << graph::PrintProgram(q);
      if (name == "remove") EXPECT_EQ(GradCount(q), GradCount(p) - 1);
      if (name == "add") EXPECT_EQ(GradCount(q), GradCount(p) + 1);
    }
  }
  for (const auto& [name, fn] : mutations) EXPECT_GE(applied[name], 20) << name;
}

// Every mutation of a gradient program (the forward ones too: Repair keeps
// the statement, retyping a cotangent of its own when its output changes).
TEST(GradientMutation, MutantsOfGradientProgramsStayValid) {
  int kept = 0, total = 0, seconds = 0;
  for (uint64_t seed = 0; seed < 150; ++seed) {
    Program p = Generate(seed, Share(1));
    for (unsigned m = 0; m < 6; ++m) {
      const bool had = GradCount(p) > 0;
      p = Mutate(p, seed * 31 + m, MutateOptions{0.25});
      ASSERT_TRUE(Valid(p)) << graph::PrintProgram(p);
      ASSERT_NO_FATAL_FAILURE(ExpectWellFormedGradients(p, false)) << graph::PrintProgram(p);
      total += had;
      kept += had && GradCount(p) > 0;
      seconds += GradCount(p) > 1;
    }
    const Program c = CrossOver(p, Generate(seed + 900, Share(1)), seed, MutateOptions{0.25});
    ASSERT_TRUE(Valid(c)) << graph::PrintProgram(c);
  }
  // Removal comes at 1 - share of a twentieth of the mutations.
  EXPECT_GE(kept, total * 8 / 10) << kept << " of " << total;
  EXPECT_GT(seconds, 0);
}

TEST(GradientMutation, MutationAddsGradientsAtTheShare) {
  int with = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    Program p = Generate(seed);
    for (unsigned m = 0; m < 20; ++m) p = Mutate(p, seed * 131 + m, MutateOptions{1});
    ASSERT_TRUE(Valid(p)) << graph::PrintProgram(p);
    with += GradCount(p) > 0;
  }
  // A twentieth of the mutations at share 1, none removed: most have one.
  EXPECT_GE(with, 100) << with << " of 200";
}

TEST(GradientRepair, ACotangentFollowsItsOutputsNewShape) {
  absl::StatusOr<Program> p = graph::ParseProgram(R"(divfuzz v1
input %x: f32[3] = normal(seed=1)
input %w: f32[3] = normal(seed=2)
input %ct0: f32[3] = fill(1.0)
%y = aten::mul.Tensor(%x, %w)
%g0, %g1 = autograd::grad(%y, [%x, %w], grad_outputs=%ct0)
output %y, %g0, %g1
)");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(Valid(*p));
  Program q = *p;
  q.inputs[0].type.shape = {2, 3};  // %y becomes [2,3]; %ct0 follows
  std::optional<Program> r = Repair(q);
  ASSERT_TRUE(r);
  ASSERT_TRUE(Valid(*r)) << graph::PrintProgram(*r);
  ASSERT_EQ(GradCount(*r), 1);
  EXPECT_EQ(FindInput(*r, "ct0")->type.shape, (std::vector<int64_t>{2, 3}));
  // An input that no longer reaches the output leaves the list.
  q = *p;
  q.nodes[0].args[1].value.s = "x";  // %y = mul(%x, %x)
  r = Repair(q);
  ASSERT_TRUE(r);
  ASSERT_TRUE(Valid(*r)) << graph::PrintProgram(*r);
  EXPECT_EQ(graph::ParseGradCall(r->nodes[1]).call->wrt, std::vector<std::string>{"x"});
  EXPECT_EQ(FindInput(*r, "w"), nullptr);
  // Dropping the only input drops the statement; its cotangent goes too.
  Random random(3);
  Program s = *p;
  ASSERT_TRUE(DropGradientInput(s, random));
  ASSERT_TRUE(RemoveGradient(s, random));
  EXPECT_EQ(GradCount(s), 0);
  EXPECT_EQ(FindInput(s, "ct0"), nullptr);
  EXPECT_FALSE(DropGradientInput(s, random));
}

TEST(GradientGeneration, RandomOpsAreNeverDifferentiated) {
  for (const char* op : {"aten::dropout", "aten::native_dropout", "aten::feature_alpha_dropout",
                         "aten::rrelu", "aten::rrelu_with_noise", "aten::bernoulli",
                         "aten::randn_like", "aten::normal", "aten::multinomial"}) {
    graph::Node n;
    n.op = op;
    EXPECT_TRUE(IsRandomOp(n)) << op;
  }
  for (const char* op : {"aten::exp", "aten::batch_norm", "aten::layer_norm", "aten::renorm",
                         "aten::poisson_nll_loss", "aten::operator_norm"}) {
    graph::Node n;
    n.op = op;
    EXPECT_FALSE(IsRandomOp(n)) << op;
  }
  absl::StatusOr<Program> p = graph::ParseProgram(R"(divfuzz v1
input %x: f32[3] = normal(seed=1)
%y = aten::exp(%x)
output %y
)");
  ASSERT_TRUE(p.ok()) << p.status();
  Program q = *p;
  q.nodes[0].op = "aten::dropout";
  Random random(1);
  EXPECT_FALSE(AddGradient(q, random));
  EXPECT_TRUE(AddGradient(*p, random));
  // Repair drops a statement over one.
  q = *p;
  q.nodes.insert(q.nodes.begin(), q.nodes[0]);
  q.nodes[0].op = "aten::rrelu";
  q.nodes[0].results = {"r"};
  ops::TypeEnv types = {{"x", q.inputs[0].type}, {"r", q.inputs[0].type}, {"y", q.inputs[0].type}};
  for (const graph::Input& in : q.inputs) types[in.name] = in.type;
  EXPECT_FALSE(RepairGradient(q, {q.nodes[0], q.nodes[1]}, {}, q.nodes[2], types));
}

}  // namespace
}  // namespace divfuzz::mutators
