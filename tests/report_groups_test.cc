// Root-cause groups in the campaign's reports: GroupBuckets over a real store,
// the HTML page and the closing summary, both listing the groups first.
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fuzz/campaign/status.h"
#include "gtest/gtest.h"
#include "report/groups.h"
#include "report/report.h"
#include "store/findings_store.h"
#include "tests/report_fixture.h"
#include "tests/test_util.h"

namespace divfuzz::report {
namespace {

using divfuzz::testing::MakeFolder;
using divfuzz::testing::ReadTextFile;
using divfuzz::testing::TempDir;
using divfuzz::testing::WriteTextFile;

struct Filed {
  std::string signature, tier, severity, trigger, witness, rule;
  int count;
  std::string min_dfz;  // "" : not minimized
};

// <root>/campaign/stats.csv and a store <root>/findings filed through the
// store's own API, plus one line of a store written before triggers,
// witnesses and groups. Returns the ids in filing order.
std::vector<std::string> MakeGroupedCampaign(const std::string& root) {
  MakeFolder(root + "/campaign");
  WriteTextFile(root + "/campaign/stats.csv", "elapsed_s,executions\n5,100\n10,200\n");
  const std::vector<Filed> filed = {
      // One mechanism, three overloads and dtypes; the first has no min.dfz,
      // the smallest min.dfz is the representative's.
      {"aten::add.Tensor|f16|tolerance|cuda", "bug", "bug-tolerance", "ordinary", "cpu-f64", "", 10,
       ""},
      {"aten::add.Scalar|bf16|tolerance|cuda", "bug", "bug-tolerance", "ordinary", "cpu-f64", "", 4,
       "divfuzz v1\n# a longer minimized program\n"},
      {"aten::add_|f32|tolerance|cuda", "bug", "bug-tolerance", "ordinary", "cpu-f64", "", 1,
       "divfuzz v1\n"},
      // The same op on NaN inputs: another group.
      {"aten::add.Scalar|f32|tolerance|cuda", "bug", "bug-tolerance", "nan", "cpu-f64", "", 2, ""},
      // Expected by a rule, many hits: still after every bug.
      {"aten::sum.dim_IntList|f32|tolerance|undecided", "expected", "expected", "ordinary",
       "cpu-f64", "cancelling_reductions", 50, ""},
      {"aten::sum|f16|tolerance|undecided", "expected", "expected", "ordinary", "cpu-f64",
       "cancelling_reductions", 7, "divfuzz v1\n"},
  };
  const std::string findings = root + "/findings";
  auto store = store::FindingsStore::Open(findings);
  EXPECT_TRUE(store.ok()) << store.status();
  std::vector<std::string> ids;
  for (const Filed& f : filed) {
    store::FindingHit hit = divfuzz::testing::HitFor(f.signature, "cpu vs cuda", f.tier);
    hit.severity = f.severity;
    hit.detail = {{"summary", "element 0"},
                  {"expected_rule", f.rule},
                  {"trigger", f.trigger},
                  {"witness", f.witness}};
    auto r = (*store)->Record(hit, "divfuzz v1\n# found\n");
    EXPECT_TRUE(r.ok()) << r.status();
    ids.push_back(r->id);
    EXPECT_TRUE((*store)->AddHits({{f.signature, f.count - 1}}).ok());
    if (!f.min_dfz.empty()) {
      EXPECT_TRUE((*store)->WriteArtifact(r->id, "min.dfz", f.min_dfz, "minimized").ok());
    }
  }
  // An older store's line: no trigger, witness or group; the most severe.
  WriteTextFile(
      findings + "/index.jsonl",
      ReadTextFile(findings + "/index.jsonl") +
          R"({"id":"logdet-f32-class_split-0ld","signature":"aten::logdet|f32|class_split|cpu",)"
          R"("root_op":"aten::logdet","dtype":"f32","class":"class_split","wrong_side":"cpu",)"
          R"("tier":"bug","severity":"bug-split","count":3,"detail":{"summary":"x"}})"
          "\n");
  ids.push_back("logdet-f32-class_split-0ld");
  return ids;
}

std::vector<std::string> MemberIds(const Group& g) {
  std::vector<std::string> ids;
  for (const Bucket& b : g.members) ids.push_back(b.id);
  return ids;
}

TEST(ReportGroups, GroupsCountsAndRepresentatives) {
  const std::string root = TempDir("groups");
  const std::vector<std::string> id = MakeGroupedCampaign(root);
  ReportOptions options;
  options.work_dir = root + "/campaign";
  absl::StatusOr<ReportData> data = LoadReport(options);
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->buckets.size(), 7u);
  const std::vector<Group> groups = GroupBuckets(data->buckets);
  ASSERT_EQ(groups.size(), 4u);

