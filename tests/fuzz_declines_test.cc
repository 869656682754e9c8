// Issue 32: a node divfuzz declines to run (exec/index_precheck.h) is never
// reported as agreeing: replay and repro say "declined: <reason>; not run" and
// exit 3, and a campaign counts declines per op in its statistics.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "exec/executor.h"
#include "fuzz/exit_codes.h"
#include "fuzz/harness/harness.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/test_util.h"

namespace divfuzz::fuzz {
namespace {

const std::string kTool = std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz";

constexpr char kDeclined[] = R"(divfuzz v1
input %a: f32[2,2] = values(nan, 1.0, 2.0, 3.0)
%s = aten::linalg_svdvals(%a)
output %s
)";

constexpr char kDiverging[] = R"(divfuzz v1
input %a: f32[1] = fill(100000000.0)
input %b: f32[1] = fill(1.0)
%c = aten::add.Tensor(%a, %b)
%d = aten::sub.Tensor(%c, %a)
output %d
)";

constexpr char kAgreeing[] = R"(divfuzz v1
input %a: f32[2] = values(1.0, 2.0)
%b = aten::abs(%a)
output %b
)";

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Declines, ANonFiniteSvdInputIsDeclinedOnEveryTargetAndMarkedSo) {
  graph::Program p = testing::MustParse(
      "divfuzz v1\ninput %a: f32[2,2] = values(nan, 1.0, 2.0, 3.0)\n"
      "%s = aten::linalg_svdvals(%a)\n%t = aten::abs(%a)\noutput %s, %t\n");
  ops::TypeEnv types = testing::MustInfer(p);
  for (exec::Target target :
       {exec::Target::kCpu, exec::Target::kCpuF64, exec::Target::kCpuScalar}) {
    const exec::RunResult r = exec::Run(p, types, target);
    ASSERT_EQ(r.nodes.size(), 2u) << exec::TargetName(target);
    ASSERT_TRUE(r.nodes[0].error) << exec::TargetName(target);
    EXPECT_TRUE(r.nodes[0].error->declined) << exec::TargetName(target);
    EXPECT_NE(r.nodes[0].error->message.find("a NaN or inf input"), std::string::npos);
    EXPECT_FALSE(r.nodes[1].error) << exec::TargetName(target);
  }
  // An ordinary error is not a decline.
  graph::Program bad = testing::MustParse(
      "divfuzz v1\ninput %m: f64[2,2] = values(-1.0, 0.0, 0.0, -1.0)\n"
      "%c = aten::linalg_cholesky(%m)\noutput %c\n");
  const exec::RunResult r = exec::Run(bad, testing::MustInfer(bad), exec::Target::kCpu);
  ASSERT_TRUE(r.nodes[0].error);
  EXPECT_FALSE(r.nodes[0].error->declined);
}

TEST(ExitCodes, DeclinedRanksBetweenCleanAndFindings) {
  EXPECT_EQ(kExitDeclined, 3);
  EXPECT_EQ(WorseExit(kExitClean, kExitDeclined), kExitDeclined);
  EXPECT_EQ(WorseExit(kExitDeclined, kExitFindings), kExitFindings);
  EXPECT_EQ(WorseExit(kExitFindings, kExitDeclined), kExitFindings);
  EXPECT_EQ(WorseExit(kExitDeclined, kExitCannotRun), kExitCannotRun);
  EXPECT_EQ(WorseExit(kExitCannotRun, kExitDeclined), kExitCannotRun);
}

