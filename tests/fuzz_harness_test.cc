#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "fuzz/exit_codes.h"
#include "fuzz/harness/feedback.h"
#include "fuzz/harness/harness.h"
#include "graph/printer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/findings_store.h"
#include "tests/test_util.h"

namespace divfuzz::fuzz {
namespace {

constexpr char kDiverging[] = R"(divfuzz v1
input %a: f32[1] = fill(100000000.0)
input %b: f32[1] = fill(1.0)
%c = aten::add.Tensor(%a, %b)
%d = aten::sub.Tensor(%c, %a)
output %d
)";

HarnessConfig CpuPair(const std::string& dir) {
  HarnessConfig c;
  c.target_a = exec::Target::kCpu;
  c.target_b = exec::Target::kCpuF64;
  c.findings_dir = dir;
  return c;
}

TEST(Harness, RecordsOneBucketPerSignatureWithARepro) {
  const std::string dir = testing::TempDir("findings");
  Harness h(CpuPair(dir));
  const auto* bytes = reinterpret_cast<const uint8_t*>(kDiverging);
  ClearCounters();
  for (int i = 0; i < 3; ++i) h.TestOneInput(bytes, sizeof(kDiverging) - 1);
  EXPECT_GT(NonZeroCounters(), 0u);
  auto store = store::FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok());
  // The first hit is recorded at once; repeats wait for the next flush.
  EXPECT_EQ((*(*store)->Load())[0]["count"], 1);
  h.FlushHits();
  auto index = (*store)->Load();
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->size(), 1u);
  const nlohmann::json& e = (*index)[0];
  EXPECT_EQ(e["signature"], "aten::sub.Tensor|f32|tolerance|undecided");
  // sub computed exactly what its (rounded) inputs give: the error is inherited.
  EXPECT_EQ(e["tier"], "expected");
  EXPECT_EQ(e["detail"]["expected_rule"], "inherited_difference");
  EXPECT_EQ(e["count"], 3);
  EXPECT_EQ(e["detail"]["a"], "0.0");
  EXPECT_EQ(e["detail"]["b"], "1.0");
  ASSERT_FALSE(e["repro_py"].get<std::string>().empty());
  EXPECT_TRUE(std::filesystem::exists(dir + "/" + e["repro_py"].get<std::string>()));
  EXPECT_TRUE(std::filesystem::exists(dir + "/" + e["program"].get<std::string>()));
}

// A replacement worker starts from a store the campaign's other processes
// filled: their buckets are known to it from the start, so their hits are
// batched, not recorded one by one (each a locked rewrite of an index of
// megabytes, which serialized the workers of a long campaign), and the
// index is left alone until the flush. A bucket another process records
// while this one runs is learnt the same way once the index changes.
TEST(Harness, BucketsOtherProcessesRecordedAreBatchedNotRecordedAgain) {
  const std::string dir = testing::TempDir("findings");
  const auto* bytes = reinterpret_cast<const uint8_t*>(kDiverging);
  {
    Harness first(CpuPair(dir));
    first.TestOneInput(bytes, sizeof(kDiverging) - 1);
  }
  const std::string index_path = dir + "/index.jsonl";
  auto stamp = [&] { return std::filesystem::last_write_time(index_path); };
  const std::string before = testing::ReadTextFile(index_path);
  const auto written = stamp();
  Harness second(CpuPair(dir));
  for (int i = 0; i < 3; ++i) second.TestOneInput(bytes, sizeof(kDiverging) - 1);
  EXPECT_EQ(testing::ReadTextFile(index_path), before);
  EXPECT_EQ(stamp(), written);

  // Another process records a bucket: this one learns it from the index.
  auto store = store::FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok());
  store::FindingHit other;
  other.signature = "aten::mul.Tensor|f32|tolerance|undecided";
  other.root_op = "aten::mul.Tensor";
  ASSERT_TRUE((*store)->Record(other, "x\n").ok());
  const std::string with_other = testing::ReadTextFile(index_path);
  second.TestOneInput(bytes, sizeof(kDiverging) - 1);
  EXPECT_EQ(testing::ReadTextFile(index_path), with_other);

  second.FlushHits();
  auto index = (*store)->Load();
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->size(), 2u);
  EXPECT_EQ((*index)[0]["count"], 5);
  EXPECT_EQ((*index)[1]["count"], 1);
}

