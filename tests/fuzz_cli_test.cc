// The divfuzz tool as a new user meets it (issue 20): help per command (and
// docs/CLI.md, the same help as Markdown), exit codes (0 clean, 1 findings at
// or above --fail_on, 2 could not run), the campaign's checks of its work folder and findings store, a worker that
// cannot record findings, --resume's rules, targets this machine cannot run,
// and corrupt index lines said on stderr.
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "exec/executor.h"
#include "gtest/gtest.h"
#include "store/findings_store.h"
#include "tests/test_util.h"

namespace divfuzz {
namespace {

namespace fs = std::filesystem;

const std::string kTool = std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz";
const std::string kSeeds = std::string(DIVFUZZ_SOURCE_DIR) + "/corpus/seed";

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A short CPU campaign in `dir` (findings/ and campaign/ there) with `flags`.
testing::CommandRun Campaign(const std::string& dir, const std::string& flags) {
  return testing::RunShell("cd " + dir + " && " + kTool +
                           " campaign --targets=cpu,cpu-f64 --repro_seconds=0 --corpus=" + kSeeds +
                           " " + flags);
}

TEST(Help, EveryFormPrintsTheCommandsOwnFlagsAndExitsZero) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  for (const char* form : {" --help", " help", " -h"}) {
    const testing::CommandRun run = testing::RunShell(kTool + form);
    EXPECT_EQ(run.exit_code, 0) << form << "\n" << run.output;
    EXPECT_TRUE(Contains(run.output, "divfuzz campaign [flags]")) << run.output;
    EXPECT_TRUE(Contains(run.output, "divfuzz replay FILE.dfz...")) << run.output;
    EXPECT_FALSE(Contains(run.output, "No flags matched")) << run.output;
  }
  for (const char* form : {" campaign --help", " help campaign", " campaign --seconds=5 -help"}) {
    const testing::CommandRun run = testing::RunShell(kTool + form);
    EXPECT_EQ(run.exit_code, 0) << form << "\n" << run.output;
    EXPECT_TRUE(Contains(run.output, "Usage: divfuzz campaign [flags]")) << run.output;
    EXPECT_TRUE(Contains(run.output, "--fail_on (default: none)")) << run.output;
    EXPECT_TRUE(Contains(run.output, "--workers (default: 1)")) << run.output;
    EXPECT_TRUE(Contains(run.output, "(1 to 256)")) << run.output;      // the range
    EXPECT_FALSE(Contains(run.output, "--max_seconds")) << run.output;  // minimize's
  }
  const testing::CommandRun replay = testing::RunShell(kTool + " replay --help");
  EXPECT_EQ(replay.exit_code, 0) << replay.output;
  EXPECT_TRUE(Contains(replay.output, "--targets")) << replay.output;
  EXPECT_FALSE(Contains(replay.output, "--workers")) << replay.output;
  const testing::CommandRun unknown = testing::RunShell(kTool + " help nosuch");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_TRUE(Contains(unknown.output, "unknown command 'nosuch'")) << unknown.output;
}

// docs/CLI.md is what `divfuzz help --markdown` prints: the reference and the
// help come from the same two tables, so an edit to either fails here until
// the document is regenerated.
TEST(Help, DocsCliMdIsWhatHelpMarkdownPrints) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const testing::CommandRun run = testing::RunShell(kTool + " help --markdown 2>/dev/null");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(Contains(run.output, "\n## campaign\n")) << run.output;
  EXPECT_TRUE(Contains(run.output, "| `--fail_on` | `none` |")) << run.output;
  const std::string path = std::string(DIVFUZZ_SOURCE_DIR) + "/docs/CLI.md";
  const std::string doc = testing::ReadTextFile(path);
  if (doc == run.output) return;
  // The first line that differs, not two whole documents.
  size_t at = 0, line = 1, line_start = 0;
  while (at < doc.size() && at < run.output.size() && doc[at] == run.output[at]) {
    if (doc[at++] == '\n') {
      ++line;
      line_start = at;
    }
  }
  auto line_of = [line_start](const std::string& text) {
    return line_start >= text.size() ? std::string("(end of file)")
                                     : text.substr(line_start, text.find('\n', line_start) -
                                                                   line_start);
  };
  ADD_FAILURE() << path << " differs from `divfuzz help --markdown` at line " << line
                << "\n  docs/CLI.md:     " << line_of(doc)
                << "\n  help --markdown: " << line_of(run.output)
                << "\nRegenerate it: scripts/gen_cli_md.sh " << DIVFUZZ_BINARY_DIR
                << "  (that is, divfuzz help --markdown > docs/CLI.md)";
}

