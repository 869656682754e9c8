// divfuzz bench as CI's smoke test: it runs the set through every phase and
// the naive loop, and reports each; it measures, it never judges (no timing
// is asserted).
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/test_util.h"

namespace divfuzz {
namespace {

const std::string kTool = std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz";

TEST(Bench, ReportsEveryPhaseTheHarnessAndTheNaiveLoop) {
  const testing::CommandRun run = testing::RunShell(
      "(" + kTool + " bench --targets=cpu,cpu-f64 --bench_programs=4 --json --corpus=" +
      DIVFUZZ_SOURCE_DIR + "/corpus/seed 2>/dev/null)");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json j = nlohmann::json::parse(run.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << run.output;
  EXPECT_EQ(j["targets"], "cpu,cpu-f64");
  EXPECT_GT(j["from_corpus"].get<int>(), 0);
  EXPECT_EQ(j["generated"].get<int>(), 4);
  EXPECT_EQ(j["programs"].get<int>(), j["from_corpus"].get<int>() + 4);
  for (const char* phase : {"mutate", "parse", "infer", "materialize", "run_a", "run_b", "compare",
                            "triage"}) {
    ASSERT_TRUE(j["us_per_program"].contains(phase)) << phase;
    EXPECT_GE(j["us_per_program"][phase].get<double>(), 0) << phase;
  }
  EXPECT_GT(j["us_per_program"]["run_a"].get<double>(), 0);
  // Transfers are part of the runs, never more than they.
  EXPECT_GT(j["us_per_program"]["transfers"].get<double>(), 0);
  EXPECT_LE(j["us_per_program"]["transfers"].get<double>(),
            j["us_per_program"]["run_a"].get<double>() + j["us_per_program"]["run_b"].get<double>());
  EXPECT_GT(j["programs_per_s"].get<double>(), 0);
  EXPECT_GT(j["harness_us_per_program"].get<double>(), 0);
  EXPECT_GT(j["harness_repeat_us_per_program"].get<double>(), 0);
  EXPECT_GT(j["naive_loop_per_s"].get<double>(), 0);
}

TEST(Bench, ATableByDefaultAndClearErrors) {
  const testing::CommandRun table = testing::RunShell(
      kTool + " bench --targets=cpu,cpu-f64 --bench_programs=2 --corpus=/nonexistent 2>&1");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("us/program"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("naive loop"), std::string::npos) << table.output;
  const testing::CommandRun none = testing::RunShell(
      kTool + " bench --targets=cpu,cpu-f64 --bench_programs=0 --corpus=/nonexistent 2>&1");
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("no programs"), std::string::npos) << none.output;
  const testing::CommandRun bad = testing::RunShell(kTool + " bench --bench_programs=-1 2>&1");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--bench_programs"), std::string::npos) << bad.output;
}

TEST(Bench, CountsGradientProgramsApart) {
  const std::string dir = testing::TempDir("bench_gradients");
  std::ofstream(dir + "/plain.dfz") << "divfuzz v1\ninput %x: f32[4] = fill(1.0)\n"
                                       "%y = aten::sin(%x)\noutput %y\n";
  std::ofstream(dir + "/grad.dfz") << "divfuzz v1\ninput %x: f32[4] = fill(1.0)\n"
                                      "input %v: f32[4] = fill(1.0)\n%y = aten::sin(%x)\n"
                                      "%g = autograd::grad(%y, [%x], grad_outputs=%v)\noutput %g\n";
  const testing::CommandRun run = testing::RunShell(
      "(" + kTool + " bench --targets=cpu,cpu-f64 --bench_programs=0 --json --corpus=" + dir +
      " 2>/dev/null)");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json j = nlohmann::json::parse(run.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << run.output;
  EXPECT_EQ(j["programs"].get<int>(), 2);
  EXPECT_EQ(j["gradient_programs"].get<int>(), 1);
  EXPECT_GT(j["gradient_time_share"].get<double>(), 0);
  EXPECT_LT(j["gradient_time_share"].get<double>(), 1);
}

}  // namespace
}  // namespace divfuzz