// A CUDA fault poisons the worker's context: the harness records the input
// and aborts. The bucket is named after the node that faulted, as the crash
// artifact the abort leaves is (fuzz/campaign/artifact_replay.cc), so `divfuzz repro` can
// reduce it (a "cuda_fatal" bucket could not be). The fault is planted on a
// CPU run labelled cuda.
// A cpu pair whose side B is labelled cuda and faults at node 1 with `message`.
HarnessConfig FaultingCudaPair(const std::string& dir, const std::string& message) {
  HarnessConfig c = CpuPair(dir);
  c.target_b = exec::Target::kCuda;
  c.runner_b = [message](const graph::Program& p, const ops::TypeEnv& t, exec::Target) {
    exec::RunResult r = exec::Run(p, t, exec::Target::kCpu);
    r.target = exec::Target::kCuda;
    r.nodes[1].outputs.clear();
    r.nodes[1].error = exec::NodeError{exec::NodeError::Kind::kCudaFatal, message};
    r.cuda_fatal = true;
    return r;
  };
  return c;
}

TEST(Harness, ACudaFaultIsACrashBucketOfTheNodeThatFaulted) {
  const std::string dir = testing::TempDir("findings");
  HarnessConfig c =
      FaultingCudaPair(dir, "CUDA error: an illegal memory access was encountered");
  ::testing::FLAGS_gtest_death_test_style = "fast";  // the child writes the store we read
  EXPECT_DEATH(
      {
        Harness h(c);
        h.TestOneInput(reinterpret_cast<const uint8_t*>(kDiverging), sizeof(kDiverging) - 1);
      },
      "CUDA fault; aborting");
  auto store = store::FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok());
  auto index = (*store)->Load();
  ASSERT_TRUE(index.ok()) << index.status();
  bool found = false;
  for (const nlohmann::json& e : *index) {
    // Nothing of a poisoned run is judged: no error split on the fault.
    EXPECT_NE(e["class"], "error_split") << e.dump();
    if (e["class"] != "crash") continue;
    found = true;
    EXPECT_EQ(e["signature"], "aten::sub.Tensor|f32|crash|cuda");
    // Not localized with CUDA_LAUNCH_BLOCKING=1 here: divergence tier until
    // the campaign's locate replay names the node and files it.
    EXPECT_EQ(e["tier"], "divergence");
    EXPECT_EQ(e["detail"]["node"], 1);
    EXPECT_EQ(e["detail"]["summary"],
              "crash in aten::sub.Tensor on cuda (a CUDA fault) (where it surfaced; not yet "
              "replayed with CUDA_LAUNCH_BLOCKING=1)");
  }
  EXPECT_TRUE(found) << "no crash bucket in " << dir;
}

// On the campaign's MPS server a fault reaches every client, so a worker
// that meets one may be innocent: it records nothing and exits with
// kExitMpsFault; the supervisor keeps the input and replays it alone.
TEST(Harness, ACudaFaultOnTheCampaignsMpsServerRecordsNothingAndExits87) {
  const std::string dir = testing::TempDir("findings");
  HarnessConfig c = FaultingCudaPair(dir, "CUDA error: unspecified launch failure");
  c.on_mps = true;
  ::testing::FLAGS_gtest_death_test_style = "fast";
  EXPECT_EXIT(
      {
        Harness h(c);
        h.TestOneInput(reinterpret_cast<const uint8_t*>(kDiverging), sizeof(kDiverging) - 1);
      },
      ::testing::ExitedWithCode(fuzz::kExitMpsFault), "CUDA fault on the campaign's MPS server");
  auto store = store::FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok());
  auto index = (*store)->Load();
  ASSERT_TRUE(index.ok()) << index.status();
  for (const nlohmann::json& e : *index) EXPECT_NE(e["class"], "crash") << e.dump();
}