  EXPECT_EQ(groups[0].id, "logdet|class_split|bug|cpu||ordinary");
  EXPECT_EQ(groups[0].severity, "bug-split");
  EXPECT_EQ(groups[0].hits, 3);
  EXPECT_EQ(MemberIds(groups[0]), std::vector<std::string>{id[6]});
  EXPECT_EQ(groups[0].representative, 0u);  // none minimized: the first

  EXPECT_EQ(groups[1].id, "add|tolerance|bug|cuda|witness:cpu-f64|ordinary");
  EXPECT_EQ(groups[1].label, "add: tolerance (bug), cuda wrong, witness cpu-f64, ordinary inputs");
  EXPECT_EQ(groups[1].tier, "bug");
  EXPECT_EQ(groups[1].hits, 15);
  EXPECT_EQ(MemberIds(groups[1]), (std::vector<std::string>{id[0], id[1], id[2]}));
  EXPECT_EQ(groups[1].members[groups[1].representative].id, id[2]);  // the smallest min.dfz
  EXPECT_EQ(groups[1].members[groups[1].representative].minimized_bytes, 11);

  EXPECT_EQ(groups[2].id, "add|tolerance|bug|cuda|witness:cpu-f64|nan");
  EXPECT_EQ(groups[2].hits, 2);
  EXPECT_EQ(MemberIds(groups[2]), std::vector<std::string>{id[3]});

  EXPECT_EQ(groups[3].id, "sum|tolerance|expected|undecided|rule:cancelling_reductions|ordinary");
  EXPECT_EQ(groups[3].hits, 57);
  EXPECT_EQ(MemberIds(groups[3]), (std::vector<std::string>{id[4], id[5]}));
  EXPECT_EQ(groups[3].members[groups[3].representative].id, id[5]);  // the one minimized