// (repro is the exception: it writes a GPU finding's repros unminimized and
// exits 1, "did not reproduce here"; tests/minimize_repro_test.cc.)
TEST(Targets, ACudaTargetWithoutAGpuIsAnErrorInEveryCommandNotADivergence) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  if (exec::CudaAvailable()) GTEST_SKIP() << "this machine has a GPU";
  const std::string dir = testing::TempDir("cli-cuda");
  testing::WriteTextFile(
      dir + "/p.dfz", "divfuzz v1\ninput %a: f32[2] = fill(1.0)\n%b = aten::neg(%a)\noutput %b\n");
  for (const std::string& command :
       {"replay --targets=cuda,cpu " + dir + "/p.dfz",
        "minimize --targets=cpu,cuda " + dir + "/p.dfz",

        "locate --targets=cuda,cpu " + dir + "/p.dfz",
        "campaign --seconds=5 --targets=cpu,cuda --work=" + dir + "/w --findings=" + dir + "/f"}) {
    const testing::CommandRun run = testing::RunShell(kTool + " " + command);
    EXPECT_EQ(run.exit_code, 2) << command << "\n" << run.output;
    EXPECT_TRUE(Contains(run.output, "target cuda cannot run on this machine")) << run.output;
    EXPECT_FALSE(Contains(run.output, "error_split")) << run.output;
  }
}

// `divfuzz locate` names each autograd backward node inside a gradient
// statement before it runs, so a crash there is filed under the backward
// kernel (session 38's CPU group_norm null-dX segfault, from torch 2.11's own
// kernel: a channels_last input that does not require grad), not
// autograd::grad.
TEST(Locate, ACrashInsideAGradientStatementNamesItsBackwardNode) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("cli-locate-backward");
  testing::WriteTextFile(dir + "/gn.dfz", R"(divfuzz v1
input %a: f32[] = fill(0.0)
input %g: f16[2,2,2,2] layout=channels_last = fill(0.0)
input %gw: f16[2] = fill(0.0)
input %gb: f16[2] = fill(0.0)
input %ct8: f32[2,2,2,2] = fill(1.0)
%yg = aten::group_norm(%g, 2, %gw, %gb)
%g2, %g8 = autograd::grad([%yg], [%a, %gb], grad_outputs=[%ct8])
output %g2
)");
  const testing::CommandRun run =
      testing::RunShell(kTool + " locate --targets=cpu,cpu-f64 " + dir + "/gn.dfz");
  EXPECT_NE(run.exit_code, 0) << run.output;  // the kernel's segfault
  const size_t last = run.output.rfind("BACKWARD cpu 1 NativeGroupNormBackward0");
  ASSERT_NE(last, std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("RUN ", last), std::string::npos) << run.output;  // it died there
}

