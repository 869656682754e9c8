// Issue 34 end to end, on the CPU pair with real libtorch: --baseline (known
// bugs do not fail --fail_on, new ones do and are named; the known bugs'
// programs are replayed to tell which are gone), the OSS-Fuzz mode
// (--abort_on_bug), `divfuzz merge` killed with -9, and the per-GPU grouping
// of workers behind one MPS server a GPU.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "fuzz/campaign/gpu_groups.h"
#include "gtest/gtest.h"
#include "store/findings_store.h"
#include "tests/test_util.h"

namespace divfuzz {
namespace {

namespace fs = std::filesystem;

const std::string kTool = std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz";
const std::string kSin = DIVFUZZ_PLANTED_SIN_PLUGIN;
const std::string kExpm1 = DIVFUZZ_PLANTED_EXPM1_PLUGIN;

std::string Unary(const std::string& op) {
  return "divfuzz v1\ninput %x: f32[8] = uniform(seed=3, low=0.5, high=2)\n%y = aten::" + op +
         "(%x)\noutput %y\n";
}

// dir/seeds with a sin and an expm1 program: under the planted plugins both
// diverge on their first run.
std::string DirWithSeeds(const std::string& name) {
  const std::string dir = testing::TempDir(name);
  fs::create_directories(dir + "/seeds");
  testing::WriteTextFile(dir + "/seeds/sin.dfz", Unary("sin"));
  testing::WriteTextFile(dir + "/seeds/expm1.dfz", Unary("expm1"));
  return dir;
}

testing::CommandRun Campaign(const std::string& dir, const std::string& plugins,
                             const std::string& findings, const std::string& flags) {
  return testing::RunShell("cd " + dir + " && " + kTool + " campaign --plugins=" + plugins +
                           " --seconds=4 --repro_seconds=0 --grad_share=0 --seed=1 "
                           "--targets=cpu,cpu-f64 --corpus=" + dir + "/seeds --findings=" +
                           findings + " --work=" + findings + "-work " + flags);
}

std::vector<nlohmann::json> Index(const std::string& findings) {
  auto store = store::FindingsStore::Open(findings);
  EXPECT_TRUE(store.ok());
  auto index = (*store)->Load();
  EXPECT_TRUE(index.ok()) << index.status();
  return index.ok() ? *index : std::vector<nlohmann::json>{};
}

// The bug-tier bucket of `op` in the store, "" when none.
std::string BugBucket(const std::string& findings, const std::string& op) {
  for (const nlohmann::json& e : Index(findings)) {
    if (e.value("root_op", "") == "aten::" + op && e.value("tier", "") == "bug") {
      return e.value("id", "");
    }
  }
  return "";
}

std::string FailLine(const std::string& out) {
  std::smatch m;
  return std::regex_search(out, m, std::regex("fail_on=bug: [^\n]*")) ? m.str() : "";
}

TEST(BaselineCampaign, KnownBugsPassFailOnNewOnesFailAndAreNamed) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = DirWithSeeds("baseline-campaign");
  // 1. The planted sin bug, found; --fail_on=bug fails on it.
  testing::CommandRun first = Campaign(dir, kSin, dir + "/first", "--fail_on=bug");
  const std::string sin = BugBucket(dir + "/first", "sin");
  ASSERT_FALSE(sin.empty()) << first.output;
  EXPECT_EQ(first.exit_code, 1) << first.output;
  EXPECT_NE(FailLine(first.output).find(sin), std::string::npos) << first.output;