TEST(Harness, SkipsInputsThatAlreadyKilledAWorker) {
  const std::string dir = testing::TempDir("findings");
  const auto* bytes = reinterpret_cast<const uint8_t*>(kDiverging);
  const size_t size = sizeof(kDiverging) - 1;
  // The supervisor's skip list, as a worker reads it from the environment.
  const std::string list = testing::TempDir("skip") + "/skip_inputs.txt";
  std::ofstream(list) << "0\n" << absl::StrCat(absl::Hex(InputHash(bytes, size))) << "\n";
  setenv("DIVFUZZ_SKIP_INPUTS", list.c_str(), 1);
  HarnessConfig c = ConfigFromEnvironment();
  unsetenv("DIVFUZZ_SKIP_INPUTS");
  EXPECT_EQ(c.skip_inputs.size(), 2u);
  c.target_a = exec::Target::kCpu;
  c.target_b = exec::Target::kCpuF64;
  c.findings_dir = dir;
  Harness h(c);
  h.TestOneInput(bytes, size);
  h.FlushHits();
  auto store = store::FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE((*store)->Load()->empty());
  // Any other input still runs: one more byte and the divergence is recorded.
  const std::string other = std::string(kDiverging) + "\n";
  h.TestOneInput(reinterpret_cast<const uint8_t*>(other.data()), other.size());
  EXPECT_EQ((*store)->Load()->size(), 1u);
}

TEST(Harness, AgreeingProgramRecordsNothingAndSetsOnlyTheFixedCounter) {
  const std::string dir = testing::TempDir("findings");
  Harness h(CpuPair(dir));
  const std::string text =
      "divfuzz v1\ninput %x: f32[3] = values(1.0, 2.0, 3.0)\n%y = aten::neg(%x)\noutput %y\n";
  ClearCounters();
  Outcome o = h.RunProgram(testing::MustParse(text));
  EXPECT_FALSE(o.verdict.Diverged());
  // Only the fixed "it ran" counter: an agreeing program is nothing new.
  EXPECT_EQ(NonZeroCounters(), 1u);
  auto store = store::FindingsStore::Open(dir);
  EXPECT_TRUE((*store)->Load()->empty());
  // A diverging program adds its verdict's counters (class, size bucket).
  h.RunProgram(testing::MustParse(kDiverging));
  EXPECT_GE(NonZeroCounters(), 3u);
}

TEST(Harness, SlowProgramsEarnNoVerdictFeedback) {
  // The same divergence as kDiverging, behind a large matrix product: many
  // times slower than the cheap programs run before it.
  const std::string slow =
      "divfuzz v1\ninput %m: f32[300,300] = normal(seed=1, mean=0.0, std=1.0)\n"
      "input %a: f32[1] = fill(100000000.0)\ninput %b: f32[1] = fill(1.0)\n"
      "%p = aten::mm(%m, %m)\n%c = aten::add.Tensor(%a, %b)\n%d = aten::sub.Tensor(%c, %a)\n"
      "output %p, %d\n";
  const std::string cheap =
      "divfuzz v1\ninput %x: f32[3] = values(1.0, 2.0, 3.0)\n%y = aten::neg(%x)\noutput %y\n";
  for (double cost : {3.0, 0.0}) {
    HarnessConfig c = CpuPair(testing::TempDir("findings"));
    c.feedback_cost = cost;
    Harness h(c);
    for (int i = 0; i < 20; ++i) h.RunProgram(testing::MustParse(cheap));
    ClearCounters();
    Outcome o = h.RunProgram(testing::MustParse(slow));
    ASSERT_TRUE(o.verdict.Diverged());
    if (cost > 0) {
      EXPECT_EQ(NonZeroCounters(), 1u) << "only the fixed counter";
    } else {
      EXPECT_GE(NonZeroCounters(), 3u) << "without the cost rule, its verdict counts";
    }
  }
}