TEST(Preflight, AStoreOrWorkFolderThatCannotBeUsedStopsTheCampaignBeforeItStarts) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("cli-preflight");
  testing::WriteTextFile(dir + "/file", "not a folder\n");
  testing::CommandRun run = Campaign(dir, "--seconds=30 --findings=" + dir + "/file");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(Contains(run.output, "--findings=" + dir + "/file: " + dir + "/file is not a folder"))
      << run.output;
  EXPECT_FALSE(Contains(run.output, "died")) << run.output;  // no worker was started
  run = Campaign(dir, "--seconds=30 --work=" + dir + "/file");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(Contains(run.output, "--work=" + dir + "/file: " + dir + "/file is not a folder"))
      << run.output;
  // A store whose lock cannot be taken (as on a read-only mount, where it
  // cannot be created; root may write anywhere, so the lock is a folder).
  fs::create_directories(dir + "/locked/.lock");
  run = Campaign(dir, "--seconds=30 --findings=" + dir + "/locked");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(Contains(run.output, "--findings=" + dir + "/locked: cannot open the lock file " +
                                       dir + "/locked/.lock"))
      << run.output;
}

TEST(Preflight, AWorkerThatCannotRecordAFindingStopsTheCampaignWithItsMessage) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("cli-store-lost");
  // The store breaks once the workers fuzz: its lock turns into a folder.
  // The worker may re-create the lock file between rm and mkdir, so retry.
  const testing::CommandRun run = testing::RunShell(
      "cd " + dir + " && (" + kTool + " campaign --seconds=60 --targets=cpu,cpu-f64 " +
      "--repro_seconds=0 --corpus=" + kSeeds + " >log 2>&1; echo $? >rc) & cd " + dir +
      " && for i in $(seq 150); do [ -e campaign/logs/stats-0-0.json ] && break; sleep 0.2; "
      "done; for j in $(seq 100); do [ -d findings/.lock ] && break; rm -f findings/.lock; "
      "mkdir findings/.lock; done; "
      "wait; cat log; echo EXIT=$(cat rc)");
  EXPECT_TRUE(Contains(run.output, "EXIT=2")) << run.output;
  EXPECT_TRUE(Contains(
      run.output,
      "divfuzz campaign: stopping: worker 0 cannot record a finding in " + dir + "/findings"))
      << run.output;
  EXPECT_TRUE(Contains(run.output, "cannot open lock file")) << run.output;
  EXPECT_FALSE(Contains(run.output, "starting a new one")) << run.output;
}

TEST(Preflight, ACampaignWhoseWorkersCannotStartExitsTwo) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("cli-no-start");
  // A worker cannot map its in-flight record onto a folder: it exits 2.
  fs::create_directories(dir + "/campaign/logs/inflight-0");
  const testing::CommandRun run = Campaign(dir, "--seconds=4");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(Contains(run.output, "worker 0 died: exit code 2: it could not start")) << run.output;
  EXPECT_TRUE(Contains(run.output, "no worker could start (every one exited 2")) << run.output;
}

// A batch of programs with one malformed file among them: that file is
// reported by name and skipped, the others still run and print their
// verdicts, and the exit code says a file could not be run.
TEST(Replay, AMalformedFileInABatchIsReportedAndTheOthersStillRun) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("replay-batch");
  const std::string good = R"(divfuzz v1
input %x: f32[3] = values(0.5, 1.0, 2.0)
%y = aten::sin(%x)
output %y
)";
  std::ofstream(dir + "/a.dfz") << good;
  std::ofstream(dir + "/bad.dfz") << "divfuzz v1\n%y = aten::sin(%nothing)\noutput %y\n";
  std::ofstream(dir + "/c.dfz") << good;
  const testing::CommandRun run = testing::RunShell(kTool + " replay --targets=cpu,cpu-f64 " +
                                                   dir + "/a.dfz " + dir + "/bad.dfz " + dir +
                                                   "/c.dfz");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(Contains(run.output, dir + "/bad.dfz:")) << run.output;
  EXPECT_TRUE(Contains(run.output, "== " + dir + "/c.dfz")) << run.output;
  EXPECT_TRUE(Contains(run.output, "1 of 3 file(s) could not be run")) << run.output;
}

