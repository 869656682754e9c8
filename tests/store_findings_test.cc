#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/findings_store.h"
#include "tests/test_util.h"

namespace divfuzz::store {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string MakeTempDir() {
  return divfuzz::testing::TempDir("store") + "/findings";  // Open must create it
}

FindingHit Hit(const std::string& op, const std::string& cls) {
  FindingHit hit;
  hit.root_op = op;
  hit.dtype = "f32";
  hit.divergence_class = cls;
  hit.signature = op + "|f32|" + cls;
  hit.severity = "medium";
  hit.targets = "cpu vs cpu-f64";
  hit.detail = {{"abs_error", 1.0}, {"allowed", 1.3e-5}};
  return hit;
}

// No temporaries left anywhere and every index line is a JSON object.
void ExpectConsistent(const std::string& dir) {
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
  std::ifstream in(dir + "/index.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << "index.jsonl:" << n << ": " << line;
    EXPECT_TRUE(j.is_object());
  }
}

TEST(FindingsStore, SameSignatureIsOneBucket) {
  std::string dir = MakeTempDir();
  auto store = FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  FindingHit hit = Hit("aten::logdet", "class_split");
  std::string first_id;
  for (int i = 1; i <= 5; ++i) {
    auto r = (*store)->Record(hit, "divfuzz v1\n# run " + std::to_string(i) + "\n");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->is_new, i == 1);
    EXPECT_EQ(r->count, i);
    if (i == 1) first_id = r->id;
    EXPECT_EQ(r->id, first_id);
    ExpectConsistent(dir);
  }
  auto entries = (*store)->Load();
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 1u);
  const nlohmann::json& e = (*entries)[0];
  EXPECT_EQ(e["count"], 5);
  EXPECT_EQ(e["id"], first_id);
  EXPECT_EQ(e["signature"], hit.signature);
  EXPECT_EQ(e["root_op"], "aten::logdet");
  EXPECT_EQ(e["class"], "class_split");
  EXPECT_EQ(e["wrong_side"], "undecided");
  EXPECT_EQ(e["tier"], "divergence");
  EXPECT_EQ(e["targets"], "cpu vs cpu-f64");
  EXPECT_EQ(e["detail"]["abs_error"], 1.0);
  EXPECT_EQ(e["program"], first_id + "/program.dfz");
  EXPECT_EQ(e["repro_py"], "");
  std::regex iso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)");
  EXPECT_TRUE(std::regex_match(e["first_seen"].get<std::string>(), iso)) << e["first_seen"];
  EXPECT_TRUE(std::regex_match(e["last_seen"].get<std::string>(), iso)) << e["last_seen"];
  // The first program is kept.
  EXPECT_EQ(testing::ReadTextFile(dir + "/" + first_id + "/program.dfz"), "divfuzz v1\n# run 1\n");
  int folders = 0;
  for (const auto& entry : fs::directory_iterator(dir)) folders += entry.is_directory();
  EXPECT_EQ(folders, 1);
}

TEST(FindingsStore, IdsAreReadableAndStable) {
  FindingHit hit = Hit("aten::add.Tensor", "tolerance");
  std::string id = FindingsStore::MakeId(hit);
  EXPECT_TRUE(std::regex_match(id, std::regex("add_Tensor-f32-tolerance-[0-9a-f]{8}"))) << id;
  EXPECT_EQ(id, FindingsStore::MakeId(hit));
  FindingHit other = hit;
  other.signature += "x";
  EXPECT_NE(id, FindingsStore::MakeId(other));
  FindingHit odd = Hit("prims::we ird/op", "class_split");
  EXPECT_TRUE(std::regex_match(FindingsStore::MakeId(odd), std::regex("[A-Za-z0-9_-]+")));
}

TEST(FindingsStore, TwoSignaturesTwoEntries) {
  std::string dir = MakeTempDir();
  auto store = FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  auto a = (*store)->Record(Hit("aten::logdet", "class_split"), "program a\n");
  auto b = (*store)->Record(Hit("aten::add.Tensor", "tolerance"), "program b\n");
  auto a2 = (*store)->Record(Hit("aten::logdet", "class_split"), "program a2\n");
  ASSERT_TRUE(a.ok() && b.ok() && a2.ok());
  EXPECT_TRUE(a->is_new);
  EXPECT_TRUE(b->is_new);
  EXPECT_FALSE(a2->is_new);
  EXPECT_NE(a->id, b->id);
  EXPECT_EQ(a2->id, a->id);
  EXPECT_EQ(testing::ReadTextFile(dir + "/" + a->id + "/program.dfz"), "program a\n");
  EXPECT_EQ(testing::ReadTextFile(dir + "/" + b->id + "/program.dfz"), "program b\n");
  auto entries = (*store)->Load();
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0]["count"], 2);
  EXPECT_EQ((*entries)[1]["count"], 1);
  ExpectConsistent(dir);
}