TEST(ProgramFromBytes, GarbageBecomesADeterministicValidProgram) {
  const uint8_t garbage[] = {0xff, 0x00, 0x13, 'x', '%', '='};
  bool parsed = true;
  graph::Program a = ProgramFromBytes(garbage, sizeof(garbage), &parsed);
  EXPECT_FALSE(parsed);
  EXPECT_FALSE(a.nodes.empty());
  EXPECT_EQ(graph::PrintProgram(a),
            graph::PrintProgram(ProgramFromBytes(garbage, sizeof(garbage))));
}

TEST(Harness, MutatorOutputFitsAndParses) {
  const std::string dir = testing::TempDir("findings");
  Harness h(CpuPair(dir));
  std::vector<uint8_t> buf(4096);
  std::memcpy(buf.data(), kDiverging, sizeof(kDiverging) - 1);
  size_t size = sizeof(kDiverging) - 1;
  for (unsigned seed = 0; seed < 50; ++seed) {
    size = h.Mutate(buf.data(), size, buf.size(), seed);
    ASSERT_GT(size, 0u);
    ASSERT_LE(size, buf.size());
    bool parsed = false;
    ProgramFromBytes(buf.data(), size, &parsed);
    EXPECT_TRUE(parsed) << std::string(buf.begin(), buf.begin() + size);
  }
}

// A crash once located "in autograd::grad" quarantined the gradient
// statement itself, and the campaign ran gradients no more: the statement
// is never quarantined, the ops it differentiates may be.
TEST(Harness, AGradientStatementIsNeverQuarantinedItsOpsMayBe) {
  constexpr char kGradient[] = R"(divfuzz v1
input %x: f32[3,6] = fill(1.0)
input %w1: f32[9,6] = values(0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x1.c28f5cp-4, -0x1.2f1aap-4, 0x1.28f5c2p-2, -0x1.ae147ap-3, -0x1.ae147ap-3, -0x1.ae147ap-3)
input %b1: f32[] = fill(0.30000001192092896)
input %ct5: f32[3,9] = values(0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, -0x1.9p+6)
%y = aten::linear(%x, %w1, %b1)
%v = aten::sinc(%y)
%g1 = autograd::grad([%v], [%x], grad_outputs=[%ct5])
output %g1
)";
  for (const char* op : {"autograd::grad", "aten::sinc"}) {
    const std::string dir = testing::TempDir("findings");
    HarnessConfig config = CpuPair(dir);
    config.quarantine = {op};
    Harness h(config);
    h.TestOneInput(reinterpret_cast<const uint8_t*>(kGradient), sizeof(kGradient) - 1);
    auto store = store::FindingsStore::Open(dir);
    EXPECT_EQ((*store)->Load()->empty(), std::string(op) == "aten::sinc") << op;
  }
}

}  // namespace
}  // namespace divfuzz::fuzz

namespace divfuzz::fuzz {
namespace {

TEST(Harness, QuarantinedOpsAreNotRun) {
  const std::string dir = testing::TempDir("findings");
  HarnessConfig config = CpuPair(dir);
  config.quarantine = {"aten::sub.Tensor"};
  Harness h(config);
  h.TestOneInput(reinterpret_cast<const uint8_t*>(kDiverging), sizeof(kDiverging) - 1);
  auto store = store::FindingsStore::Open(dir);
  EXPECT_TRUE((*store)->Load()->empty());
}

}  // namespace
}  // namespace divfuzz::fuzz