  // 2. The same bug against the first store as --baseline: known, exit 0 --
  // unless the fuzzing found a real new bug besides, which is then named.
  testing::CommandRun second =
      Campaign(dir, kSin, dir + "/second", "--fail_on=bug --baseline=" + dir + "/first");
  ASSERT_EQ(BugBucket(dir + "/second", "sin"), sin) << second.output;
  int new_bugs = 0;
  for (const nlohmann::json& e : Index(dir + "/second")) {
    EXPECT_EQ(e.value("baseline", ""), e.value("id", "") == sin ? "known" : e.value("baseline", ""));
    if (e.value("tier", "") == "bug" && e.value("baseline", "") == "new") ++new_bugs;
  }
  EXPECT_EQ(second.exit_code, new_bugs > 0 ? 1 : 0) << second.output;
  EXPECT_EQ(FailLine(second.output).find(sin), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("known bucket(s) of --baseline hit too"), std::string::npos)
      << second.output;
  EXPECT_TRUE(std::regex_search(second.output, std::regex(sin + " +bug-\\S+ .* known\n")))
      << second.output;
  // The known bug's program was replayed (under the plugin): not gone.
  EXPECT_NE(second.output.find("  " + sin + ": reproduces"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("known bugs replayed: "), std::string::npos) << second.output;
  EXPECT_TRUE(fs::exists(dir + "/second-work/baseline_check.json"));

  // 3. A second planted bug: exit 1, naming it and not the known one.
  testing::CommandRun third = Campaign(dir, kSin + "," + kExpm1, dir + "/third",
                                       "--fail_on=bug --baseline=" + dir + "/first/index.jsonl");
  const std::string expm1 = BugBucket(dir + "/third", "expm1");
  ASSERT_FALSE(expm1.empty()) << third.output;
  EXPECT_EQ(third.exit_code, 1) << third.output;
  EXPECT_NE(FailLine(third.output).find(expm1), std::string::npos) << third.output;
  EXPECT_EQ(FailLine(third.output).find(sin), std::string::npos) << third.output;
}

TEST(BaselineCampaign, ABadIdFileStopsTheCampaignWithFileAndLine) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = DirWithSeeds("baseline-badfile");
  testing::WriteTextFile(dir + "/known.txt", "# ok\nsin-f32-tolerance-1\nbad/id  # pytorch#1\n");
  testing::CommandRun run = Campaign(dir, kSin, dir + "/f", "--baseline=" + dir + "/known.txt");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find(dir + "/known.txt:3: expected a bucket id"), std::string::npos)
      << run.output;
}

TEST(BaselineReport, ReplaysKnownBugsAndSaysWhichAreGone) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = DirWithSeeds("baseline-gone");
  // A campaign folder to report on (its own findings do not matter here).
  ASSERT_EQ(Campaign(dir, kSin, dir + "/f", "").exit_code, 0);
  const std::string sin = BugBucket(dir + "/f", "sin");
  ASSERT_FALSE(sin.empty());
  testing::WriteTextFile(dir + "/known.txt",
                         sin + " seeds/sin.dfz  # pytorch#1 (planted)\nexpm1-f32-tolerance-0 "
                               "seeds/expm1.dfz\n");
  const std::string report = kTool + " report " + dir + "/f-work --findings=" + dir +
                             "/f --targets=cpu,cpu-f64 --baseline=" + dir + "/known.txt";
  // Under the plugin sin still diverges; expm1 (a real kernel) does not: gone.
  testing::CommandRun with = testing::RunShell("DIVFUZZ_PLUGINS=" + kSin + " " + report);
  EXPECT_EQ(with.exit_code, 0) << with.output;
  EXPECT_NE(with.output.find("known bugs replayed: 2 (1 reproduce, 1 gone, 0 not checked)"),
            std::string::npos)
      << with.output;
  EXPECT_NE(with.output.find("gone (fixed upstream?): expm1-f32-tolerance-0"), std::string::npos)
      << with.output;
  EXPECT_NE(with.output.find(sin + ": reproduces"), std::string::npos) << with.output;
  std::ifstream page(dir + "/f-work/report.html");
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("gone (fixed upstream?)"), std::string::npos);
  EXPECT_NE(html.find("<th>baseline</th>"), std::string::npos);
  EXPECT_NE(html.find("pytorch#1 (planted)"), std::string::npos);
  // Without the plugin the planted sin bug is gone too.
  testing::CommandRun without = testing::RunShell(report);
  EXPECT_NE(without.output.find("(0 reproduce, 2 gone"), std::string::npos) << without.output;
}

TEST(OssFuzzMode, ABugAbortsNamingItsBucketUnlessTheBaselineKnowsIt) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = DirWithSeeds("baseline-oss");
  const std::string run = "cd " + dir + " && DIVFUZZ_TARGETS=cpu,cpu-f64 DIVFUZZ_ABORT_ON_BUG=1 " +
                          "DIVFUZZ_PLUGINS=" + kSin + " " + kTool + " fuzz " + dir +
                          "/seeds/sin.dfz";
  testing::CommandRun aborted = testing::RunShell(run);
  EXPECT_NE(aborted.exit_code, 0) << aborted.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(aborted.output, m,
                                std::regex("divfuzz: bug-tier divergence in bucket (sin-f32-[A-Za-z0-9_-]+)")))
      << aborted.output;
  EXPECT_NE(aborted.output.find("Assertion `no bug-tier divergence: " + m[1].str() + "' failed."),
            std::string::npos);
  // Again (a ClusterFuzz reproduction, the store now holding it): it aborts again.
  EXPECT_NE(testing::RunShell(run).exit_code, 0);
  testing::WriteTextFile(dir + "/known.txt", m[1].str() + "\n");
  testing::CommandRun known =
      testing::RunShell("export DIVFUZZ_BASELINE=" + dir + "/known.txt && " + run);
  EXPECT_EQ(known.exit_code, 0) << known.output;
}

