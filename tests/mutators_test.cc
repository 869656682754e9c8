#include <set>

#include "exec/executor.h"
#include "graph/materialize.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "gtest/gtest.h"
#include "mutators/input_mutations.h"
#include "mutators/mutator.h"
#include "ops/catalogue.h"
#include "ops/infer.h"

namespace divfuzz::mutators {
namespace {

bool Valid(const graph::Program& p) {
  absl::StatusOr<graph::Program> reparsed = graph::ParseProgram(graph::PrintProgram(p), "m.dfz");
  return reparsed.ok() && ops::InferProgram(*reparsed).ok() && !p.nodes.empty();
}

TEST(Generate, IsDeterministicForASeed) {
  for (uint64_t seed : {1u, 2u, 99u}) {
    EXPECT_EQ(graph::PrintProgram(Generate(seed)), graph::PrintProgram(Generate(seed)));
  }
  EXPECT_NE(graph::PrintProgram(Generate(1)), graph::PrintProgram(Generate(2)));
}

TEST(Generate, ProgramsAreValidAndCoverManyOps) {
  std::set<std::string> ops;
  for (uint64_t seed = 0; seed < 500; ++seed) {
    graph::Program p = Generate(seed);
    ASSERT_TRUE(Valid(p)) << graph::PrintProgram(p);
    for (const graph::Node& n : p.nodes) ops.insert(n.QualifiedName());
  }
  EXPECT_GE(ops.size(), 80u);
}

TEST(Generate, FamilyRestrictsEveryOp) {
  for (const std::string family : {"linalg", "fft", "pooling", "bitwise"}) {
    GenerateOptions options;
    options.family = family;
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      const graph::Program p = Generate(seed, options);
      ASSERT_FALSE(p.nodes.empty()) << family;
      EXPECT_TRUE(ops::InferProgram(p).ok()) << graph::PrintProgram(p);
      for (const graph::Node& n : p.nodes) {
        const ops::OpSpec* spec = ops::FindOp(n.QualifiedName());
        ASSERT_NE(spec, nullptr) << n.QualifiedName();
        EXPECT_EQ(std::string(spec->family), family) << n.QualifiedName();
      }
    }
  }
  GenerateOptions none;
  none.family = "no_such_family";
  EXPECT_TRUE(Generate(1, none).nodes.empty());
}

TEST(Generate, AnOpNarrowsEveryNodeAndGridsAndVolumesTakeTheirShapes) {
  // grid_sampler's grid is [n, out..., rank - 2]; trilinear reads [n, c, d, h, w].
  for (const std::string op : {"aten::grid_sampler_2d", "aten::grid_sampler_3d",
                               "aten::upsample_trilinear3d"}) {
    GenerateOptions options;
    options.op = op;
    options.max_nodes = 1;
    options.grad_share = 1;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      const graph::Program p = Generate(seed, options);
      ASSERT_EQ(p.nodes.size() >= 1, true) << op;
      ASSERT_TRUE(Valid(p)) << graph::PrintProgram(p);
      absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(p);
      ASSERT_TRUE(types.ok());
      const graph::Node& n = p.nodes[0];
      EXPECT_EQ(n.QualifiedName(), op);
      const std::vector<int64_t>& x = types->at(n.args[0].value.s).shape;
      const size_t rank = op == "aten::grid_sampler_2d" ? 4 : 5;
      EXPECT_EQ(x.size(), rank) << graph::PrintProgram(p);
      if (op != "aten::upsample_trilinear3d") {
        const std::vector<int64_t>& grid = types->at(n.args[1].value.s).shape;
        ASSERT_EQ(grid.size(), rank) << graph::PrintProgram(p);
        EXPECT_EQ(grid[0], x[0]);
        EXPECT_EQ(grid.back(), static_cast<int64_t>(rank) - 2);
      }
      // It runs forward and backward on the CPU.
      const exec::RunResult r = exec::Run(p, *types, exec::Target::kCpu);
      for (const exec::NodeResult& nr : r.nodes) EXPECT_FALSE(nr.error) << nr.error->message;
    }
  }
}

TEST(Generate, ClassLossesTakeAClassIndexPerSample) {
  for (const std::string op : {"aten::nll_loss", "aten::nll_loss2d", "aten::multi_margin_loss"}) {
    GenerateOptions options;
    options.op = op;
    options.max_nodes = 1;
    options.grad_share = 1;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      const graph::Program p = Generate(seed, options);
      ASSERT_TRUE(Valid(p)) << op;
      absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(p);
      ASSERT_TRUE(types.ok());
      const graph::Node& n = p.nodes[0];
      ASSERT_EQ(n.QualifiedName(), op);
      const graph::TensorType& x = types->at(n.args[0].value.s);
      const graph::TensorType& t = types->at(n.args[1].value.s);
      EXPECT_EQ(t.dtype, graph::DType::kI64);
      std::vector<int64_t> want = x.shape;
      want.erase(want.begin() + 1);
      EXPECT_EQ(t.shape, want) << graph::PrintProgram(p);
      const exec::RunResult r = exec::Run(p, *types, exec::Target::kCpu);
      for (const exec::NodeResult& nr : r.nodes) EXPECT_FALSE(nr.error) << nr.error->message;
    }
  }
}

