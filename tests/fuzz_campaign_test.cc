// End to end: the divfuzz tool runs a short campaign in a scratch folder and
// leaves a valid findings store and a summary.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gtest/gtest.h"
#include "store/findings_store.h"
#include "tests/test_util.h"

namespace divfuzz {
namespace {

const std::string kTool = std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz";

TEST(Campaign, ShortCampaignWritesFindingsAndASummary) {
  if (!std::filesystem::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("campaign");
  const testing::CommandRun run = testing::RunShell(
      "cd " + dir + " && " + kTool +
      " campaign --seconds=10 --repro_jobs=2 --targets=cpu,cpu-f64 --corpus=" + DIVFUZZ_SOURCE_DIR +
      "/corpus/seed");
  const std::string& out = run.output;
  EXPECT_EQ(run.exit_code, 0) << out;
  EXPECT_NE(out.find("divfuzz campaign summary"), std::string::npos) << out;
  // Progress: programs and the cases they checked (value variants included).
  EXPECT_TRUE(std::regex_search(out, std::regex("\\] [0-9]+ execs \\([0-9]+/s\\), checked [0-9]+ "
                                                "\\([0-9]+/s\\), [0-9]+ workers")))
      << out;
  // The hits per tier are listed (they once came from a dangling reference).
  EXPECT_TRUE(std::regex_search(out, std::regex("root divergence hits by tier:( [a-z_]+=[0-9]+)+")))
      << out;
  EXPECT_NE(out.find("programs with a pair only some device accepts"), std::string::npos) << out;
  // Where the worker's time went (fuzz/harness/phase_clock.h): both runs and the oracle took
  // some, and the phases add up to the worker's life (it ran for most of the 10 s).
  EXPECT_TRUE(std::regex_search(out, std::regex("where the workers' time went: [0-9]+ worker-seconds")))
      << out;
  for (const char* phase : {"run_a", "run_b", "compare", "triage", "mutate", "libfuzzer"}) {
    EXPECT_TRUE(std::regex_search(out, std::regex(std::string("\\n  ") + phase +
                                                  " +[0-9.]+% +[0-9]+ +[0-9]+%")))
        << phase << "\n" << out;
  }
  {
    // Worker 0's lives (stats-0-N.json: a worker that an input crashed,
    // lcm(INT64_MIN, 5)'s SIGFPE among the seed corpus's mutants, is
    // restarted and writes a new file) add up to most of the 10 s.
    double wall = 0, run_a = 0;
    std::string all;
    for (int life = 0; life < 16; ++life) {
      std::ifstream in(dir + "/campaign/logs/stats-0-" + std::to_string(life) + ".json");
      if (!in) continue;
      const nlohmann::json stats = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      ASSERT_TRUE(stats.contains("phases")) << stats.dump();
      all += stats["phases"].dump() + "\n";
      for (const auto& [name, v] : stats["phases"].items()) {
        if (!v.is_object()) continue;
        EXPECT_LE(v["cpu"].get<double>(), v["wall"].get<double>() + 0.05) << name;
        wall += v["wall"].get<double>();
      }
      run_a += stats["phases"]["run_a"]["wall"].get<double>();
    }
    EXPECT_GT(wall, 5.0) << all;
    EXPECT_LT(wall, 30.0) << all;
    EXPECT_GT(run_a, 0.0);
  }
  auto store = store::FindingsStore::Open(dir + "/findings");
  ASSERT_TRUE(store.ok());
  auto index = (*store)->Load();
  ASSERT_TRUE(index.ok()) << index.status();
  // The seed corpus alone diverges between float32 and the float64 reference.
  EXPECT_FALSE(index->empty()) << out;
  for (const auto& e : *index) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/findings/" + e["program"].get<std::string>()));
  }
  EXPECT_TRUE(std::filesystem::is_directory(dir + "/campaign/corpus"));
  // New buckets were minimized beside the fuzzing, by two reducer processes.
  int minimized = 0;
  for (const auto& e : *index) minimized += !e.value("minimized", "").empty();
  EXPECT_GT(minimized, 0) << out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/campaign/logs/repro-0.log"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/campaign/logs/repro-1.log"));
}

TEST(Replay, ReportsDivergenceAndRejectsMalformedPrograms) {
  if (!std::filesystem::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("replay");
  std::ofstream(dir + "/div.dfz") << "divfuzz v1\ninput %a: f32[1] = fill(100000000.0)\n"
                                     "input %b: f32[1] = fill(1.0)\n%c = aten::add.Tensor(%a, %b)\n"
                                     "%d = aten::sub.Tensor(%c, %a)\noutput %d\n";
  std::ofstream(dir + "/bad.dfz") << "divfuzz v1\ninput %a: f32[1 = fill(1.0)\n";
  testing::CommandRun run =
      testing::RunShell(kTool + " replay --targets=cpu,cpu-f64 " + dir + "/div.dfz");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("verdict: tolerance at node 1"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("[root]"), std::string::npos) << run.output;
  run = testing::RunShell(kTool + " replay " + dir + "/bad.dfz");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("bad.dfz:2:"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace divfuzz