TEST(FindingsStore, ArtifactsAreWrittenAndIndexed) {
  std::string dir = MakeTempDir();
  auto store = FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  auto r = (*store)->Record(Hit("aten::logdet", "class_split"), "p\n");
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*store)->WriteArtifact(r->id, "repro.py", "print(1)\n", "repro_py").ok());
  ASSERT_TRUE((*store)->WriteArtifact(r->id, "repro_cpp/CMakeLists.txt", "project(x)\n", "").ok());
  ASSERT_TRUE(
      (*store)->WriteArtifact(r->id, "repro_cpp/main.cpp", "int main(){}\n", "repro_cpp").ok());
  ExpectConsistent(dir);
  EXPECT_EQ(testing::ReadTextFile(dir + "/" + r->id + "/repro.py"), "print(1)\n");
  EXPECT_EQ(testing::ReadTextFile(dir + "/" + r->id + "/repro_cpp/CMakeLists.txt"), "project(x)\n");
  auto entries = (*store)->Load();
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ((*entries)[0]["repro_py"], r->id + "/repro.py");
  EXPECT_EQ((*entries)[0]["repro_cpp"], r->id + "/repro_cpp/main.cpp");
  EXPECT_EQ((*entries)[0]["report_md"], "");

  EXPECT_EQ((*store)->WriteArtifact("nope", "repro.py", "", "repro_py").code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ((*store)->WriteArtifact(r->id, "../escape.py", "", "").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*store)->WriteArtifact(r->id, "/abs.py", "", "").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*store)->WriteArtifact(r->id, "x.txt", "", "count").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FindingsStore, AddHitsUpdatesKnownBucketsInOneRewrite) {
  std::string dir = MakeTempDir();
  auto store = FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok());
  auto a = (*store)->Record(Hit("aten::logdet", "class_split"), "program a\n");
  auto b = (*store)->Record(Hit("aten::add.Tensor", "tolerance"), "program b\n");
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string sig_a = Hit("aten::logdet", "class_split").signature;
  ASSERT_TRUE((*store)->AddHits({{sig_a, 41}, {"never|seen|before|x", 7}}).ok());
  auto entries = (*store)->Load();
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);  // unknown signatures are not invented
  EXPECT_EQ((*entries)[0]["count"], 42);
  EXPECT_EQ((*entries)[1]["count"], 1);
  ExpectConsistent(dir);
}

TEST(FindingsStore, CorruptLineIsReportedAndDoesNotLoseOthers) {
  std::string dir = MakeTempDir();
  auto store = FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  auto a = (*store)->Record(Hit("aten::logdet", "class_split"), "a\n");
  auto b = (*store)->Record(Hit("aten::add.Tensor", "tolerance"), "b\n");
  ASSERT_TRUE(a.ok() && b.ok());
  // Corrupt the index: a torn line between the two entries.
  std::string index = testing::ReadTextFile(dir + "/index.jsonl");
  size_t nl = index.find('\n');
  index.insert(nl + 1, "{\"id\": \"torn\", \"sig\n");
  {
    std::ofstream out(dir + "/index.jsonl", std::ios::binary | std::ios::trunc);
    out << index;
  }
  auto loaded = (*store)->Load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("index.jsonl:2:"));

  // Recording skips the bad line and keeps both good entries.
  auto a2 = (*store)->Record(Hit("aten::logdet", "class_split"), "a\n");
  ASSERT_TRUE(a2.ok()) << a2.status();
  EXPECT_EQ(a2->count, 2);
  auto c = (*store)->Record(Hit("aten::sum", "tolerance"), "c\n");
  ASSERT_TRUE(c.ok()) << c.status();
  loaded = (*store)->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->size(), 3u);
  EXPECT_EQ((*loaded)[0]["count"], 2);
  EXPECT_EQ((*loaded)[1]["id"], b->id);
  EXPECT_EQ((*loaded)[2]["id"], c->id);
  // The bad line is set aside, not destroyed.
  EXPECT_THAT(testing::ReadTextFile(dir + "/index.jsonl.corrupt"), HasSubstr("\"torn\""));
  ExpectConsistent(dir);
}

