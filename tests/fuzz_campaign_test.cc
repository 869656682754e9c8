// End to end: the divfuzz tool runs a short campaign in a scratch folder and
// leaves a valid findings store and a summary.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "store/findings_store.h"
#include "tests/test_util.h"

namespace divfuzz {
namespace {

std::string RunCommand(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  while (p != nullptr && fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  *status = p == nullptr ? -1 : pclose(p);
  return out;
}

const std::string kTool = std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz";

TEST(Campaign, ShortCampaignWritesFindingsAndASummary) {
  if (!std::filesystem::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("campaign");
  int status = 0;
  const std::string out =
      RunCommand("cd " + dir + " && " + kTool +
                     " campaign --seconds=10 --targets=cpu,cpu-f64 --corpus=" + DIVFUZZ_SOURCE_DIR +
                     "/corpus/seed 2>&1",
                 &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("divfuzz campaign summary"), std::string::npos) << out;
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
}

TEST(Replay, ReportsDivergenceAndRejectsMalformedPrograms) {
  if (!std::filesystem::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("replay");
  std::ofstream(dir + "/div.dfz") << "divfuzz v1\ninput %a: f32[1] = fill(100000000.0)\n"
                                     "input %b: f32[1] = fill(1.0)\n%c = aten::add.Tensor(%a, %b)\n"
                                     "%d = aten::sub.Tensor(%c, %a)\noutput %d\n";
  std::ofstream(dir + "/bad.dfz") << "divfuzz v1\ninput %a: f32[1 = fill(1.0)\n";
  int status = 0;
  std::string out =
      RunCommand(kTool + " replay --targets=cpu,cpu-f64 " + dir + "/div.dfz 2>&1", &status);
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  EXPECT_NE(out.find("verdict: tolerance at node 1"), std::string::npos) << out;
  EXPECT_NE(out.find("[root]"), std::string::npos) << out;
  out = RunCommand(kTool + " replay " + dir + "/bad.dfz 2>&1", &status);
  EXPECT_EQ(WEXITSTATUS(status), 2) << out;
  EXPECT_NE(out.find("bad.dfz:2:"), std::string::npos) << out;
}

}  // namespace
}  // namespace divfuzz
