// Issue 32: hangs and crashes on valid input are findings. A program divfuzz
// declines for a hang or crash (exec::NodeError::isolable) is queued by a
// worker at --isolated_share and run in the campaign's isolated lane
// (fuzz/campaign/isolated_lane.h), a process of its own with a short timeout:
// a run that ends is judged and recorded like a worker's; a hang there is a
// hang finding, and the workers go on. --isolated_share=0 keeps the decline.
#include <chrono>
#include <filesystem>
#include <map>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "exec/index_precheck.h"
#include "fuzz/harness/harness.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/test_util.h"

namespace divfuzz::fuzz {
namespace {

namespace fs = std::filesystem;
const std::string kTool = std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz";

// A NaN into the SVD: declined on every target today (cuSOLVER hangs on it).
constexpr char kNanSvd[] = R"(divfuzz v1
input %a: f32[2,2] = values(nan, 1.0, 2.0, 3.0)
%s = aten::linalg_svdvals(%a)
output %s
)";

// matrix_exp of a float32 matrix whose 1-norm overflows: declined (the
// squaring count is an undefined cast of inf). The CPU's float32 kernel
// returns the identity, its float64 run inf: a divergence nobody could see.
constexpr char kOverflowingExp[] = R"(divfuzz v1
input %a: f32[2,2] = fill(2e38)
%e = aten::linalg_matrix_exp(%a)
output %e
)";

// matrix_exp of an infinite norm: declined; the hanging plugin loops on it.
constexpr char kInfiniteExp[] = R"(divfuzz v1
input %a: f32[2,2] = values(inf, 1.0, 2.0, 3.0)
%e = aten::linalg_matrix_exp(%a)
output %e
)";

// A NaN cotangent into matrix_exp's backward (which iterates on it): declined.
constexpr char kNanCotangent[] = R"(divfuzz v1
input %x: f32[2,2] = values(0.5, 0.25, 0.125, 1.0)
input %v: f32[2,2] = values(nan, 1.0, 1.0, 1.0)
%e = aten::linalg_matrix_exp(%x)
%g = autograd::grad(%e, [%x], grad_outputs=%v)
output %g
)";

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::vector<nlohmann::json> ReadIndex(const std::string& findings) {
  std::vector<nlohmann::json> entries;
  std::ifstream in(findings + "/index.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    EXPECT_TRUE(j.is_object()) << "invalid index line: " << line;
    if (j.is_object()) entries.push_back(j);
  }
  return entries;
}

std::vector<std::string> Queued(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  return names;
}

TEST(IsolatedLane, DeclinesSayWhetherTheLaneRunsThem) {
  // A loop bounded by a value: declined here, run in the lane.
  graph::Program svd = testing::MustParse(kNanSvd);
  exec::RunResult r = exec::Run(svd, testing::MustInfer(svd), exec::Target::kCpu);
  ASSERT_TRUE(r.nodes[0].error);
  EXPECT_TRUE(r.nodes[0].error->declined);
  EXPECT_TRUE(r.nodes[0].error->isolable);
  EXPECT_TRUE(Contains(r.nodes[0].error->message, "only in a campaign's isolated lane"))
      << r.nodes[0].error->message;
  // An unchecked read stays declined everywhere, and says why.
  graph::Program set = testing::MustParse(
      "divfuzz v1\ninput %a: f64[3] = values(1.0, 2.0, 3.0)\n"
      "input %b: f32[3] = values(1.0, 2.0, 3.0)\n%s = aten::set.source_Tensor(%a, %b)\n"
      "output %s\n");
  r = exec::Run(set, testing::MustInfer(set), exec::Target::kCpu);
  ASSERT_TRUE(r.nodes[0].error);
  EXPECT_TRUE(r.nodes[0].error->declined);
  EXPECT_FALSE(r.nodes[0].error->isolable);
  EXPECT_TRUE(Contains(r.nodes[0].error->message, "not even in its isolated lane"))
      << r.nodes[0].error->message;
  // So is a non-finite cotangent into an iterative backward.
  graph::Program grad = testing::MustParse(kNanCotangent);
  r = exec::Run(grad, testing::MustInfer(grad), exec::Target::kCpu);
  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_FALSE(r.nodes[0].error);
  ASSERT_TRUE(r.nodes[1].error);
  EXPECT_TRUE(r.nodes[1].error->declined);
  EXPECT_TRUE(r.nodes[1].error->isolable);
  EXPECT_TRUE(Contains(r.nodes[1].error->message, "only in a campaign's isolated lane"))
      << r.nodes[1].error->message;
  // The cpu-scalar helper process says the same.
  r = exec::Run(svd, testing::MustInfer(svd), exec::Target::kCpuScalar);
  ASSERT_TRUE(r.nodes[0].error);
  EXPECT_TRUE(r.nodes[0].error->isolable);
}