// ClusterFuzz runs a target with no environment of ours: <binary>.env beside
// it sets the mode, the pair and a baseline relative to the binary.
TEST(OssFuzzMode, TheBinarysEnvFileTurnsItOnWithItsBaseline) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = DirWithSeeds("baseline-oss-env");
  fs::create_directories(dir + "/out");
  fs::create_symlink(kTool, dir + "/out/graph_fuzzer");
  testing::WriteTextFile(dir + "/out/graph_fuzzer.env",
                         "DIVFUZZ_TARGETS=cpu,cpu-f64\nDIVFUZZ_ABORT_ON_BUG=1\n"
                         "DIVFUZZ_BASELINE=graph_fuzzer.baseline\nNOT_OURS=1\n");
  testing::WriteTextFile(dir + "/out/graph_fuzzer.baseline", "# none known\n");
  const std::string run = "cd " + dir + " && DIVFUZZ_PLUGINS=" + kSin + " out/graph_fuzzer fuzz " +
                          dir + "/seeds/sin.dfz";
  testing::CommandRun aborted = testing::RunShell(run);
  EXPECT_NE(aborted.exit_code, 0) << aborted.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(aborted.output, m,
                                std::regex("bug-tier divergence in bucket (sin-f32-[A-Za-z0-9_-]+)")))
      << aborted.output;
  testing::WriteTextFile(dir + "/out/graph_fuzzer.baseline", m[1].str() + "  # pytorch#1\n");
  testing::CommandRun known = testing::RunShell(run);
  EXPECT_EQ(known.exit_code, 0) << known.output;
  // The environment wins over the file.
  EXPECT_EQ(testing::RunShell("export DIVFUZZ_ABORT_ON_BUG=0 && " + run).exit_code, 0);
}

// Every entry of the merged store: id -> count, first_seen, program text.
std::map<std::string, std::string> Normalized(const std::string& findings) {
  std::map<std::string, std::string> out;
  for (const nlohmann::json& e : Index(findings)) {
    std::ifstream program(findings + "/" + e.value("program", ""));
    std::string text((std::istreambuf_iterator<char>(program)), std::istreambuf_iterator<char>());
    out[e.value("id", "")] = std::to_string(e.value("count", 0)) + " " +
                             e.value("first_seen", "") + " " + e.value("group", "") + " " + text;
  }
  return out;
}

TEST(MergeCommand, KilledWithSignal9AtAnyPointLosesNothing) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("merge-kill");
  for (const char* name : {"a", "b"}) {
    auto s = store::FindingsStore::Open(dir + "/" + name);
    ASSERT_TRUE(s.ok());
    for (int i = 0; i < 150; ++i) {
      store::FindingHit h;
      h.root_op = "aten::op" + std::to_string(i % 100);
      h.dtype = std::string(name) == "a" ? "f32" : (i < 100 ? "f32" : "f16");
      h.divergence_class = "tolerance";
      h.signature = h.root_op + "|" + h.dtype + "|tolerance";
      h.tier = "bug";
      h.severity = "bug-tolerance";
      ASSERT_TRUE((*s)->Record(h, "divfuzz v1\n# " + std::string(name) + "\n").ok());
    }
  }
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(testing::RunShell(kTool + " merge " + dir + "/ref " + dir + "/a " + dir + "/b").exit_code,
            0);
  const auto took = std::chrono::steady_clock::now() - start;
  const std::map<std::string, std::string> want = Normalized(dir + "/ref");
  ASSERT_EQ(want.size(), 150u);
  int killed = 0;
  // Kills spread over the run (most of its start is loading libtorch); the
  // early ones make sure some kill lands when a loaded machine made the
  // reference merge slow and the later ones fast (a fresh clone's ctest -j3
  // killed none of 0.75-0.99).
  for (double at : {0.3, 0.5, 0.75, 0.85, 0.9, 0.95, 0.99}) {
    const int delay_ms = static_cast<int>(
        at * std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
    const std::string dest = dir + "/dest-" + std::to_string(delay_ms);
    const pid_t pid = fork();
    if (pid == 0) {
      execl(kTool.c_str(), kTool.c_str(), "merge", dest.c_str(), (dir + "/a").c_str(),
            (dir + "/b").c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    killed += WIFSIGNALED(status);
    // Whatever the kill left is a valid store: the index parses whole.
    if (fs::exists(dest + "/index.jsonl")) {
      for (const nlohmann::json& e : Index(dest)) EXPECT_FALSE(e.value("id", "").empty());
    }
    // Running it again finishes it, as if it had never been killed.
    testing::CommandRun again =
        testing::RunShell(kTool + " merge " + dest + " " + dir + "/a " + dir + "/b");
    ASSERT_EQ(again.exit_code, 0) << again.output;
    EXPECT_EQ(Normalized(dest), want) << "killed after " << delay_ms << " ms";
  }
  EXPECT_GT(killed, 0);
}

TEST(MergeCommand, RefusesMixedSourcesAndMergesCorpora) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = DirWithSeeds("merge-corpus");
  auto s = store::FindingsStore::Open(dir + "/store");
  ASSERT_TRUE(s.ok());
  testing::WriteTextFile(dir + "/store/index.jsonl", "");
  testing::CommandRun mixed =
      testing::RunShell(kTool + " merge " + dir + "/out " + dir + "/store " + dir + "/seeds");
  EXPECT_EQ(mixed.exit_code, 2) << mixed.output;
  EXPECT_NE(mixed.output.find("mix findings stores"), std::string::npos) << mixed.output;
  // The seeds' inputs that add features are kept; merging them again adds none.
  testing::CommandRun merged = testing::RunShell(kTool + " merge --targets=cpu,cpu-f64 " + dir +
                                                 "/corpus " + dir + "/seeds");
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  std::smatch m;
  const std::regex counts(": ([0-9]+) input\\(s\\) that add coverage features, ([0-9]+) in all");
  ASSERT_TRUE(std::regex_search(merged.output, m, counts)) << merged.output;
  const int kept = std::stoi(m[1].str());
  EXPECT_GE(kept, 1);
  EXPECT_LE(kept, 2);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir + "/corpus"), fs::directory_iterator()), kept);
  merged = testing::RunShell(kTool + " merge --targets=cpu,cpu-f64 " + dir + "/corpus " + dir +
                             "/seeds");
  ASSERT_TRUE(std::regex_search(merged.output, m, counts)) << merged.output;
  EXPECT_EQ(m[1].str(), "0");
  EXPECT_EQ(std::stoi(m[2].str()), kept);
  EXPECT_FALSE(fs::exists(dir + "/corpus.merging"));
}

