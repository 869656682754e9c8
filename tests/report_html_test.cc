// The HTML report's generator, without a browser: escaping, CSV and index
// parsing, severity order, table rows and their links, summary and plots.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "report/html.h"
#include "report/plot.h"
#include "report/report.h"
#include "tests/report_fixture.h"
#include "tests/test_util.h"

namespace divfuzz::report {
namespace {

using divfuzz::testing::FixtureBuckets;
using divfuzz::testing::MakeCampaignFixture;
using divfuzz::testing::MakeFolder;
using divfuzz::testing::TempDir;
using divfuzz::testing::WriteTextFile;

int CountOf(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(ReportHtml, EscapesTextAndAttributes) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  EXPECT_EQ(HtmlEscape("plain text 1.0"), "plain text 1.0");
  EXPECT_EQ(UrlPathEscape("../f/a b#c%d?.py"), "../f/a%20b%23c%25d%3F.py");
  EXPECT_EQ(UrlPathEscape("x\"<y"), "x%22%3Cy");
}

TEST(ReportHtml, RelativePaths) {
  EXPECT_EQ(RelativePath("/a/campaign", "/a/findings/x/repro.py"), "../findings/x/repro.py");
  EXPECT_EQ(RelativePath("/a", "/a/findings/x/repro.py"), "findings/x/repro.py");
  EXPECT_EQ(RelativePath("/a/b/c", "/d/e"), "../../../d/e");
  EXPECT_EQ(RelativePath("/a/b", "/a/b"), ".");
}

TEST(ReportHtml, StatsCsvColumnsByNameAndShortLinesSkipped) {
  std::vector<std::string> warnings;
  absl::StatusOr<Stats> stats =
      ParseStatsCsv("executions,elapsed_s,new_thing\n10,5,a\n30,10,b\n45,1\n\n70,15,c\n",
                    "w/stats.csv", &warnings);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->rows.size(), 3u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "w/stats.csv:4: skipped: expected 3 fields, got 2");
  const auto series = stats->Series("executions");
  ASSERT_EQ(series.size(), 3u);
  EXPECT_EQ(series[2], std::make_pair(15.0, 70.0));
  EXPECT_EQ(stats->Column("bug"), -1);
  EXPECT_TRUE(stats->Series("bug").empty());
  EXPECT_FALSE(stats->Last("restarts").has_value());
  EXPECT_EQ(*stats->Last("executions"), 70);

  absl::StatusOr<Stats> empty = ParseStatsCsv("\n", "w/stats.csv", &warnings);
  EXPECT_FALSE(empty.ok());
  EXPECT_TRUE(absl::StrContains(empty.status().message(), "w/stats.csv:1: expected a header"));
}

TEST(ReportHtml, CorruptIndexLinesAreSkippedWithTheirLine) {
  std::vector<std::string> warnings;
  std::vector<nlohmann::json> entries = ParseIndex(
      "{\"id\":\"a\"}\n{\"id\":\"b\",\"cou\n[1]\n{\"id\":\"c\"}\n", "f/index.jsonl", &warnings);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1]["id"], "c");
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_TRUE(absl::StartsWith(warnings[0], "f/index.jsonl:2: skipped"));
  EXPECT_TRUE(absl::StartsWith(warnings[1], "f/index.jsonl:3: skipped"));
}

TEST(ReportHtml, SeverityOrder) {
  std::vector<Bucket> buckets(6);
  const char* severities[] = {"expected",      "divergence", "hang",
                              "bug-tolerance", "crash",      "bug-split"};
  for (int i = 0; i < 6; ++i) {
    buckets[i].severity = severities[i];
    buckets[i].id = severities[i];
  }
  buckets.push_back(buckets[1]);
  buckets.back().id = "divergence-more";
  buckets.back().count = 9;
  SortBySeverity(&buckets);
  std::vector<std::string> ids;
  for (const Bucket& b : buckets) ids.push_back(b.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"crash", "hang", "bug-split", "bug-tolerance",
                                           "divergence-more", "divergence", "expected"}));
}

