// The schema-driven generic path: the learned table, the catalogue's reach,
// and generated calls of generic ops on the real CPU kernels.
#include <filesystem>
#include <map>
#include <set>

#include "exec/dtype_convert.h"
#include "exec/executor.h"
#include "exec/generic_ops.h"
#include "gtest/gtest.h"
#include "mutators/mutator.h"
#include "mutators/node_builder.h"
#include "nlohmann/json.hpp"
#include "ops/catalogue.h"
#include "ops/generic.h"
#include "tests/test_util.h"

namespace divfuzz {
namespace {

TEST(GenericTable, ParsesWhatItFormats) {
  ops::GenericOp op;
  op.name = "aten::hardtanh";
  op.forms = {{graph::DType::kF32, ops::ShapeForm::kSame2, 3, 3},
              {graph::DType::kI64, ops::ShapeForm::kBroadcast, 1, 3}};
  const std::string text = ops::FormatGenericTable({op}, "cpu");
  auto table = ops::ParseGenericTable(text);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->size(), 1u);
  EXPECT_EQ((*table)[0].first, "aten::hardtanh");
  ASSERT_EQ((*table)[0].second.size(), 2u);
  EXPECT_EQ((*table)[0].second[1].shape, ops::ShapeForm::kBroadcast);
  EXPECT_EQ((*table)[0].second[1].accepted, 1);
}

TEST(GenericTable, ErrorsNameTheLine) {
  auto table =
      ops::ParseGenericTable("# devices: cpu\naten::exp f32:same2:3/3\naten::x f99:a:1/1\n");
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("op table:3"), std::string::npos) << table.status();
}

TEST(GenericOps, EnumerationIsFunctionalOnly) {
  const std::vector<ops::GenericOp> all = exec::EnumerateGenericOps();
  EXPECT_GE(all.size(), 400u);
  for (const ops::GenericOp& op : all) {
    EXPECT_NE(op.name.back(), '_') << op.Qualified();  // in-place
    EXPECT_EQ(op.overload.find("out"), std::string::npos) << op.Qualified();
    EXPECT_EQ(op.name.find("rand"), std::string::npos) << op.Qualified();
    EXPECT_EQ(op.name.find("dropout"), std::string::npos) << op.Qualified();
  }
}

TEST(Catalogue, ReachesAtLeast300DistinctOps) {
  std::set<std::string> distinct;
  int curated = 0;
  for (const ops::OpSpec& s : ops::Catalogue()) {
    distinct.insert(s.Qualified());
    curated += s.rule != ops::Rule::kGeneric;
  }
  EXPECT_GE(distinct.size(), 300u);
  EXPECT_GE(curated, 120);
  for (const ops::OpSpec& s : ops::Catalogue()) {
    EXPECT_EQ(ops::FindOp(s.Qualified()), &s) << s.Qualified();
  }
}

// A sample of the kept generic ops: generated calls run on the CPU, at least
// 80% of them without raising, with the types inference predicted.
TEST(GenericOps, GeneratedCallsAreAcceptedOnCpu) {
  std::vector<const ops::OpSpec*> generic;
  for (const ops::OpSpec& s : ops::Catalogue()) {
    if (s.rule == ops::Rule::kGeneric) generic.push_back(&s);
  }
  ASSERT_FALSE(generic.empty());
  int sampled = 0, total_generated = 0;
  for (size_t i = 0; i < generic.size(); i += 8) {
    const ops::OpSpec& spec = *generic[i];
    std::vector<graph::DType> dtypes;
    for (graph::DType d : graph::kAllDTypes) {
      if (ops::Has(spec.dtypes, d)) dtypes.push_back(d);
    }
    // An op whose every pair is one-sided (a CPU-only op) is generated only
    // as such: this test samples the pairs every device runs.
    if (dtypes.empty()) continue;
    int generated = 0, accepted = 0;
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      mutators::Random random(seed * 7919 + i);
      graph::Program p;
      ops::TypeEnv types;
      mutators::NodeBuilder builder(p, types, random);
      if (!builder.Append(spec, random.Pick(dtypes))) continue;
      ++generated;
      p.outputs = p.nodes.back().results;
      const exec::RunResult r = exec::Run(p, types, exec::Target::kCpu);
      ASSERT_EQ(r.nodes.size(), p.nodes.size());
      const exec::NodeResult& n = r.nodes.back();
      if (n.error) continue;
      ++accepted;
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        const graph::TensorType& want = types.at(p.nodes.back().results[o]);
        EXPECT_EQ(n.outputs[o].scalar_type(), exec::ToScalarType(want.dtype)) << spec.Qualified();
        EXPECT_EQ(n.outputs[o].sizes().vec(), want.shape) << spec.Qualified();
      }
    }
    // A call that cannot be generated costs time, not validity: counted apart.
    EXPECT_GE(accepted * 5, generated * 4)
        << spec.Qualified() << ": " << accepted << " of " << generated << " accepted";
    total_generated += generated;
    ++sampled;
  }
  EXPECT_GE(sampled, 20);
  EXPECT_GE(total_generated, sampled * 5 * 8 / 10) << "too many calls could not be generated";
}