TEST(GpuGroups, OneGroupAGpuAndAFaultRestartsOnlyItsOwnWorkers) {
  // --workers=3 on GPUs 0 and 2 (CUDA_VISIBLE_DEVICES=0,2), slots as GpuSlots lays them out.
  const std::vector<std::string> slots = {"0", "0", "0", "2", "2", "2"};
  const std::vector<fuzz::GpuGroup> groups = fuzz::GroupSlotsByGpu(slots);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].gpu, "0");
  EXPECT_EQ(groups[0].slots, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(groups[1].gpu, "2");
  EXPECT_EQ(groups[1].slots, (std::vector<size_t>{3, 4, 5}));
  EXPECT_EQ(fuzz::GroupOfSlot(groups, 7), (std::vector<int>{0, 0, 0, 1, 1, 1, -1}));
  // A fault on GPU 2's server: its live workers only.
  const std::vector<bool> alive = {true, true, true, true, false, true};
  EXPECT_EQ(fuzz::SlotsToRestart(groups, 1, alive), (std::vector<size_t>{3, 5}));
  EXPECT_EQ(fuzz::SlotsToRestart(groups, 0, alive), (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(fuzz::SlotsToRestart(groups, 5, alive).empty());
  // Interleaved slots (a hand-made CUDA_VISIBLE_DEVICES) group the same way.
  EXPECT_EQ(fuzz::GroupSlotsByGpu({"1", "0", "1"})[0].slots, (std::vector<size_t>{0, 2}));
  EXPECT_TRUE(fuzz::GroupSlotsByGpu({}).empty());
}

TEST(GpuGroups, WorkersOfAServerForOneGpuNameNoGpu) {
  // Slurm's --gres=gpu:1 on GPU 1: the server sees GPU 1 as its device 0, and a worker
  // asking for CUDA_VISIBLE_DEVICES=1 found no device (every start faulted, the campaign
  // fell back to time slicing: a 4-GPU host with a campaign a GPU ran at a third of the rate).
  const std::vector<fuzz::GpuGroup> one = fuzz::GroupSlotsByGpu({"1", "1", "1"});
  EXPECT_TRUE(fuzz::MpsClientsNameNoGpu(one.size(), /*server_per_gpu=*/false));
  EXPECT_TRUE(fuzz::MpsClientsNameNoGpu(2, /*server_per_gpu=*/true));
  // The user's own server over several GPUs sees them all: host indices hold.
  EXPECT_FALSE(fuzz::MpsClientsNameNoGpu(2, /*server_per_gpu=*/false));
}

}  // namespace
}  // namespace divfuzz