// A CUDA fault surfaces at the next node that synchronizes and leaves the
// process's context unusable: replay names the node that launched it by
// replaying the file alone with CUDA_LAUNCH_BLOCKING=1, and runs the files
// after it in a fresh process (a deliberately faulty plugin mimics both on
// the CPU: rad2deg poisons, exp2 then raises).
TEST(Replay, ACudaFaultIsReplayedWithLaunchBlockingAndTheRestInAFreshProcess) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("replay-fault");
  std::ofstream(dir + "/fault.dfz") << R"(divfuzz v1
input %x: f32[3] = values(0.5, 1.0, 2.0)
%r = aten::rad2deg(%x)
%e = aten::exp2(%r)
output %e
)";
  const std::string after = "divfuzz v1\ninput %x: f32[3] = values(0.5, 1.0, 2.0)\n"
                            "%e = aten::exp2(%x)\noutput %e\n";
  std::ofstream(dir + "/after.dfz") << after;
  std::ofstream(dir + "/last.dfz") << after;
  const std::string replay = kTool + " --plugins=" + DIVFUZZ_FAULTY_ASYNC_FAULT_PLUGIN +
                             " replay --targets=cpu,cpu-f64 ";
  // Without it, the fault shows at exp2 and poisons the files after it.
  testing::CommandRun run = testing::RunShell("env -u CUDA_LAUNCH_BLOCKING " + replay + dir +
                                              "/fault.dfz " + dir + "/after.dfz " + dir +
                                              "/last.dfz 2>&1");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(Contains(run.output, "== " + dir + "/fault.dfz: a CUDA fault; the context is lost, "
                                   "so it is replayed alone with CUDA_LAUNCH_BLOCKING=1"))
      << run.output;
  EXPECT_TRUE(Contains(run.output, "error_split at node 0 (%r = aten::rad2deg, f32) [root]"))
      << run.output;
  EXPECT_FALSE(Contains(run.output, "(%e = aten::exp2")) << run.output;
  EXPECT_TRUE(Contains(run.output, "raised with CUDA_LAUNCH_BLOCKING=1 and so at the node that "
                                   "launched it"))
      << run.output;
  // Raised at its launch, where the other side ran the node: that side's
  // crash, as a campaign files it, not an undecided split.
  EXPECT_TRUE(Contains(run.output, "tier: bug, wrong side: cpu\n")) << run.output;
  EXPECT_TRUE(Contains(run.output, "the 2 file(s) after it run in a fresh process")) << run.output;
  for (const char* name : {"/after.dfz", "/last.dfz"}) {
    const size_t at = run.output.find("== " + dir + name + " (cpu vs cpu-f64)");
    ASSERT_NE(at, std::string::npos) << run.output;
    EXPECT_EQ(run.output.find("verdict: ", at), run.output.find("verdict: agree", at))
        << run.output;
  }
}

// A backward kernel's fault inside a gradient statement (session 47's
// bb491aab: CUDA's embedding_dense_backward on a zero-width weight, a crash
// on CUDA in the campaign and an undecided error split in replay): replayed
// with CUDA_LAUNCH_BLOCKING=1, it is the statement's bug on the faulting side.
TEST(Replay, ACudaFaultInABackwardKernelIsABugOfItsSide) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("replay-backward-fault");
  std::ofstream(dir + "/fault.dfz") << R"(divfuzz v1
input %w: f32[7,3] = normal(seed=1)
input %i: i64[4] = values(0, 2, 2, 6)
input %v: f32[4,3] = fill(1.0)
%e = aten::embedding(%w, %i)
%g = autograd::grad([%e], [%w], grad_outputs=[%v])
%q = aten::exp2(%g)
output %q
)";
  // The fault surfaces at exp2, the next node; replayed alone with
  // CUDA_LAUNCH_BLOCKING=1, it raises inside the statement.
  const testing::CommandRun run = testing::RunShell(
      "env -u CUDA_LAUNCH_BLOCKING " + kTool + " --plugins=" + DIVFUZZ_FAULTY_ASYNC_FAULT_PLUGIN +
      " replay --targets=cpu,cpu-f64 " + dir + "/fault.dfz 2>&1");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(Contains(run.output, "replayed alone with CUDA_LAUNCH_BLOCKING=1")) << run.output;
  EXPECT_TRUE(Contains(run.output, "(%g = autograd::grad")) << run.output;
  EXPECT_TRUE(Contains(run.output, "tier: bug, wrong side: cpu\n")) << run.output;
  EXPECT_TRUE(Contains(run.output, "a crash of this node, as a campaign files it")) << run.output;
}