TEST(Mutate, MutantsAreValidChangedAndDeterministic) {
  int changed = 0, total = 0;
  std::set<std::string> seen_kinds;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    graph::Program p = Generate(seed);
    for (unsigned m = 0; m < 5; ++m) {
      graph::Program q = Mutate(p, seed * 31 + m);
      ASSERT_TRUE(Valid(q)) << graph::PrintProgram(q);
      EXPECT_EQ(graph::PrintProgram(q), graph::PrintProgram(Mutate(p, seed * 31 + m)));
      ++total;
      changed += graph::PrintProgram(q) != graph::PrintProgram(p);
      const std::string text = graph::PrintProgram(q);
      for (const char* special : {"inf", "nan", "-0.0", "0x1p-149", "values("}) {
        if (text.find(special) != std::string::npos) seen_kinds.insert(special);
      }
      p = q;
    }
  }
  EXPECT_GE(changed, total * 9 / 10) << changed << " of " << total;
  // Special values get planted into inputs.
  EXPECT_GE(seen_kinds.size(), 4u);
}

// Value, layout and shape mutation reaches every numerics payload, every
// layout, empty and 0-d inputs, and sizes with a vector body and a scalar tail.
TEST(Mutate, ReachesNumericsPayloadsLayoutsAndVectorTails) {
  std::set<std::string> kinds, layouts;
  int tails = 0, empty = 0, scalar = 0, total = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    graph::Program p = Generate(seed);
    for (unsigned m = 0; m < 5; ++m) {
      p = Mutate(p, seed * 31 + m);
      ++total;
      for (const graph::Input& in : p.inputs) {
        kinds.insert(std::string(graph::PayloadKindName(in.payload.kind)));
        layouts.insert(std::string(graph::LayoutName(in.layout)));
        const std::vector<int64_t> chunks = graph::VectorChunks(in.type.dtype);
        const int64_t last = in.type.shape.empty() ? 1 : in.type.shape.back();
        tails += last > chunks.back() && last % chunks.front() != 0 &&
                 in.payload.kind == graph::Payload::Kind::kPlanted;
        empty += in.type.Numel() == 0;
        scalar += in.type.shape.empty();
      }
    }
  }
  for (const char* kind : {"limits", "edges", "ties", "dynamic", "planted", "singular",
                           "near_singular", "rank_deficient", "ill_conditioned", "spd", "scaled"}) {
    EXPECT_TRUE(kinds.count(kind)) << kind;
  }
  EXPECT_EQ(layouts,
            (std::set<std::string>{"contiguous", "transposed", "strided", "channels_last"}));
  EXPECT_GE(tails, total / 50) << tails << " of " << total;
  EXPECT_GT(empty, 0);
  EXPECT_GT(scalar, 0);
}

// Input mutations alone keep >= 90% of mutants running without argument errors.
TEST(Mutate, InputNumericsMutantsRunOnTheCpu) {
  int ran = 0, total = 0;
  for (uint64_t seed = 0; seed < 120; ++seed) {
    graph::Program p = Generate(seed);
    Random random(seed);
    if (!MutateInputNumerics(p, random)) continue;
    FitPayloadsToTypes(p, random);
    std::optional<graph::Program> q = Repair(p);
    if (!q) continue;
    ASSERT_TRUE(Valid(*q)) << graph::PrintProgram(*q);
    ++total;
    const exec::RunResult r = exec::Run(*q, *ops::InferProgram(*q), exec::Target::kCpu);
    bool ok = r.setup_error.empty();
    for (const exec::NodeResult& n : r.nodes) {
      ok = ok && !(n.error && n.error->kind == exec::NodeError::Kind::kBadArguments);
    }
    ran += ok;
  }
  EXPECT_GE(total, 100);
  EXPECT_GE(ran, total * 9 / 10) << ran << " of " << total;
}

TEST(CrossOver, SplicesBothParentsIntoAValidProgram) {
  int joined = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    graph::Program a = Generate(seed), b = Generate(seed + 1000);
    graph::Program c = CrossOver(a, b, seed);
    ASSERT_TRUE(Valid(c)) << graph::PrintProgram(c);
    joined += c.nodes.size() > a.nodes.size();
  }
  EXPECT_GE(joined, 100);
}

TEST(Repair, DropsNodesThatNoLongerTypeCheck) {
  absl::StatusOr<graph::Program> p = graph::ParseProgram(R"(divfuzz v1
input %m: f32[3,3] = normal(seed=1)
%d = aten::logdet(%m)
%e = aten::exp(%d)
%f = aten::exp(%m)
output %e
)");
  ASSERT_TRUE(p.ok()) << p.status();
  p->inputs[0].type.shape = {3, 4};  // no longer square
  std::optional<graph::Program> r = Repair(*p);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->nodes.size(), 1u);
  EXPECT_EQ(r->nodes[0].results[0], "f");
  EXPECT_EQ(r->outputs, std::vector<std::string>{"f"});
}

}  // namespace
}  // namespace divfuzz::mutators
