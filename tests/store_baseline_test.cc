// --baseline's file of known bucket ids and group keys, and a findings store
// as a baseline (store/baseline.h).
#include "store/baseline.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "store/findings_store.h"
#include "tests/test_util.h"

namespace divfuzz::store {
namespace {

FindingHit Hit(const std::string& op, const std::string& dtype, const std::string& tier) {
  FindingHit h;
  h.signature = op + "|" + dtype + "|tolerance";
  h.root_op = op;
  h.dtype = dtype;
  h.divergence_class = "tolerance";
  h.wrong_side = "cpu";
  h.tier = tier;
  h.severity = tier == "bug" ? "bug-tolerance" : "divergence";
  h.targets = "cpu vs cpu-f64";
  h.detail = {{"witness", "cpu-f64"}, {"trigger", "ordinary"}};
  return h;
}

TEST(Baseline, IdFileWithCommentsProgramsAndGroups) {
  const std::string dir = testing::TempDir("baseline-ids");
  testing::WriteTextFile(dir + "/sin.dfz", "divfuzz v1\n");
  absl::StatusOr<Baseline> b = ParseBaselineIds(
      "# known upstream\n"
      "\n"
      "sinh-f32-tolerance-1a2b3c4d   # pytorch#12345\n"
      "sin-f32-tolerance-00000001 sin.dfz # a regression program\n"
      "cosh|tolerance|bug|cpu|witness:cpu-f64|ordinary\n",
      dir + "/known.txt", dir);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->bucket_ids.size(), 2u);
  EXPECT_EQ(b->group_keys.count("cosh|tolerance|bug|cpu|witness:cpu-f64|ordinary"), 1u);
  EXPECT_EQ(b->notes.at("sinh-f32-tolerance-1a2b3c4d"), "pytorch#12345");
  ASSERT_EQ(b->regressions.size(), 1u);
  EXPECT_EQ(b->regressions.at("sin-f32-tolerance-00000001"),
            std::filesystem::absolute(dir + "/sin.dfz").lexically_normal().string());
  // Known by id, by group (another dtype of cosh), or new.
  EXPECT_EQ(b->StatusOf({{"id", "sinh-f32-tolerance-1a2b3c4d"}}), "known");
  EXPECT_EQ(b->StatusOf({{"id", "cosh-f16-tolerance-99999999"},
                         {"root_op", "aten::cosh"},
                         {"class", "tolerance"},
                         {"tier", "bug"},
                         {"wrong_side", "cpu"},
                         {"detail", {{"witness", "cpu-f64"}}}}),
            "known-group");
  EXPECT_EQ(b->StatusOf({{"id", "tan-f32-tolerance-12345678"}, {"root_op", "aten::tan"}}), "new");
  EXPECT_EQ(Baseline{}.StatusOf({{"id", "x"}}), "");
}

TEST(Baseline, BadLinesNameFileAndLine) {
  const std::string dir = testing::TempDir("baseline-bad");
  struct Case {
    std::string text, where, what;
  } cases[] = {
      {"ok-id\nbad!id # x\n", ":2: ", "expected a bucket id"},
      {"sin-f32-tolerance-1 a.dfz b.dfz\n", ":1: ", "got more: \"b.dfz\""},
      {"\n\nsin-f32-tolerance-1 missing.dfz\n", ":3: ", "an existing .dfz file"},
      {"a|b|c|d|e|f prog.dfz\n", ":1: ", "not to a group key"},
      {"a|b|c\n", ":1: ", "expected a bucket id"},
      {"id/with/slash # x\n", ":1: ", "got \"id/with/slash\""},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Baseline> b = ParseBaselineIds(c.text, dir + "/ids.txt", dir);
    ASSERT_FALSE(b.ok()) << c.text;
    EXPECT_TRUE(absl::IsInvalidArgument(b.status()));
    const std::string message(b.status().message());
    EXPECT_NE(message.find(dir + "/ids.txt" + c.where), std::string::npos) << message;
    EXPECT_NE(message.find(c.what), std::string::npos) << message;
  }
  // A path that is neither a store nor a file.
  absl::StatusOr<Baseline> missing = LoadBaseline(dir + "/nothing");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no such file or folder"), std::string::npos);
  std::filesystem::create_directories(dir + "/empty");
  EXPECT_FALSE(LoadBaseline(dir + "/empty").ok());
}

TEST(Baseline, AStoreByFolderOrIndexKnowsItsBucketsGroupsAndBugPrograms) {
  const std::string dir = testing::TempDir("baseline-store");
  auto store = FindingsStore::Open(dir + "/findings");
  ASSERT_TRUE(store.ok());
  auto bug = (*store)->Record(Hit("aten::sinh", "f32", "bug"), "divfuzz v1\n# sinh\n");
  auto other = (*store)->Record(Hit("aten::tan", "f32", "divergence"), "divfuzz v1\n# tan\n");
  ASSERT_TRUE(bug.ok() && other.ok());
  ASSERT_TRUE((*store)->WriteArtifact(bug->id, "min.dfz", "divfuzz v1\n", "minimized").ok());
  for (const std::string& path : {dir + "/findings", dir + "/findings/index.jsonl"}) {
    absl::StatusOr<Baseline> b = LoadBaseline(path);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->bucket_ids, (std::set<std::string>{bug->id, other->id}));
    EXPECT_EQ(b->group_keys.size(), 2u);
    // Only the bug-tier bucket is replayed, from its minimized program.
    ASSERT_EQ(b->regressions.size(), 1u);
    EXPECT_NE(b->regressions.at(bug->id).find(bug->id + "/min.dfz"), std::string::npos);
    // Another dtype of sinh with the same cause is in a known group.
    nlohmann::json f16 = {{"id", "sinh-f16-x"}, {"root_op", "aten::sinh.out"},
                          {"class", "tolerance"}, {"tier", "bug"},
                          {"wrong_side", "cpu"}, {"detail", Hit("", "", "").detail}};
    EXPECT_EQ(b->StatusOf(f16), "known-group");
  }
}

}  // namespace
}  // namespace divfuzz::store