// A file whose replay segfaults (the faulty plugin's expm1, as libtorch's CPU
// group_norm backward did on the H200 in session 42) is a finding, and the
// files after it still run, in a fresh process.
TEST(Replay, AFileThatCrashesTheReplayIsReportedAndTheRestStillRun) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("replay-crash");
  const std::string ok = "divfuzz v1\ninput %x: f32[3] = values(0.5, 1.0, 2.0)\n"
                         "%e = aten::exp(%x)\noutput %e\n";
  std::ofstream(dir + "/first.dfz") << ok;
  std::ofstream(dir + "/crash.dfz") << "divfuzz v1\ninput %x: f32[3] = values(0.5, 1.0, 2.0)\n"
                                       "%e = aten::expm1(%x)\noutput %e\n";
  std::ofstream(dir + "/after.dfz") << ok;
  const testing::CommandRun run = testing::RunShell(
      kTool + " --plugins=" + DIVFUZZ_FAULTY_OPS_PLUGIN + " replay --targets=cpu,cpu-f64 " + dir +
      "/first.dfz " + dir + "/crash.dfz " + dir + "/after.dfz 2>&1");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(Contains(run.output, "divfuzz replay: the replay of " + dir +
                                       "/crash.dfz died of signal 11 (a crash is a finding"))
      << run.output;
  EXPECT_TRUE(Contains(run.output, "the 1 file(s) after it run in a fresh process")) << run.output;
  for (const char* name : {"/first.dfz", "/after.dfz"}) {
    const size_t at = run.output.find("== " + dir + name + " (cpu vs cpu-f64)");
    ASSERT_NE(at, std::string::npos) << name << "\n" << run.output;
    EXPECT_NE(run.output.find("verdict: agree", at), std::string::npos) << run.output;
  }
}

// A file whose replay hangs (the faulty plugin's exp2, as the CPU's polygamma
// at x = -7e14 held a batch for over ten minutes in session 46) is stopped at
// --timeout and reported as a finding; the files after it still run. Without
// --timeout nothing is stopped; 0 is refused.
TEST(Replay, AFileThatHangsPastTheTimeoutIsReportedAndTheRestStillRun) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("replay-hang");
  std::ofstream(dir + "/hang.dfz") << "divfuzz v1\ninput %x: f32[3] = fill(1.0)\n"
                                      "%e = aten::exp2(%x)\noutput %e\n";
  std::ofstream(dir + "/after.dfz") << "divfuzz v1\ninput %x: f32[3] = values(0.5, 1.0, 2.0)\n"
                                       "%e = aten::exp(%x)\noutput %e\n";
  const std::string replay = kTool + " --plugins=" + DIVFUZZ_FAULTY_OPS_PLUGIN +
                             " replay --targets=cpu,cpu-f64 ";
  const testing::CommandRun run =
      testing::RunShell(replay + "--timeout=2 " + dir + "/hang.dfz " + dir + "/after.dfz 2>&1");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(Contains(run.output, "divfuzz replay: the replay of " + dir +
                                       "/hang.dfz ran past --timeout=2 s and was stopped (a hang "
                                       "is a finding"))
      << run.output;
  const size_t at = run.output.find("== " + dir + "/after.dfz (cpu vs cpu-f64)");
  ASSERT_NE(at, std::string::npos) << run.output;
  EXPECT_NE(run.output.find("verdict: agree", at), std::string::npos) << run.output;
  const testing::CommandRun zero = testing::RunShell(replay + "--timeout=0 " + dir + "/after.dfz 2>&1");
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_TRUE(Contains(zero.output, "--timeout must be 1 or more seconds, got 0")) << zero.output;
}