TEST(IsolatedLane, AWorkerQueuesDeclinedProgramsAtTheShareAndNoneAtZero) {
  const std::string dir = testing::TempDir("lane-queue");
  for (double share : {0.0, 1.0}) {
    const std::string lane = dir + "/lane-" + std::to_string(static_cast<int>(share));
    fs::create_directories(lane);
    HarnessConfig c;
    c.findings_dir = dir + "/findings";
    c.stats_path = lane + ".stats.json";
    c.lane_dir = lane;
    c.isolated_share = share;
    {
      Harness h(c);
      for (const std::string text : {std::string(kNanSvd), std::string(kNanSvd),
                                     std::string("divfuzz v1\ninput %a: f32[2] = values(1.0, "
                                                 "2.0)\n%b = aten::abs(%a)\noutput %b\n")}) {
        h.TestOneInput(reinterpret_cast<const uint8_t*>(text.data()), text.size());
      }
    }
    const nlohmann::json stats = nlohmann::json::parse(testing::ReadTextFile(c.stats_path));
    // Declined either way: the worker itself never runs it.
    EXPECT_EQ(stats["declined_by_op"].value("aten::linalg_svdvals", 0), 2) << stats.dump();
    if (share == 0) {
      EXPECT_TRUE(Queued(lane).empty());
      EXPECT_EQ(stats.value("isolated_queued", -1), 0) << stats.dump();
      continue;
    }
    // One file for the program (its repeat shares it), none for the ordinary one.
    const std::vector<std::string> files = Queued(lane);
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(stats.value("isolated_queued", -1), 1) << stats.dump();
    EXPECT_TRUE(Contains(testing::ReadTextFile(lane + "/" + files[0]), "aten::linalg_svdvals"));
  }
}

TEST(IsolatedLane, ADeclinedProgramRunsThereAndItsVerdictIsRecorded) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("lane-isolated");
  testing::WriteTextFile(dir + "/exp.dfz", kOverflowingExp);
  testing::WriteTextFile(dir + "/svd.dfz", kNanSvd);
  // Declined where it is replayed: nothing compared (exit 3).
  testing::CommandRun run =
      testing::RunShell(kTool + " replay --targets=cpu,cpu-f64 " + dir + "/exp.dfz");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  // In the lane it runs, announced node by node, and the divergence is judged
  // and recorded like a worker's, marked as the lane's.
  run = testing::RunShell(kTool + " isolated --targets=cpu,cpu-f64 --findings=" + dir +
                          "/findings " + dir + "/exp.dfz");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(Contains(run.output, "RUN cpu 0 aten::linalg_matrix_exp\n")) << run.output;
  EXPECT_TRUE(Contains(run.output, "VERDICT diverged")) << run.output;
  EXPECT_TRUE(Contains(run.output, "DONE\n")) << run.output;
  const std::vector<nlohmann::json> index = ReadIndex(dir + "/findings");
  ASSERT_FALSE(index.empty()) << run.output;
  bool found = false;
  for (const nlohmann::json& e : index) {
    if (e.value("root_op", "") != "aten::linalg_matrix_exp") continue;
    found = true;
    EXPECT_EQ(e["detail"].value("isolated_lane", false), true) << e.dump();
    EXPECT_NE(e.value("class", ""), "hang") << e.dump();
  }
  EXPECT_TRUE(found) << run.output;
  // The NaN SVD: the CPU's LAPACK raises on both sides alike (no hang on the
  // CPU), so the lane's verdict is an agreement, not a decline.
  run = testing::RunShell(kTool + " isolated --targets=cpu,cpu-f64 --findings=" + dir +
                          "/findings " + dir + "/svd.dfz");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(Contains(run.output, "RUN cpu-f64 0 aten::linalg_svdvals\n")) << run.output;
  EXPECT_TRUE(Contains(run.output, "VERDICT agree 0")) << run.output;
  // The backward declined on a NaN cotangent runs there too.
  testing::WriteTextFile(dir + "/grad.dfz", kNanCotangent);
  run = testing::RunShell(kTool + " isolated --targets=cpu,cpu-f64 --findings=" + dir +
                          "/findings " + dir + "/grad.dfz");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(Contains(run.output, "RUN cpu-f64 1 autograd::grad\n")) << run.output;
  EXPECT_TRUE(Contains(run.output, "DONE\n")) << run.output;
}

// A campaign in `dir` on the CPU pair under the hanging plugin, seeded with
// the program it hangs on (and a NaN SVD). Forward programs only: no worker
// death of the gradient oracle's own can blur "the worker goes on".
testing::CommandRun LaneCampaign(const std::string& dir, const std::string& flags) {
  fs::create_directories(dir + "/seeds");
  testing::WriteTextFile(dir + "/seeds/exp.dfz", kInfiniteExp);
  testing::WriteTextFile(dir + "/seeds/svd.dfz", kNanSvd);
  return testing::RunShell("cd " + dir + " && " + kTool + " campaign --plugins=" +
                           DIVFUZZ_FAULTY_LANE_PLUGIN +
                           " --targets=cpu,cpu-f64 --workers=1 --repro_seconds=0 --grad_share=0"
                           " --corpus=" + dir + "/seeds " + flags);
}

