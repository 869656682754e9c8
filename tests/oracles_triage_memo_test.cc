// The triage memo (oracles/triage_memo.h): a root judged again on the same
// slice of a program takes the judgement it had, field for field, and one
// whose slice changed is judged afresh.
#include <filesystem>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "oracles/compare.h"
#include "oracles/triage.h"
#include "oracles/triage_memo.h"
#include "tests/test_util.h"

namespace divfuzz::oracles {
namespace {

namespace fs = std::filesystem;
using testing::MustInfer;
using testing::MustParse;

Verdict Judged(const graph::Program& p, TriageMemo* memo) {
  const ops::TypeEnv types = MustInfer(p);
  const exec::RunResult a = exec::Run(p, types, exec::Target::kCpu);
  const exec::RunResult b = exec::Run(p, types, exec::Target::kCpuF64);
  Verdict v = Compare(p, types, a, b, DefaultPolicy());
  Triage(p, types, a, b, DefaultPolicy(), v, nullptr, memo);
  return v;
}

void ExpectSameJudgement(const Divergence& got, const Divergence& fresh, const std::string& what) {
  EXPECT_EQ(got.tier, fresh.tier) << what;
  EXPECT_EQ(got.wrong_side, fresh.wrong_side) << what;
  EXPECT_EQ(got.expected_rule, fresh.expected_rule) << what;
  EXPECT_EQ(got.reason, fresh.reason) << what;
  EXPECT_EQ(got.witness, fresh.witness) << what;
  EXPECT_EQ(got.trigger, fresh.trigger) << what;
  EXPECT_EQ(got.op, fresh.op) << what;
  EXPECT_EQ(got.detail, fresh.detail) << what;
  EXPECT_EQ(got.reference_a, fresh.reference_a) << what;
  EXPECT_EQ(got.reference_b, fresh.reference_b) << what;
  EXPECT_EQ(got.cls, fresh.cls) << what;
  EXPECT_EQ(got.element, fresh.element) << what;
  EXPECT_EQ(got.node_index, fresh.node_index) << what;
}

// The gradient seeds and the first forward ones: each run, judged into the
// memo, then again with a node appended that the roots do not read (what a
// mutation often does). Every root of the second run is taken from the memo
// and equals a fresh judgement of that run.
TEST(TriageMemo, ARootJudgedAgainOnTheSameSliceTakesTheSameJudgement) {
  const std::string seeds = std::string(DIVFUZZ_SOURCE_DIR) + "/corpus/seed";
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(seeds)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  TriageMemo memo;
  int roots = 0;
  for (const std::string& file : files) {
    auto parsed = graph::ParseProgram(testing::ReadTextFile(file), file);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    graph::Program p = *parsed;
    const Verdict first = Judged(p, &memo);
    if (first.Roots().empty()) continue;
    // Appended: a node reading the first floating input, read by nothing.
    const graph::Input* in = nullptr;
    for (const graph::Input& i : p.inputs) {
      if (in == nullptr && graph::IsFloating(i.type.dtype)) in = &i;
    }
    if (in == nullptr) continue;
    graph::Program mutated = p;
    graph::Node extra;
    extra.results = {"memo_extra"};
    extra.op = "aten::neg";
    extra.args.push_back(graph::Argument{"", graph::Literal::Value(in->name)});
    mutated.nodes.push_back(extra);
    const int64_t reused = memo.reused();
    const Verdict again = Judged(mutated, &memo);
    const Verdict fresh = Judged(mutated, nullptr);
    ASSERT_EQ(again.Roots().size(), fresh.Roots().size()) << file;
    EXPECT_EQ(memo.reused() - reused, static_cast<int64_t>(again.Roots().size())) << file;
    for (size_t r = 0; r < again.Roots().size(); ++r) {
      ExpectSameJudgement(*again.Roots()[r], *fresh.Roots()[r], file);
      ++roots;
    }
  }
  EXPECT_GE(roots, 10) << "too few seeds diverge on the CPU pair to test the memo";
}

TEST(TriageMemo, TheKeyChangesWithTheSliceAndNotWithTheRest) {
  const graph::Program p = MustParse(R"(divfuzz v1
input %x: f32[4] = values(0.5, 3.0, -1.0, 2.0)
input %z: f32[4] = fill(2.0)
%y = aten::sinh(%x)
%w = aten::cosh(%z)
%s = aten::mul.Tensor(%y, %x)
output %s, %w
)");
  const std::string targets = "cpu vs cpu-f64";
  const ops::TypeEnv types = MustInfer(p);
  const exec::RunResult a = exec::Run(p, types, exec::Target::kCpu);
  const exec::RunResult b = exec::Run(p, types, exec::Target::kCpuF64);
  auto key_of = [&](const graph::Program& q, int node, const std::string& t) {
    return TriageMemo::KeyOf(q, node, t, a, b);
  };
  const auto key = key_of(p, 2, targets);
  ASSERT_TRUE(key.has_value());
  // %z and cosh are not in mul's slice.
  graph::Program other = p;
  other.inputs[1].payload = MustParse(R"(divfuzz v1
input %z: f32[4] = fill(7.0)
output %z
)").inputs[0].payload;
  other.nodes[1].op = "aten::sin";
  EXPECT_EQ(key_of(other, 2, targets), key);
  // %x is: another value of it, another key.
  graph::Program changed = p;
  changed.inputs[0].payload = other.inputs[1].payload;
  EXPECT_NE(key_of(changed, 2, targets), key);
  // So are the node's place, the targets, and an op upstream.
  EXPECT_NE(key_of(p, 2, "cpu vs cuda"), key);
  graph::Program upstream = p;
  upstream.nodes[0].op = "aten::tanh";
  EXPECT_NE(key_of(upstream, 2, targets), key);
  // A node before the root that writes in place may change what the slice
  // reads without naming it: no key.
  graph::Program in_place = p;
  in_place.nodes[1].op = "aten::abs_";
  EXPECT_FALSE(key_of(in_place, 2, targets).has_value());
  EXPECT_FALSE(key_of(p, 3, targets).has_value());
  // A side whose run gave the node other values (a kernel that varies from
  // run to run) gives another key.
  exec::RunResult varied = b;
  varied.nodes[2].outputs[0] = varied.nodes[2].outputs[0].clone();
  varied.nodes[2].outputs[0].reshape(-1)[1] = 5.0;
  EXPECT_NE(TriageMemo::KeyOf(p, 2, targets, a, varied), key);
}

}  // namespace
}  // namespace divfuzz::oracles