TEST(Replay, ADeclinedProgramSaysSoAndExits3NeverAgree) {
  if (!std::filesystem::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("replay-declined");
  std::ofstream(dir + "/declined.dfz") << kDeclined;
  std::ofstream(dir + "/div.dfz") << kDiverging;
  std::ofstream(dir + "/agree.dfz") << kAgreeing;
  testing::CommandRun run =
      testing::RunShell(kTool + " replay --targets=cpu,cpu-f64 " + dir + "/declined.dfz");
  EXPECT_EQ(run.exit_code, kExitDeclined) << run.output;
  EXPECT_TRUE(Contains(run.output, "  declined: aten::linalg_svdvals: a NaN or inf input"))
      << run.output;
  EXPECT_TRUE(Contains(run.output, "; not run\n")) << run.output;
  EXPECT_TRUE(Contains(run.output, "    cpu: declined (not run)\n")) << run.output;
  EXPECT_TRUE(Contains(run.output, "verdict: declined: 1 node not run")) << run.output;
  EXPECT_FALSE(Contains(run.output, "verdict: agree")) << run.output;
  // Beside an agreeing program still 3; beside a divergence 1.
  run = testing::RunShell(kTool + " replay --targets=cpu,cpu-f64 " + dir + "/agree.dfz " + dir +
                          "/declined.dfz");
  EXPECT_EQ(run.exit_code, kExitDeclined) << run.output;
  run = testing::RunShell(kTool + " replay --targets=cpu,cpu-f64 " + dir + "/declined.dfz " + dir +
                          "/div.dfz");
  EXPECT_EQ(run.exit_code, kExitFindings) << run.output;
  run = testing::RunShell(kTool + " replay --targets=cpu,cpu-f64 " + dir + "/agree.dfz");
  EXPECT_EQ(run.exit_code, kExitClean) << run.output;
  EXPECT_TRUE(Contains(run.output, "verdict: agree")) << run.output;
}

TEST(Repro, ADeclinedProgramSaysSoAndExits3) {
  if (!std::filesystem::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("repro-declined");
  std::ofstream(dir + "/declined.dfz") << kDeclined;
  testing::CommandRun run = testing::RunShell(kTool + " repro --targets=cpu,cpu-f64 --out=" + dir +
                                              "/out " + dir + "/declined.dfz");
  EXPECT_EQ(run.exit_code, kExitDeclined) << run.output;
  EXPECT_TRUE(Contains(run.output,
                       "[0] %s = aten::linalg_svdvals: declined: "
                       "aten::linalg_svdvals: a NaN or inf input"))
      << run.output;
  EXPECT_TRUE(Contains(run.output, "; not run\n")) << run.output;
}

TEST(Harness, DeclinesAreCountedPerOpInTheWorkerStatistics) {
  const std::string dir = testing::TempDir("findings-declined");
  HarnessConfig c;
  c.target_a = exec::Target::kCpu;
  c.target_b = exec::Target::kCpuF64;
  c.findings_dir = dir;
  c.stats_path = dir + "/stats.json";
  {
    Harness h(c);
    const std::string text = kDeclined;
    for (int i = 0; i < 2; ++i) {
      h.TestOneInput(reinterpret_cast<const uint8_t*>(text.data()), text.size());
    }
  }  // the destructor writes the last counts
  std::ifstream in(c.stats_path);
  ASSERT_TRUE(in.good());
  const nlohmann::json stats = nlohmann::json::parse(in);
  ASSERT_TRUE(stats.contains("declined_by_op")) << stats.dump();
  EXPECT_EQ(stats["declined_by_op"].value("aten::linalg_svdvals", 0), 2) << stats.dump();
}

// End to end: worker statistics summed by the supervisor, in the summary.
TEST(Campaign, TheSummaryCountsDeclinesPerOp) {
  if (!std::filesystem::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("campaign-declined");
  std::filesystem::create_directories(dir + "/seeds");
  std::ofstream(dir + "/seeds/declined.dfz") << kDeclined;
  const testing::CommandRun run = testing::RunShell(
      "cd " + dir + " && " + kTool +
      " campaign --seconds=5 --workers=1 --repro_seconds=0 --targets=cpu,cpu-f64 --corpus=" + dir +
      "/seeds");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(
      Contains(run.output, "nodes declined, not run (inputs the kernel does not survive): "))
      << run.output;
  EXPECT_TRUE(Contains(run.output, " aten::linalg_svdvals=")) << run.output;
}

}  // namespace
}  // namespace divfuzz::fuzz
