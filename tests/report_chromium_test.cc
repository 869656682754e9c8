// `divfuzz report` end to end: a campaign folder and findings store on disk,
// the real command, then headless Chromium (Debian's chromium package)
// renders the page. The screenshot must show the plot lines and the table
// header in their fixed colours where the layout puts them, and the DOM
// Chromium built must hold the fixture's rows in severity order.
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/report_fixture.h"
#include "tests/test_util.h"

namespace divfuzz::testing {
namespace {

std::string Divfuzz() { return std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz"; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The headless browser, or "" when it is not installed.
std::string Chromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    if (RunShell(absl::StrCat("command -v ", name)).exit_code == 0) return name;
  }
  return "";
}

TEST(ReportCommand, MissingStatsOrIndexExitsTwoNamingThePath) {
  const std::string root = TempDir("report");
  CommandRun run = RunShell(absl::StrCat(Divfuzz(), " report ", root));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, root + "/stats.csv")) << run.output;

  MakeCampaignFixture(root);
  run = RunShell(
      absl::StrCat(Divfuzz(), " report ", root, "/campaign --findings=", root, "/nowhere"));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, root + "/nowhere/index.jsonl")) << run.output;

  run = RunShell(absl::StrCat(Divfuzz(), " report ", root, "/campaign --findings=", root,
                              "/findings --out=", root, "/r.html"));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(absl::StrContains(ReadAll(root + "/r.html"),
                                "href=\"findings/gelu-bf16-class_split-1111bbbb/min.dfz\""));
}

TEST(ReportCommand, ChromiumRendersThePlotsAndTheTable) {
  const std::string chromium = Chromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium is not installed (apt-get install chromium; scripts/setup.sh "
                    "installs it)";
  }
  const std::string root = TempDir("report");
  MakeCampaignFixture(root);
  CommandRun run = RunShell(absl::StrCat(Divfuzz(), " report ", root, "/campaign"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string page = root + "/campaign/report.html";
  EXPECT_TRUE(absl::StrContains(run.output, page)) << run.output;

  // --user-data-dir: a private profile, so parallel runs cannot collide.
  const std::string browser = absl::StrCat(
      "timeout 60 ", chromium, " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage ",
      "--hide-scrollbars ", "--user-data-dir=", root, "/profile --window-size=1200,1600 ");
  run = RunShell(absl::StrCat(browser, "--screenshot=", root, "/shot.png file://", page));
  ASSERT_EQ(run.exit_code, 0) << run.output;

  // Plot lines: exec/s (magenta, left plot), bug and total buckets (red and
  // blue, right plot); the table header band (dark blue) below both.
  run = RunShell(absl::StrCat(Python(), " ", DIVFUZZ_SOURCE_DIR, "/tests/png_colors.py ", root,
                              "/shot.png e6007e d62728 1f77b4 0b3d5c"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json px = nlohmann::json::parse(run.output, nullptr, false);
  ASSERT_TRUE(px.is_object()) << run.output;
  EXPECT_EQ(px["width"], 1200);
  const nlohmann::json &exec = px["e6007e"], &bug = px["d62728"], &total = px["1f77b4"],
                       &head = px["0b3d5c"];
  // A 3-px line across most of a ~470-px-wide plot area.
  EXPECT_GT(exec["count"].get<int>(), 600) << px;
  EXPECT_GT(exec["x1"].get<int>() - exec["x0"].get<int>(), 350) << px;
  EXPECT_LT(exec["x1"].get<int>(), 600) << "exec/s line outside the left plot: " << px;
  EXPECT_GT(bug["count"].get<int>(), 300) << px;
  EXPECT_GT(total["count"].get<int>(), 600) << px;
  EXPECT_GT(bug["x0"].get<int>(), 580) << "bug line outside the right plot: " << px;
  EXPECT_GT(total["x0"].get<int>(), 580) << px;
  for (const nlohmann::json* line : {&exec, &bug, &total}) {
    // Inside the plot band: below the summary, above the table.
    EXPECT_GT((*line)["y0"].get<int>(), 100) << px;
    EXPECT_LT((*line)["y1"].get<int>(), head["y0"].get<int>()) << px;
  }
  // The header spans the table's width and is a band of a few rows.
  EXPECT_GT(head["x1"].get<int>() - head["x0"].get<int>(), 1000) << px;
  EXPECT_GT(head["count"].get<int>(), 1000 * 20) << px;
  EXPECT_LT(head["y1"].get<int>() - head["y0"].get<int>(), 60) << px;

  // The DOM Chromium parsed: the fixture's rows, in severity order, with the
  // hostile op name as text.
  run = RunShell(
      absl::StrCat(browser, "--dump-dom file://", page, " >", root, "/dom.html 2>/dev/null"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string dom = ReadAll(root + "/dom.html");
  std::vector<std::string> ids;
  const std::regex row("<tr class=\"bucket\" id=\"bucket-([^\"]+)\"");
  for (std::sregex_iterator it(dom.begin(), dom.end(), row), end; it != end; ++it) {
    ids.push_back((*it)[1]);
  }
  std::vector<std::string> want;
  for (const FixtureBucket& b : FixtureBuckets()) want.push_back(b.id);
  EXPECT_EQ(ids, want) << dom;
  for (const char* th : {"<th>tier</th>", "<th>class</th>", "<th>op</th>", "<th>dtype</th>",
                         "<th>wrong side</th>", "<th>count</th>", "<th>first seen</th>"}) {
    EXPECT_TRUE(absl::StrContains(dom, th)) << th;
  }
  EXPECT_TRUE(absl::StrContains(dom, "<td>cpu&lt;b&gt;</td>"));
  EXPECT_TRUE(absl::StrContains(dom, "&lt;script&gt;alert(\"x\")&lt;/script&gt;&amp;amp"));
  EXPECT_FALSE(absl::StrContains(dom, "<script"));
  EXPECT_TRUE(absl::StrContains(
      dom, "<a href=\"../findings/logdet-f32-class_split-2222cccc/report.md\">report.md</a>"));
  EXPECT_EQ(std::count(dom.begin(), dom.end(), '\n') > 0, true);
  EXPECT_TRUE(absl::StrContains(dom, "<polyline class=\"series\" data-series=\"exec/s\""));
}

}  // namespace
}  // namespace divfuzz::testing
