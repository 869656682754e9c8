// divfuzz replay: rerun programs and show both targets' outputs and the verdict.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "exec/executor.h"
#include "exec/format.h"
#include "exec/memory_budget.h"
#include "fuzz/campaign/spawn.h"
#include "fuzz/cli/cli_common.h"
#include "fuzz/cli/commands.h"
#include "fuzz/cli/given_flags.h"
#include "fuzz/exit_codes.h"
#include "fuzz/flags.h"
#include "graph/parser.h"
#include "ops/infer.h"
#include "oracles/compare.h"
#include "oracles/triage.h"

namespace divfuzz::fuzz {

namespace {

void PrintSide(const exec::RunResult& r, size_t node) {
  std::cout << "    " << exec::TargetName(r.target) << ": ";
  if (node >= r.nodes.size()) {
    std::cout << (r.setup_error.empty() ? "not run" : r.setup_error) << "\n";
    return;
  }
  const exec::NodeResult& n = r.nodes[node];
  if (n.error && n.error->declined) {
    std::cout << "declined (not run)\n";
    return;
  }
  if (n.error) {
    std::cout << "error (" << exec::ErrorKindName(n.error->kind) << "): " << n.error->message
              << "\n";
    return;
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    std::cout << (i ? "\n      " : "") << exec::FormatTensor(n.outputs[i]);
  }
  std::cout << "\n";
}

// Prints one file's nodes, both sides' outputs and the verdict; its exit code.
int PrintReplay(const std::string& path, const graph::Program& program, const exec::RunResult& a,
                const exec::RunResult& b, const oracles::Verdict& v) {
  const std::vector<std::pair<size_t, std::string>> declined = DeclinedNodes(a, b);
  std::cout << "== " << path << " (" << v.target_a << " vs " << v.target_b << ")\n";
  for (size_t i = 0, d = 0; i < program.nodes.size(); ++i) {
    const graph::Node& n = program.nodes[i];
    std::cout << "  [" << i << "] %" << absl::StrJoin(n.results, ", %") << " = "
              << n.QualifiedName() << "\n";
    PrintSide(a, i);
    PrintSide(b, i);
    if (d < declined.size() && declined[d].first == i) {
      std::cout << "  " << declined[d++].second << "\n";
    }
  }
  // A declined node was compared nowhere: never "agree" (exit code 3).
  if (!v.Diverged() && !declined.empty()) {
    std::cout << "verdict: declined: " << declined.size() << " node"
              << (declined.size() == 1 ? "" : "s")
              << " not run (inputs the kernel does not survive); the rest agree\n";
    return kExitDeclined;
  }
  if (!v.Diverged()) {
    std::cout << "verdict: agree\n";
    return kExitClean;
  }
  for (const oracles::Divergence& d : v.divergences) {
    std::cout << "verdict: " << oracles::ClassName(d.cls) << " at node " << d.node_index << " (%"
              << d.value << " = " << d.op << ", " << d.dtype << ")"
              << (d.root ? " [root]" : " [downstream]") << ": " << d.detail << "\n";
    if (!d.root) continue;
    std::cout << "  tier: " << d.tier << ", wrong side: " << d.wrong_side
              << (d.expected_rule.empty() ? "" : ", rule: " + d.expected_rule) << "\n"
              << "  witness: " << d.witness << "; trigger: " << d.trigger << "\n"
              << "  reference (" << (d.witness == "none" ? "cpu-f64" : d.witness)
              << ", from each side's inputs"
              << (d.invariant >= 0 ? ", of the same invariant" : "") << "): " << d.reference_a << " / "
              << d.reference_b << "; error in ULPs " << d.ulp_a << " / " << d.ulp_b << "\n"
              << "  why: " << d.reason << "\n";
  }
  return kExitFindings;
}

// Set in a batch's child: the file it writes the index of each file it
// starts to, so that its supervisor knows which one a crash took.
constexpr char kBatchProgress[] = "DIVFUZZ_REPLAY_BATCH_PROGRESS";

// This process's command line without the files it was given (`args`): the
// same command and flags, for a child given other files.
std::vector<std::string> CommandWithoutFiles(const std::vector<std::string>& args) {
  const std::set<std::string> given(args.begin(), args.end());
  std::vector<std::string> argv;
  for (const std::string& word : OwnCommandLine()) {
    if (given.count(word) == 0) argv.push_back(word);
  }
  return argv;
}

// This command again on `files`, with the same flags, in a child process
// whose output is this one's; `blocking` sets CUDA_LAUNCH_BLOCKING=1 there.
// Its exit code (a crash counts as a finding).
int ReplayInChild(const std::vector<std::string>& args, const std::vector<std::string>& files,
                  bool blocking) {
  std::vector<std::string> argv = CommandWithoutFiles(args);
  argv.insert(argv.end(), files.begin(), files.end());
  SpawnOptions options;
  if (blocking) options.env["CUDA_LAUNCH_BLOCKING"] = "1";
  // A child of several files supervises its own batch (RunReplay).
  options.unset.push_back(kBatchProgress);
  std::cout.flush();
  const pid_t pid = SpawnSelf(argv, options);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) {
    std::cerr << "divfuzz replay: could not start a child process to replay "
              << absl::StrJoin(files, " ") << "\n";
    return 2;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  std::cout << "divfuzz replay: the replay of " << absl::StrJoin(files, " ")
            << " died of signal " << WTERMSIG(status) << " (a crash is a finding)\n";
  return kExitFindings;
}

// Several files: they run in a child, and a file whose replay kills it (a
// kernel that segfaults: libtorch's CPU group_norm backward on a null dX,
// session 42) is reported as a finding and the files after it go on in a
// fresh child. Without this, one crash lost the verdicts of the whole batch.
// With --timeout given, a file that runs longer is killed with its child and
// reported as a hang (session 46: the CPU's polygamma at x = -7e14 held a
// batch of 182 judged programs for over ten minutes).
int SuperviseBatch(const std::vector<std::string>& files, int timeout_s) {
  const std::vector<std::string> flags = CommandWithoutFiles(files);
  char dir_template[] = "/tmp/divfuzz-replay-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return -1;
  const std::string progress = std::string(dir_template) + "/started";
  int worst = kExitClean;
  for (size_t start = 0; start < files.size();) {
    std::vector<std::string> argv = flags;
    argv.insert(argv.end(), files.begin() + start, files.end());
    SpawnOptions options;
    options.env[kBatchProgress] = progress;
    std::remove(progress.c_str());
    std::cout.flush();
    const pid_t pid = SpawnSelf(argv, options);
    int status = 0;
    if (pid < 0) {
      std::cerr << "divfuzz replay: could not start a child process to replay the files\n";
      worst = WorseExit(worst, 2);
      break;
    }
    // The file the child is on, from its progress file, and since when.
    auto current = [&] {
      long long at = -1;
      std::ifstream(progress) >> at;
      return at;
    };
    long long on = -1;
    auto since = std::chrono::steady_clock::now();
    bool hung = false;
    for (;;) {
      const pid_t done = waitpid(pid, &status, timeout_s > 0 ? WNOHANG : 0);
      if (done == pid) break;
      if (done < 0) {
        status = -1;
        break;
      }
      const long long now_on = current();
      if (now_on != on) on = now_on, since = std::chrono::steady_clock::now();
      if (std::chrono::steady_clock::now() - since > std::chrono::seconds(timeout_s)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        hung = true;
        break;
      }
      usleep(100000);
    }
    if (status == -1) {
      std::cerr << "divfuzz replay: lost the child process replaying the files\n";
      worst = WorseExit(worst, 2);
      break;
    }
    if (!hung && WIFEXITED(status)) {
      worst = WorseExit(worst, WEXITSTATUS(status));
      break;
    }
    size_t at = 0;
    std::ifstream(progress) >> at;
    const size_t crashed = std::min(start + at, files.size() - 1);
    if (hung) {
      std::cout << "divfuzz replay: the replay of " << files[crashed] << " ran past --timeout="
                << timeout_s << " s and was stopped (a hang is a finding; `divfuzz replay` of "
                << "it alone shows the nodes it ran)";
    } else {
      std::cout << "divfuzz replay: the replay of " << files[crashed] << " died of signal "
                << WTERMSIG(status) << " (a crash is a finding; `divfuzz replay` of it alone "
                << "shows the nodes it ran)";
    }
    worst = WorseExit(worst, kExitFindings);
    start = crashed + 1;
    if (start < files.size()) {
      std::cout << "; the " << files.size() - start << " file(s) after it run in a fresh process";
    }
    std::cout << "\n";
  }
  std::remove(progress.c_str());
  rmdir(dir_template);
  return worst;
}

}  // namespace

int RunReplay(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cerr << "divfuzz replay: expected one or more program files (.dfz)\n";
    return 2;
  }
  absl::StatusOr<std::pair<exec::Target, exec::Target>> pair =
      TargetPairFromFlag(absl::GetFlag(FLAGS_targets));
  absl::StatusOr<oracles::Policy> loaded = PolicyFromFlags();
  for (const absl::Status& s : {pair.status(), loaded.status()}) {
    if (!s.ok()) {
      std::cerr << s.message() << "\n";
      return 2;
    }
  }
  const char* progress = std::getenv(kBatchProgress);
  const int timeout_s = GivenFlags().count("timeout") ? absl::GetFlag(FLAGS_timeout) : 0;
  if (GivenFlags().count("timeout") && timeout_s < 1) {
    std::cerr << "divfuzz replay: --timeout must be 1 or more seconds, got " << timeout_s << "\n";
    return 2;
  }
  if ((args.size() > 1 || timeout_s > 0) && progress == nullptr) {
    const int supervised = SuperviseBatch(args, timeout_s);
    if (supervised >= 0) return supervised;
  }
  const exec::Target* ta = &pair->first;
  const exec::Target* tb = &pair->second;
  const oracles::Policy& policy = *loaded;
  int worst = kExitClean;
  // A file that cannot be run is reported and skipped: the files after it in
  // a batch still run (a batch of 40 judged programs stopped at one invalid
  // file and lost the verdicts of the rest), and the exit code says 2.
  std::vector<std::string> unusable;
  for (size_t file = 0; file < args.size(); ++file) {
    const std::string& path = args[file];
    if (progress != nullptr) std::ofstream(progress, std::ios::trunc) << file << "\n";
    absl::StatusOr<graph::Program> program = LoadProgramFile(path);
    absl::StatusOr<ops::TypeEnv> types =
        program.ok() ? ops::InferProgram(*program, path) : absl::StatusOr<ops::TypeEnv>(program.status());
    absl::Status usable = types.status();
    if (usable.ok()) {
      usable =
          exec::CheckMemoryBudget(*program, *types, absl::GetFlag(FLAGS_memory_budget_mb), path);
    }
    if (!usable.ok()) {
      std::cerr << usable.message() << "\n";
      unusable.push_back(path);
      continue;
    }
    const exec::RunResult a = exec::Run(*program, *types, *ta);
    const exec::RunResult b = exec::Run(*program, *types, *tb);
    oracles::Verdict v = oracles::Compare(*program, *types, a, b, policy);
    oracles::Triage(*program, *types, a, b, policy, v);
    // A CUDA fault leaves this process's CUDA context unusable (every later
    // CUDA call raises the same sticky error) and surfaces at whichever node
    // synchronizes next, not always the one that launched it (session 41: a
    // flash attention backward's illegal access filed at a hardswish after
    // it). So the file is replayed alone with CUDA_LAUNCH_BLOCKING=1, which
    // raises the fault at its node, and the files after it in a fresh process.
    if (a.cuda_fatal || b.cuda_fatal) {
      const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
      if (blocking == nullptr || std::string(blocking) != "1") {
        std::cout << "== " << path << ": a CUDA fault; the context is lost, so it is replayed "
                  << "alone with CUDA_LAUNCH_BLOCKING=1, which names the node that faulted\n";
        worst = WorseExit(worst, ReplayInChild(args, {path}, true));
      } else {
        worst = WorseExit(worst, PrintReplay(path, *program, a, b, v));
      }
      if (file + 1 < args.size()) {
        std::cout << "divfuzz replay: the " << args.size() - file - 1
                  << " file(s) after it run in a fresh process\n";
        worst = WorseExit(worst, ReplayInChild(args, {args.begin() + file + 1, args.end()}, false));
      }
      break;
    }
    worst = WorseExit(worst, PrintReplay(path, *program, a, b, v));
    // Out before the next file: a crash there would lose what is buffered.
    std::cout.flush();
  }
  if (!unusable.empty()) {
    std::cerr << "divfuzz replay: " << unusable.size() << " of " << args.size()
              << " file(s) could not be run (the messages above); the others ran\n";
    return 2;
  }
  return worst;
}

}  // namespace divfuzz::fuzz