TEST(GradientSeeds, EachBackwardKernelGetsProgramsThatDifferentiateItsOp) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("gradient-seeds");
  const testing::CommandRun run = testing::RunShell(
      kTool + " seeds --gradients --only=aten::grid_sampler_2d --out=" + dir + " 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(Contains(run.output, "backward kernels from 1 ops in " + dir)) << run.output;
  // The progress file goes once the run is through: the folder is a corpus.
  EXPECT_FALSE(fs::exists(dir + "/.seeds-gradients.json"));
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().string());
  ASSERT_GE(files.size(), 1u);
  ASSERT_LE(files.size(), 2u);  // --per_family=2: one per dtype
  std::string all;
  for (const std::string& f : files) {
    EXPECT_TRUE(Contains(f, "/GridSampler2DBackward0-")) << f;
    std::ifstream in(f);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(Contains(text, "aten::grid_sampler_2d(")) << text;
    EXPECT_TRUE(Contains(text, "autograd::grad(")) << text;
    all += " " + f;
  }
  // Each runs forward and backward on both CPU targets.
  const testing::CommandRun replay =
      testing::RunShell(kTool + " replay --targets=cpu,cpu-f64" + all + " 2>&1");
  for (const std::string& f : files) {
    const size_t at = replay.output.find("== " + f + " (cpu vs cpu-f64)");
    ASSERT_NE(at, std::string::npos) << replay.output;
    EXPECT_NE(replay.output.find("verdict: ", at), std::string::npos) << replay.output;
  }
  EXPECT_FALSE(Contains(replay.output, "raised")) << replay.output;
  // An --only that matches no differentiable op is an error, not an empty corpus.
  const testing::CommandRun none = testing::RunShell(
      kTool + " seeds --gradients --only=no_such_op --out=" + dir + "-none 2>&1");
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_TRUE(Contains(none.output, "no differentiable catalogue op matches --only=no_such_op"))
      << none.output;
}

TEST(GradientSeeds, AnOpThatKillsTheProcessIsNamedAndTheRestGoOn) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("gradient-seeds-crash");
  // The faulty plugin's expm1 segfaults and exp2 hangs in float32; exp
  // (matched by --only=aten::exp, as both are) runs as it should.
  const testing::CommandRun run = testing::RunShell(
      kTool + " --plugins=" + DIVFUZZ_FAULTY_OPS_PLUGIN +
      " seeds --gradients --only=aten::exp --probe_timeout=3 --out=" + dir + " 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(Contains(run.output, "trying aten::expm1 killed the process (signal 11)"))
      << run.output;
  EXPECT_TRUE(Contains(run.output, "trying aten::exp2 hung (over --probe_timeout=3 s)"))
      << run.output;
  EXPECT_TRUE(Contains(run.output, "2 ops crashed or hung: aten::exp2 aten::expm1"))
      << run.output;
  bool exp_seed = false;
  for (const auto& e : fs::directory_iterator(dir)) {
    exp_seed = exp_seed || Contains(e.path().filename().string(), "ExpBackward0-");
  }
  EXPECT_TRUE(exp_seed) << run.output;
}