TEST(ReportHtml, NiceTicks) {
  EXPECT_EQ(NiceTicks(200), (std::vector<double>{0, 50, 100, 150, 200}));
  EXPECT_EQ(NiceTicks(7), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(NiceTicks(12), (std::vector<double>{0, 2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(NiceTicks(3.4), (std::vector<double>{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5}));
  EXPECT_EQ(NiceTicks(150), (std::vector<double>{0, 50, 100, 150}));
  EXPECT_EQ(NiceTicks(0), (std::vector<double>{0, 1}));
}

TEST(ReportHtml, RowsInSeverityOrderEscapedWithLinks) {
  const std::string root = TempDir("report");
  MakeCampaignFixture(root);
  ReportOptions options;
  options.work_dir = root + "/campaign";
  absl::StatusOr<ReportData> data = LoadReport(options);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->findings_dir, RealPath(root + "/findings"));
  const std::string html = RenderHtml(*data);

  const std::vector<divfuzz::testing::FixtureBucket> want = FixtureBuckets();
  EXPECT_EQ(CountOf(html, "<tr class=\"bucket\""), static_cast<int>(want.size()));
  size_t last = 0;
  for (const auto& b : want) {
    const size_t at = html.find(absl::StrCat("<tr class=\"bucket\" id=\"bucket-", b.id, "\""));
    ASSERT_NE(at, std::string::npos) << b.id;
    EXPECT_GT(at, last) << b.id << " out of severity order";
    last = at;
    const std::string dir = absl::StrCat("../findings/", b.id, "/");
    EXPECT_TRUE(absl::StrContains(html, absl::StrCat("href=\"", dir, "repro.py\"")));
    EXPECT_EQ(absl::StrContains(html, absl::StrCat("href=\"", dir, "report.md\"")), b.report_md);
    EXPECT_EQ(absl::StrContains(html, absl::StrCat("href=\"", dir, "repro_cpp/main.cpp\">C++<")),
              b.report_md);
    EXPECT_EQ(absl::StrContains(html, absl::StrCat("href=\"", dir, "min.dfz\">min.dfz<")),
              b.minimized);
    EXPECT_EQ(absl::StrContains(html, absl::StrCat("href=\"", dir, "program.dfz\">program.dfz<")),
              !b.minimized);
  }
  // The hostile op name and wrong side are text, not markup.
  EXPECT_FALSE(absl::StrContains(html, "<script"));
  EXPECT_FALSE(absl::StrContains(html, "<b>"));
  EXPECT_TRUE(
      absl::StrContains(html, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;amp<br>"));
  EXPECT_TRUE(absl::StrContains(html, "<td>cpu&lt;b&gt;</td>"));
  EXPECT_TRUE(absl::StrContains(html, "title=\"element 0: 1.0 vs &lt;nan&gt;\""));

  // Summary: the known columns, and counts per tier and class from the index.
  EXPECT_TRUE(absl::StrContains(html, "<th>restarts</th><td>2</td>"));
  EXPECT_TRUE(absl::StrContains(html, "<th>workers</th><td>4</td>"));
  EXPECT_TRUE(absl::StrContains(html, "<th>targets</th><td>cpu vs cpu-f64</td>"));
  EXPECT_TRUE(absl::StrContains(html, "<th>duration</th><td>3min 20s</td>"));
  EXPECT_TRUE(absl::StrContains(html, "<tr><td>bug</td><td>2</td></tr>"));
  EXPECT_TRUE(absl::StrContains(html, "<tr><td>class_split</td><td>2</td></tr>"));
  EXPECT_TRUE(absl::StrContains(html, "<th>buckets</th><td>4 (314 hits)</td>"));
  // Plots: an exec/s line and one step line per tier column.
  EXPECT_TRUE(absl::StrContains(html, "data-series=\"exec/s\" fill=\"none\" stroke=\"#e6007e\""));
  for (const char* tier : {"buckets", "bug", "divergence", "expected", "dtype_gap"}) {
    EXPECT_TRUE(absl::StrContains(html, absl::StrCat("data-series=\"", tier, "\""))) << tier;
  }
  EXPECT_FALSE(absl::StrContains(html, "data-series=\"crash\""));  // no such column
  EXPECT_FALSE(absl::StrContains(html, "no samples yet"));
  // Self-contained: nothing is fetched.
  EXPECT_FALSE(absl::StrContains(html, "src="));
  EXPECT_FALSE(absl::StrContains(html, "http://") &&
               !absl::StrContains(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_FALSE(absl::StrContains(html, "https://"));
}

TEST(ReportHtml, CampaignJsonNamesFindingsAndLinksFollowOut) {
  const std::string root = TempDir("report");
  MakeCampaignFixture(root);
  // The store lives elsewhere; campaign.json names it relative to the work folder.
  MakeFolder(root + "/elsewhere");
  ASSERT_EQ(::rename((root + "/findings").c_str(), (root + "/elsewhere/store").c_str()), 0);
  WriteTextFile(root + "/campaign/campaign.json",
                R"({"findings": "../elsewhere/store", "targets": "cpu,cuda",
                    "budget_seconds": 600, "started": "2026-11-21T15:51:00Z", "restarts": 6})");
  MakeFolder(root + "/out");
  ReportOptions options;
  options.work_dir = root + "/campaign/";
  options.out = root + "/out/r.html";
  absl::StatusOr<std::string> written = WriteReport(options);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(*written, root + "/out/r.html");
  std::ifstream in(*written);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string html = ss.str();
  EXPECT_TRUE(absl::StrContains(
      html, "href=\"../elsewhere/store/gelu-bf16-class_split-1111bbbb/min.dfz\""));
  EXPECT_TRUE(absl::StrContains(html, "<th>targets</th><td>cpu,cuda</td>"));
  EXPECT_TRUE(absl::StrContains(html, "<th>restarts</th><td>6</td>"));  // campaign.json wins
  EXPECT_TRUE(absl::StrContains(html, "3min 20s of 10min 00s budget"));
  EXPECT_TRUE(absl::StrContains(html, "<th>started</th><td>2026-11-21T15:51:00Z</td>"));
}

TEST(ReportHtml, StateJsonAndAResumedClock) {
  std::vector<std::string> warnings;
  // The second run's clock starts again at 5: it continues from 10.
  absl::StatusOr<Stats> stats =
      ParseStatsCsv("elapsed_s,executions\n5,10\n10,20\n5,30\n10,40\n", "w/stats.csv", &warnings);
  ASSERT_TRUE(stats.ok()) << stats.status();
  std::vector<double> xs;
  for (const auto& [x, y] : stats->Series("executions")) xs.push_back(x);
  EXPECT_EQ(xs, (std::vector<double>{5, 10, 10, 15}));

  // The campaign's own files, as `divfuzz campaign` writes them (absolute
  // findings path, GPUs, and fuzzing time and restarts in state.json).
  const std::string root = TempDir("report");
  MakeCampaignFixture(root);
  WriteTextFile(root + "/campaign/campaign.json",
                absl::StrCat(R"({"version": 1, "targets": "cpu,cuda", "findings": ")", root,
                             R"(/findings", "budget_seconds": 1200, "workers": 4,
                             "gpus": ["0"], "started": "2026-11-21T15:00:00Z"})"));
  WriteTextFile(root + "/campaign/state.json",
                R"({"elapsed_seconds": 1190.4, "restarts": 3, "resumes": 1})");
  ReportOptions options;
  options.work_dir = root + "/campaign";
  absl::StatusOr<ReportData> data = LoadReport(options);
  ASSERT_TRUE(data.ok()) << data.status();
  const std::string html = RenderHtml(*data);
  EXPECT_TRUE(absl::StrContains(html, "<th>duration</th><td>19min 50s of 20min 00s budget</td>"))
      << html;
  EXPECT_TRUE(absl::StrContains(html, "<th>restarts</th><td>3</td>"));
  EXPECT_TRUE(absl::StrContains(html, "<th>resumes</th><td>1</td>"));
  EXPECT_TRUE(absl::StrContains(html, "<th>workers</th><td>4</td>"));
  EXPECT_TRUE(absl::StrContains(html, "<th>GPUs</th><td>0</td>"));
  EXPECT_TRUE(absl::StrContains(html, "<th>targets</th><td>cpu,cuda</td>"));
  EXPECT_EQ(CountOf(html, "<tr class=\"bucket\""), 4);
}

TEST(ReportHtml, MissingStatsOrIndexIsNotFoundNamingThePath) {
  const std::string root = TempDir("report");
  MakeFolder(root + "/campaign");
  ReportOptions options;
  options.work_dir = root + "/campaign";
  absl::StatusOr<ReportData> data = LoadReport(options);
  ASSERT_FALSE(data.ok());
  EXPECT_TRUE(absl::IsNotFound(data.status()));
  EXPECT_TRUE(absl::StrContains(data.status().message(), root + "/campaign/stats.csv"));

  WriteTextFile(root + "/campaign/stats.csv", "elapsed_s,executions\n");
  data = LoadReport(options);
  ASSERT_FALSE(data.ok());
  EXPECT_TRUE(absl::IsNotFound(data.status()));
  EXPECT_TRUE(
      absl::StrContains(data.status().message(), root + "/campaign/../findings/index.jsonl"));

  // Only a header and an empty store: a page with empty plots and no rows.
  MakeFolder(root + "/findings");
  WriteTextFile(root + "/findings/index.jsonl", "");
  data = LoadReport(options);
  ASSERT_TRUE(data.ok()) << data.status();
  const std::string html = RenderHtml(*data);
  EXPECT_EQ(CountOf(html, "no samples yet"), 2);
  EXPECT_TRUE(absl::StrContains(html, "No buckets yet."));
}

}  // namespace
}  // namespace divfuzz::report