TEST(IsolatedLane, AHangThereIsAHangFindingWithinTheShortTimeoutAndTheWorkerGoesOn) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("lane-hang");
  const auto start = std::chrono::steady_clock::now();
  const testing::CommandRun run =
      LaneCampaign(dir, "--seconds=10 --isolated_share=1 --isolated_timeout=2");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // The worker never ran it (declined) and never died.
  EXPECT_TRUE(Contains(run.output, "1 workers, 0 restarts")) << run.output;
  EXPECT_FALSE(Contains(run.output, "died")) << run.output;
  std::vector<nlohmann::json> hangs;
  for (const nlohmann::json& e : ReadIndex(dir + "/findings")) {
    if (e.value("class", "") == "hang") hangs.push_back(e);
  }
  ASSERT_EQ(hangs.size(), 1u) << run.output;
  EXPECT_EQ(hangs[0].value("root_op", ""), "aten::linalg_matrix_exp");
  EXPECT_EQ(hangs[0].value("dtype", ""), "f32");
  EXPECT_EQ(hangs[0].value("wrong_side", ""), "cpu");  // cpu-f64's float64 call does not hang
  EXPECT_EQ(hangs[0]["detail"].value("isolated_lane", false), true);
  EXPECT_EQ(hangs[0]["detail"].value("reproduced", false), true);
  EXPECT_EQ(hangs[0]["detail"].value("timeout_seconds", 0), 2);
  const std::string folder = dir + "/findings/" + hangs[0].value("id", "");
  EXPECT_TRUE(fs::exists(folder + "/program.dfz")) << folder;
  EXPECT_TRUE(fs::exists(folder + "/repro.py")) << folder;
  EXPECT_TRUE(Contains(run.output, "isolated lane: hang in aten::linalg_matrix_exp on cpu ->"))
      << run.output;
  // Declined programs that do not hang ran to their end there and were judged.
  std::smatch m;
  const std::regex summary(R"(isolated lane: (\d+) declined program\(s\) run \((\d+) to their end)");
  ASSERT_TRUE(std::regex_search(run.output, m, summary)) << run.output;
  EXPECT_GE(std::stoi(m[2]), 1) << run.output;
  // Two short timeouts, not minutes: the budget, start-up and closing.
  EXPECT_LT(seconds, 45) << run.output;
}

TEST(IsolatedLane, WhatStaysQueuedWhenACampaignStopsRunsWhenItResumes) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("lane-resume");
  fs::create_directories(dir + "/seeds");
  testing::WriteTextFile(dir + "/seeds/abs.dfz",
                         "divfuzz v1\ninput %a: f32[2] = values(1.0, 2.0)\n%b = aten::abs(%a)\n"
                         "output %b\n");
  const std::string flags = " --targets=cpu,cpu-f64 --workers=1 --repro_seconds=0 --corpus=" +
                            dir + "/seeds --isolated_share=1 --seconds=3";
  testing::CommandRun run = testing::RunShell("cd " + dir + " && " + kTool + " campaign" + flags);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // As a worker would have left it when the campaign was killed.
  ASSERT_TRUE(fs::is_directory(dir + "/campaign/lane"));
  // The oldest in the queue (first come, first run), ahead of what the
  // first run left there.
  const std::string left = dir + "/campaign/lane/0123456789abcdef.dfz";
  testing::WriteTextFile(left, kOverflowingExp);
  fs::last_write_time(left, fs::last_write_time(left) - std::chrono::hours(1));
  // Under load the first run's mutations may already have filed a
  // matrix_exp bucket (ctest -j3 at 8285383: a 3-s campaign ran 14 s); the
  // lane's finding then adds a hit to it rather than a bucket of its own.
  std::map<std::string, int64_t> before;
  for (const nlohmann::json& e : ReadIndex(dir + "/findings")) {
    before[e.value("id", "")] = e.value("count", int64_t{0});
  }
  run = testing::RunShell("cd " + dir + " && " + kTool + " campaign --resume=campaign --seconds=3");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_FALSE(fs::exists(dir + "/campaign/lane/0123456789abcdef.dfz")) << run.output;
  bool found = false;
  for (const nlohmann::json& e : ReadIndex(dir + "/findings")) {
    if (e.value("root_op", "") != "aten::linalg_matrix_exp") continue;
    const auto was = before.find(e.value("id", ""));
    found = found || e["detail"].value("isolated_lane", false) ||
            (was != before.end() && e.value("count", int64_t{0}) > was->second);
  }
  EXPECT_TRUE(found) << run.output;
}

TEST(IsolatedLane, ShareZeroKeepsTheDecline) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("lane-off");
  const testing::CommandRun run = LaneCampaign(dir, "--seconds=5 --isolated_share=0");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_FALSE(Contains(run.output, "isolated lane")) << run.output;
  EXPECT_FALSE(fs::exists(dir + "/campaign/lane"));
  for (const nlohmann::json& e : ReadIndex(dir + "/findings")) {
    EXPECT_NE(e.value("class", ""), "hang") << e.dump();
  }
  EXPECT_TRUE(Contains(run.output, "aten::linalg_matrix_exp=")) << run.output;  // counted declined
}

}  // namespace
}  // namespace divfuzz::fuzz