TEST(GenericOps, TakePartInGenerationAndReplacement) {
  std::set<std::string> generated, replaced;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    graph::Program p = mutators::Generate(seed);
    for (const graph::Node& n : p.nodes) {
      const ops::OpSpec* s = ops::FindOp(n.QualifiedName());
      if (s != nullptr && s->rule == ops::Rule::kGeneric) generated.insert(n.QualifiedName());
    }
  }
  EXPECT_GE(generated.size(), 50u);
  // Replacement: a mutant with as many nodes as its parent and a generic op
  // the parent lacks.
  int replaced_nodes = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const graph::Program p = mutators::Generate(seed);
    std::set<std::string> before;
    for (const graph::Node& n : p.nodes) before.insert(n.QualifiedName());
    for (uint64_t m = 0; m < 5; ++m) {
      const graph::Program q = mutators::Mutate(p, seed * 131 + m);
      if (q.nodes.size() != p.nodes.size()) continue;
      for (const graph::Node& n : q.nodes) {
        const ops::OpSpec* s = ops::FindOp(n.QualifiedName());
        if (s != nullptr && s->rule == ops::Rule::kGeneric && !before.count(n.QualifiedName())) {
          replaced.insert(n.QualifiedName());
          ++replaced_nodes;
        }
      }
    }
  }
  EXPECT_GE(replaced_nodes, 20);
  EXPECT_GE(replaced.size(), 10u);
}

const std::string kTool = std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz";

TEST(OpsCommand, JsonListsEveryOpWithItsFields) {
  if (!std::filesystem::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const testing::CommandRun run =
      testing::RunShell(std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz ops --json 2>/dev/null");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // Torch's warnings on stderr may precede the JSON.
  const size_t begin = run.output.find("[\n");
  ASSERT_NE(begin, std::string::npos) << run.output;
  nlohmann::json j = nlohmann::json::parse(run.output.substr(begin), nullptr, false);
  ASSERT_TRUE(j.is_array()) << run.output.substr(0, 500);
  EXPECT_GE(j.size(), 300u);
  std::set<std::string> sources;
  for (const nlohmann::json& e : j) {
    for (const char* field : {"op", "source", "family", "dtypes", "acceptance", "generated",
                              "executions", "divergences"}) {
      EXPECT_TRUE(e.contains(field)) << field << " in " << e.dump();
    }
    sources.insert(e["source"].get<std::string>());
  }
  EXPECT_EQ(sources, (std::set<std::string>{"curated", "generic"}));
}

TEST(OpsCommand, ProbeReportsAcceptanceFromRealRuns) {
  if (!std::filesystem::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string stats = testing::TempDir("ops_probe") + "/stats.json";
  const testing::CommandRun run = testing::RunShell(
      std::string(DIVFUZZ_BINARY_DIR) +
      "/fuzz/divfuzz ops --probe=4 --only=aten::exp --op_stats=" + stats + " --json 2>/dev/null");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // Torch's warnings on stderr may precede the JSON.
  const size_t begin = run.output.find("[\n");
  ASSERT_NE(begin, std::string::npos) << run.output;
  nlohmann::json j = nlohmann::json::parse(run.output.substr(begin), nullptr, false);
  ASSERT_TRUE(j.is_array()) << run.output.substr(0, 500);
  bool found = false;
  for (const nlohmann::json& e : j) {
    if (e["op"] != "aten::exp") continue;
    found = true;
    EXPECT_EQ(e["generated"], 4);
    EXPECT_EQ(e["acceptance"], 1.0);
    EXPECT_GE(e["executions"].get<int>(), 4);
  }
  EXPECT_TRUE(found);
  // The stats file is read back by a plain listing.
  const testing::CommandRun again =
      testing::RunShell(std::string(DIVFUZZ_BINARY_DIR) +
                        "/fuzz/divfuzz ops --only=aten::exp --op_stats=" + stats + " 2>/dev/null");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("100%"), std::string::npos) << again.output;
}

}  // namespace
}  // namespace divfuzz

namespace divfuzz {
namespace {

// Typing a node without a Meta kernel runs its CPU kernel on stand-ins in the
// fuzzer's own process. A value shorter than the key raised SIGFPE in the CPU's
// flash attention there (CI's graph_fuzzer at 04eca64); the executor's check of
// PyTorch's unchecked preconditions now declines it before the stand-in runs.
TEST(GenericOps, StandInsAreNotRunWhereAPreconditionIsUnchecked) {
  const graph::Program p = testing::MustParse(R"(divfuzz v1
input %q: f16[1,2,3,4] = fill(1.0)
input %v: f16[1,2,0,4] = fill(1.0)
%o = aten::scaled_dot_product_attention(%q, %q, %v)
output %o
)");
  absl::StatusOr<ops::TypeEnv> t = ops::InferProgram(p, "sdpa.dfz");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("sdpa.dfz:4"), std::string::npos) << t.status();
  EXPECT_NE(t.status().message().find("key has 3 positions and value 0"), std::string::npos)
      << t.status();
}

}  // namespace
}  // namespace divfuzz
