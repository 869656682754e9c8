// divfuzz merge of findings stores (store/merge.h): a union whose counts are
// each store's own hits counted once, however often and by whatever route
// they are merged.
#include "store/merge.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "gtest/gtest.h"
#include "store/root_cause_group.h"
#include "tests/test_util.h"

namespace divfuzz::store {
namespace {

namespace fs = std::filesystem;

FindingHit Hit(const std::string& op) {
  FindingHit h;
  h.signature = "aten::" + op + "|f32|tolerance";
  h.root_op = "aten::" + op;
  h.dtype = "f32";
  h.divergence_class = "tolerance";
  h.wrong_side = "cpu";
  h.tier = "bug";
  h.severity = "bug-tolerance";
  h.targets = "cpu vs cpu-f64";
  return h;
}

std::unique_ptr<FindingsStore> Open(const std::string& dir) {
  auto s = FindingsStore::Open(dir);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

void Hits(FindingsStore& s, const std::string& op, int n) {
  for (int i = 0; i < n; ++i) ASSERT_TRUE(s.Record(Hit(op), "divfuzz v1\n# " + op + "\n").ok());
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// id -> what a store that saw the hits would hold: count and the minimized
// program's text.
std::map<std::string, std::pair<int64_t, std::string>> Summary(FindingsStore& s) {
  std::map<std::string, std::pair<int64_t, std::string>> out;
  auto entries = s.Load();
  EXPECT_TRUE(entries.ok()) << entries.status();
  for (const nlohmann::json& e : *entries) {
    const std::string min = e.value("minimized", "");
    EXPECT_TRUE(fs::exists(s.dir() + "/" + e.value("program", ""))) << e.dump();
    out[e.value("id", "")] = {e.value("count", int64_t{0}),
                              min.empty() ? "" : Read(s.dir() + "/" + min)};
    EXPECT_EQ(e.value("group", ""), RootCauseKeyOf(e).Id());
  }
  return out;
}

TEST(Merge, TwoStoresEqualOneThatSawBoth) {
  const std::string dir = testing::TempDir("merge-both");
  auto a = Open(dir + "/a"), b = Open(dir + "/b"), both = Open(dir + "/both");
  Hits(*a, "sinh", 3);
  Hits(*a, "cosh", 1);
  Hits(*b, "sinh", 2);
  Hits(*b, "tan", 4);
  Hits(*both, "sinh", 5);
  Hits(*both, "cosh", 1);
  Hits(*both, "tan", 4);
  auto merged = Open(dir + "/merged");
  auto first = MergeStore(*merged, *a);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->new_buckets, 2);
  auto second = MergeStore(*merged, *b);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->new_buckets, 1);
  EXPECT_EQ(second->updated_buckets, 1);
  EXPECT_EQ(Summary(*merged), Summary(*both));
  // first_seen is the earliest of the two, last_seen the latest.
  auto entries = merged->Load();
  for (const nlohmann::json& e : *entries) {
    EXPECT_LE(e.value("first_seen", ""), e.value("last_seen", ""));
  }
}

TEST(Merge, IdempotentIncrementalAndCountedOnceByAnyRoute) {
  const std::string dir = testing::TempDir("merge-routes");
  auto a = Open(dir + "/a"), b = Open(dir + "/b"), c = Open(dir + "/c");
  Hits(*a, "sinh", 3);
  Hits(*b, "sinh", 2);
  ASSERT_TRUE(MergeStore(*c, *a).ok());
  ASSERT_TRUE(MergeStore(*c, *a).ok());  // again: nothing changes
  EXPECT_EQ(Summary(*c).begin()->second.first, 3);
  Hits(*a, "sinh", 4);  // the host went on
  ASSERT_TRUE(MergeStore(*c, *a).ok());
  EXPECT_EQ(Summary(*c).begin()->second.first, 7);
  // b took a's hits first; merged into c, a's are not counted twice.
  ASSERT_TRUE(MergeStore(*b, *a).ok());
  EXPECT_EQ(Summary(*b).begin()->second.first, 9);
  ASSERT_TRUE(MergeStore(*c, *b).ok());
  EXPECT_EQ(Summary(*c).begin()->second.first, 9);
  // c's own hits add to what it merged; merging c back into b counts them once.
  Hits(*c, "sinh", 1);
  EXPECT_EQ(Summary(*c).begin()->second.first, 10);
  ASSERT_TRUE(MergeStore(*b, *c).ok());
  ASSERT_TRUE(MergeStore(*b, *c).ok());
  EXPECT_EQ(Summary(*b).begin()->second.first, 10);
  // A store merged into itself is refused, not doubled.
  auto self = MergeStore(*b, *b);
  ASSERT_TRUE(self.ok());
  EXPECT_EQ(self->warnings.size(), 1u);
  EXPECT_EQ(Summary(*b).begin()->second.first, 10);
}

TEST(Merge, KeepsTheSmallestMinimizedProgramWithItsRepros) {
  const std::string dir = testing::TempDir("merge-min");
  auto a = Open(dir + "/a"), b = Open(dir + "/b");
  Hits(*a, "sinh", 1);
  Hits(*b, "sinh", 1);
  const std::string id = FindingsStore::MakeId(Hit("sinh"));
  ASSERT_TRUE(a->WriteArtifact(id, "min.dfz", "divfuzz v1\n# a long minimized program\n",
                               "minimized").ok());
  ASSERT_TRUE(a->WriteArtifact(id, "repro.py", "# a's\n", "repro_py").ok());
  ASSERT_TRUE(b->WriteArtifact(id, "min.dfz", "divfuzz v1\n# short\n", "minimized").ok());
  ASSERT_TRUE(b->WriteArtifact(id, "repro.py", "# b's\n", "repro_py").ok());
  ASSERT_TRUE(b->WriteArtifact(id, "repro_cpp/CMakeLists.txt", "# b's\n", "").ok());
  ASSERT_TRUE(b->WriteArtifact(id, "repro_cpp/main.cpp", "// b's\n", "repro_cpp").ok());
  auto stats = MergeStore(*a, *b);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->smaller_programs, 1);
  auto entries = a->Load();
  ASSERT_EQ(entries->size(), 1u);
  const nlohmann::json& e = (*entries)[0];
  EXPECT_EQ(Read(a->dir() + "/" + e.value("minimized", "")), "divfuzz v1\n# short\n");
  EXPECT_EQ(Read(a->dir() + "/" + e.value("repro_py", "")), "# b's\n");
  const fs::path cpp = a->dir() + "/" + e.value("repro_cpp", "");
  EXPECT_EQ(Read(cpp.string()), "// b's\n");
  EXPECT_EQ(Read((cpp.parent_path() / "CMakeLists.txt").string()), "# b's\n");
  EXPECT_EQ(e.value("count", 0), 2);
  // The larger one merged back changes nothing.
  auto again = MergeStore(*a, *b);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->smaller_programs, 0);
  EXPECT_EQ(again->updated_buckets, 0);
}

}  // namespace
}  // namespace divfuzz::store