// A new bucket's line is appended and the others are left byte for byte;
// Signatures() reads every bucket without parsing whole lines, escapes in a
// signature included, and a line a kill cut short is neither listed nor
// allowed to swallow the next bucket's line.
TEST(FindingsStore, NewBucketsAreAppendedAndSignaturesAreReadCheaply) {
  std::string dir = MakeTempDir();
  auto store = FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok());
  FindingHit odd = Hit("aten::add.Tensor", "tolerance");
  odd.signature = "aten::add.Tensor|f32|\"quoted\" \\ and \u00e9";
  ASSERT_TRUE((*store)->Record(Hit("aten::logdet", "class_split"), "a\n").ok());
  ASSERT_TRUE((*store)->Record(odd, "b\n").ok());
  const std::string two = divfuzz::testing::ReadTextFile(dir + "/index.jsonl");
  ASSERT_TRUE((*store)->Record(Hit("aten::sum", "tolerance"), "c\n").ok());
  const std::string three = divfuzz::testing::ReadTextFile(dir + "/index.jsonl");
  EXPECT_EQ(three.substr(0, two.size()), two);

  auto signatures = (*store)->Signatures();
  ASSERT_TRUE(signatures.ok()) << signatures.status();
  EXPECT_EQ(*signatures, (std::set<std::string>{"aten::logdet|f32|class_split", odd.signature,
                                                "aten::sum|f32|tolerance"}));
  auto again = (*store)->Record(odd, "b\n");  // found by the fast path: no second bucket
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->is_new);
  EXPECT_EQ(again->count, 2);

  {  // a kill cut an append short
    std::ofstream out(dir + "/index.jsonl", std::ios::binary | std::ios::app);
    out << "{\"id\":\"torn\",\"signature\":\"aten::torn|f32";
  }
  signatures = (*store)->Signatures();
  ASSERT_TRUE(signatures.ok());
  EXPECT_EQ(signatures->size(), 3u);
  auto d = (*store)->Record(Hit("aten::mean", "tolerance"), "d\n");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->is_new);
  auto loaded = (*store)->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->size(), 4u);
  EXPECT_EQ((*loaded)[1]["signature"], odd.signature);
  EXPECT_EQ((*loaded)[1]["count"], 2);
  EXPECT_EQ((*loaded)[3]["root_op"], "aten::mean");
  EXPECT_THAT(divfuzz::testing::ReadTextFile(dir + "/index.jsonl.corrupt"),
              HasSubstr("aten::torn"));
  ExpectConsistent(dir);
}

TEST(FindingsStore, ConcurrentProcessesLoseNoCounts) {
  std::string dir = MakeTempDir();
  ASSERT_TRUE(FindingsStore::Open(dir).ok());
  constexpr int kProcs = 2;
  constexpr int kHits = 60;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      auto store = FindingsStore::Open(dir);
      if (!store.ok()) ::_exit(10);
      for (int i = 0; i < kHits; ++i) {
        // A shared bucket, and a bucket of this process's own every third hit.
        if (!(*store)->Record(Hit("aten::logdet", "class_split"), "shared\n").ok()) rc = 11;
        if (i % 3 == 0 &&
            !(*store)->Record(Hit("aten::op" + std::to_string(p), "tolerance"), "own\n").ok()) {
          rc = 12;
        }
      }
      ::_exit(rc);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  auto store = FindingsStore::Open(dir);
  auto entries = (*store)->Load();
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 1u + kProcs);
  int64_t total_own = 0;
  for (const auto& e : *entries) {
    if (e["root_op"] == "aten::logdet") {
      EXPECT_EQ(e["count"], kProcs * kHits);
    } else {
      EXPECT_EQ(e["count"], kHits / 3);
      total_own += e["count"].get<int64_t>();
    }
  }
  EXPECT_EQ(total_own, kProcs * (kHits / 3));
  ExpectConsistent(dir);
}

}  // namespace
}  // namespace divfuzz::store