  const std::string text = GroupsText(groups);
  EXPECT_TRUE(absl::StrContains(
      text, absl::StrCat("group 2/4: add: tolerance (bug), cuda wrong, witness cpu-f64, "
                         "ordinary inputs\n  key add|tolerance|bug|cuda|witness:cpu-f64|ordinary; "
                         "tier bug, severity bug-tolerance, 3 buckets, 15 hits\n"
                         "  representative ",
                         id[2], " (", id[2], "/min.dfz, 11 bytes)\n  members ", id[0], " (10), ",
                         id[1], " (4), ", id[2], " (1)\n")))
      << text;
}

TEST(ReportGroups, HtmlListsTheGroupsBeforeTheBuckets) {
  const std::string root = TempDir("groups");
  const std::vector<std::string> id = MakeGroupedCampaign(root);
  ReportOptions options;
  options.work_dir = root + "/campaign";
  absl::StatusOr<ReportData> data = LoadReport(options);
  ASSERT_TRUE(data.ok()) << data.status();
  const std::string html = RenderHtml(*data);

  EXPECT_TRUE(absl::StrContains(html, "<th>root-cause groups</th><td>4</td>")) << html;
  const size_t groups_at = html.find("<h2>Root-cause groups (4)</h2>");
  const size_t buckets_at = html.find("<h2>Buckets (7)</h2>");
  ASSERT_NE(groups_at, std::string::npos) << html;
  ASSERT_NE(buckets_at, std::string::npos) << html;
  EXPECT_LT(groups_at, buckets_at);
  // Rows most severe first, every one before the bucket table.
  size_t last = groups_at;
  for (const char* label :
       {"logdet: class_split (bug), cpu wrong, ordinary inputs",
        "add: tolerance (bug), cuda wrong, witness cpu-f64, ordinary inputs",
        "add: tolerance (bug), cuda wrong, witness cpu-f64, nan inputs",
        "sum: tolerance (expected), side undecided, rule cancelling_reductions, ordinary inputs"}) {
    const size_t at = html.find(label);
    ASSERT_NE(at, std::string::npos) << label;
    EXPECT_GT(at, last) << label << " out of order";
    EXPECT_LT(at, buckets_at) << label;
    last = at;
  }
  // The add group's row: 3 buckets, 15 hits, the representative's min.dfz,
  // and every member linked to its row in the bucket table.
  const size_t row = html.find("<tr class=\"group\" id=\"group-2\">");
  ASSERT_NE(row, std::string::npos);
  const std::string add_row = html.substr(row, html.find("</tr>", row) - row);
  EXPECT_TRUE(absl::StrContains(add_row, "<td class=\"n\">3</td><td class=\"n\">15</td>"))
      << add_row;
  EXPECT_TRUE(absl::StrContains(add_row, absl::StrCat("<a class=\"rep\" href=\"#bucket-", id[2])))
      << add_row;
  EXPECT_TRUE(absl::StrContains(add_row, absl::StrCat("href=\"../findings/", id[2], "/min.dfz\"")))
      << add_row;
  for (int m : {0, 1, 2}) {
    EXPECT_TRUE(absl::StrContains(add_row, absl::StrCat("class=\"member\" href=\"#bucket-", id[m])))
        << id[m];
  }
  EXPECT_TRUE(absl::StrContains(add_row, ">add.Scalar bf16</a> (4)")) << add_row;
}

TEST(ReportGroups, CampaignSummaryListsTheGroupsFirstAndWritesGroupsTxt) {
  const std::string root = TempDir("groups");
  const std::vector<std::string> id = MakeGroupedCampaign(root);
  std::ostringstream out;
  fuzz::PrintSummary(root + "/findings", root + "/campaign", 200, 10, 0,
                     nlohmann::json{{"roots_by_tier", {{"bug", 20}}}}, out);
  const std::string summary = out.str();
  const size_t groups_at = summary.find("root-cause groups: 4 (most severe first; also in " + root +
                                        "/campaign/groups.txt)\n");
  const size_t buckets_at = summary.find("buckets, most severe first:");
  ASSERT_NE(groups_at, std::string::npos) << summary;
  ASSERT_NE(buckets_at, std::string::npos) << summary;
  EXPECT_LT(groups_at, buckets_at);
  size_t last = groups_at;
  for (const char* line :
       {"  group 1/4: logdet: class_split (bug), cpu wrong, ordinary inputs\n",
        "  group 2/4: add: tolerance (bug), cuda wrong, witness cpu-f64, ordinary inputs\n",
        "    key add|tolerance|bug|cuda|witness:cpu-f64|ordinary; tier bug, severity "
        "bug-tolerance, 3 buckets, 15 hits\n",
        "  group 3/4: add: tolerance (bug), cuda wrong, witness cpu-f64, nan inputs\n",
        "  group 4/4: sum: tolerance (expected), side undecided, rule cancelling_reductions, "
        "ordinary inputs\n"}) {
    const size_t at = summary.find(line);
    ASSERT_NE(at, std::string::npos) << line << summary;
    EXPECT_GT(at, last) << line;
    last = at;
  }
  EXPECT_LT(last, buckets_at);
  EXPECT_TRUE(absl::StrContains(
      summary, absl::StrCat("    representative ", id[2], " (", id[2], "/min.dfz, 11 bytes)\n")))
      << summary;
  // Every bucket still follows, once.
  for (const std::string& bucket : id) {
    const size_t at = summary.find("  " + bucket + " ", buckets_at);
    EXPECT_NE(at, std::string::npos) << bucket;
  }
  // groups.txt holds the same blocks, unindented.
  const std::string file = ReadTextFile(root + "/campaign/groups.txt");
  EXPECT_EQ(file.rfind("group 1/4: logdet: class_split (bug), cpu wrong, ordinary inputs\n", 0), 0u)
      << file;
  EXPECT_TRUE(absl::StrContains(file, "group 4/4: sum:")) << file;
}

}  // namespace
}  // namespace divfuzz::report