TEST(FailOnAndResume, ExitCodesFollowFailOnAndResumeKeepsItsSettingsAndExtendsTheBudget) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("cli-failon");
  testing::CommandRun run = Campaign(dir, "--seconds=4 --fail_on=bogus");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(Contains(run.output,
                       "--fail_on=bogus: expected crash, hang, bug, divergence, any "
                       "or none"))
      << run.output;
  // The seed corpus diverges between float32 and float64, but crashes nothing
  // (without the isolated lane: it runs declined programs, and the CPU's
  // linalg_eigvals segfaults on some, a crash bucket when it gets there in 4 s).
  run = Campaign(dir, "--seconds=4 --fail_on=crash --isolated_share=0");
  if (run.exit_code == 1) {
    // Under ctest's load a worker can still die of a crash that does not
    // recur in a fresh process (libFuzzer's exit 77 at 3762ed9, filed as
    // "did not recur"): a crash bucket all the same, and exit 1 is right for
    // it. Every crash bucket of such a run must be one that did not recur,
    // or one of libtorch's known crashes the seeds reach on the CPU:
    // group_norm's channels-last backward writing through a null dX (judged
    // real in session 40; a 4 s run hit it at e2d76f2), or grid_sampler's
    // backward writing out of bounds for a NaN coordinate (pytorch#24823,
    // judged real in session 46; the grid shape form reaches it).
    auto store = store::FindingsStore::Open(dir + "/findings");
    ASSERT_TRUE(store.ok()) << run.output;
    auto index = (*store)->Load();
    ASSERT_TRUE(index.ok()) << run.output;
    bool crash = false;
    for (const nlohmann::json& e : *index) {
      if (e.value("severity", "") != "crash") continue;
      crash = true;
      const std::string group = e.value("group", "");
      if (group.rfind("NativeGroupNormBackward0|crash|", 0) == 0 ||
          group.rfind("GridSampler", 0) == 0) {
        continue;
      }
      EXPECT_FALSE(e["detail"].value("reproduced", true)) << e.dump();
    }
    EXPECT_TRUE(crash) << run.output;
    EXPECT_TRUE(Contains(run.output, "hit in this run (exit 1)")) << run.output;
  } else {
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_TRUE(
        Contains(run.output, "fail_on=crash: no bucket at or above crash was hit in this run"))
        << run.output;
  }
  // Paths in campaign.json are relative to the work folder.
  const std::string config = testing::ReadTextFile(dir + "/campaign/campaign.json");
  EXPECT_TRUE(Contains(config, "\"findings\": \"../findings\"")) << config;

  run = testing::RunShell(kTool + " campaign --resume=" + dir + "/campaign");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(Contains(run.output,
                       "has used its whole budget (4 s); to run it longer, add "
                       "--seconds=N"))
      << run.output;
  run = testing::RunShell(kTool + " campaign --resume=" + dir +
                          "/campaign --targets=cpu,cpu-scalar --findings=elsewhere --seconds=3");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(Contains(run.output, "--findings, --targets cannot be changed")) << run.output;

  // A copy of both folders, its state.json lost: it resumes into its own
  // store, with a rebuilt state (no negative rates), for 3 s more.
  const std::string copy = dir + "/copy";
  fs::create_directories(copy);
  fs::copy(dir + "/campaign", copy + "/campaign", fs::copy_options::recursive);
  fs::copy(dir + "/findings", copy + "/findings", fs::copy_options::recursive);
  fs::remove(copy + "/campaign/state.json");
  const std::string original_index = testing::ReadTextFile(dir + "/findings/index.jsonl");
  run = testing::RunShell(kTool + " campaign --resume=" + copy + "/campaign --seconds=3 " +
                          "--fail_on=any");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(Contains(run.output, "state.json was missing; rebuilt")) << run.output;
  EXPECT_TRUE(Contains(run.output, "budget extended by 3 s")) << run.output;
  EXPECT_TRUE(Contains(run.output, "findings " + copy + "/findings/")) << run.output;
  EXPECT_TRUE(Contains(run.output, "fail_on=any: ")) << run.output;
  EXPECT_TRUE(Contains(run.output, "hit in this run (exit 1)")) << run.output;
  EXPECT_FALSE(std::regex_search(run.output, std::regex("\\(-[0-9]"))) << run.output;
  EXPECT_EQ(testing::ReadTextFile(dir + "/findings/index.jsonl"), original_index);
  // The new workers are a later generation: the first one's counters stay.
  EXPECT_TRUE(fs::exists(copy + "/campaign/logs/stats-0-0.json"));
  EXPECT_TRUE(fs::exists(copy + "/campaign/logs/stats-0-1.json")) << run.output;
}

// --mps (fuzz/campaign/mps_server.h) on a machine without a GPU, and what the
// campaign makes of an input a worker met a CUDA fault in on its MPS server:
// a fault reaches every client, so only an input that fails again alone is
// a finding (a crash- artifact that does not recur still is one, in the
// divergence tier). Both artifacts here run cleanly.
TEST(MpsFaults, AnInputThatMetAFaultOnTheMpsServerIsAFindingOnlyIfItFailsAgainAlone) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("cli-mps");
  testing::CommandRun run = Campaign(dir, "--seconds=3 --mps=maybe");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(Contains(run.output, "--mps must be auto, on or off, not \"maybe\"")) << run.output;
  run = Campaign(dir, "--seconds=3 --mps=on");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(Contains(run.output, "--mps=on needs a cuda target")) << run.output;

  run = Campaign(dir, "--seconds=3");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string clean =
      "divfuzz v1\ninput %a: f32[2] = fill(1.0)\n%b = aten::neg(%a)\noutput %b\n";
  const std::string mps = dir + "/campaign/crashes/mps-fault-inflight-00000000000000aa";
  testing::WriteTextFile(mps, clean);
  testing::WriteTextFile(dir + "/campaign/crashes/crash-00000000000000bb", clean + "\n");
  run = testing::RunShell(kTool + " campaign --resume=" + dir + "/campaign --seconds=3");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(Contains(run.output, mps + " ran cleanly alone: its worker met another client's "
                                         "CUDA fault on the MPS server; not a finding"))
      << run.output;
  EXPECT_TRUE(Contains(run.output, "(did not recur)")) << run.output;
  const std::string index = testing::ReadTextFile(dir + "/findings/index.jsonl");
  EXPECT_TRUE(Contains(index, "crash-00000000000000bb")) << index;
  EXPECT_FALSE(Contains(index, "mps-fault-inflight")) << index;
  // It ran to its end alone: filed unlocated, not under its last node.
  EXPECT_TRUE(Contains(index, "\"replay_ran_to\":\"aten::neg")) << index;
}

TEST(CorruptIndex, SetAsideLinesAreNamedOnStderr) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("cli-corrupt");
  auto store = store::FindingsStore::Open(dir + "/findings");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(
      (*store)
          ->Record(testing::HitFor("aten::exp|f32|tolerance|cpu", "cpu vs cpu-f64"), "divfuzz v1\n")
          .ok());
  const std::string index = dir + "/findings/index.jsonl";
  testing::WriteTextFile(index, testing::ReadTextFile(index) + "{\"id\": \"cut-short\n");
  fs::create_directories(dir + "/campaign");
  testing::WriteTextFile(dir + "/campaign/stats.csv",
                         "elapsed_s,executions,exec_per_s,corpus,buckets,bug,divergence,expected,"
                         "dtype_gap,workers,restarts\n5,10,2.0,1,1,0,1,0,0,1,0\n");
  const testing::CommandRun run = testing::RunShell(kTool + " report " + dir + "/campaign");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(
      Contains(run.output, "divfuzz report: corrupt index line set aside: " + index + ":2: "))
      << run.output;
  EXPECT_TRUE(Contains(run.output, "; moved to " + dir + "/findings/index.jsonl.corrupt"))
      << run.output;
  EXPECT_EQ(testing::ReadTextFile(index + ".corrupt"), "{\"id\": \"cut-short\n");
  // Said once: the index is clean now.
  const testing::CommandRun again = testing::RunShell(kTool + " report " + dir + "/campaign");
  EXPECT_FALSE(Contains(again.output, "corrupt index line")) << again.output;
}

}  // namespace
}  // namespace divfuzz
