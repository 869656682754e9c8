// divfuzz repro FINDING: minimize a finding (a findings folder <store>/<id>/ or
// a program file) and write min.dfz, repro.py, repro_cpp/ and report.md
// (minimize/repro.h). In a findings store the index's fields are updated.
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "exec/executor.h"
#include "fuzz/cli/cli_common.h"
#include "fuzz/cli/commands.h"
#include "fuzz/exit_codes.h"
#include "fuzz/flags.h"
#include "fuzz/campaign/reducer_child.h"
#include "fuzz/campaign/crash_hang_reduction.h"
#include "fuzz/campaign/reducer_supervisor.h"
#include "minimize/repro.h"
#include "ops/infer.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {
namespace {

bool IsDir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsFile(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// A finding folder: its store (the parent folder, when it has an index) and
// index entry.
struct Finding {
  std::string dir;
  std::string id;
  std::unique_ptr<store::FindingsStore> store;
  nlohmann::json entry;
};

Finding OpenFinding(std::string dir) {
  Finding f;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  f.dir = dir;
  const size_t slash = dir.rfind('/');
  f.id = slash == std::string::npos ? dir : dir.substr(slash + 1);
  const std::string parent = slash == std::string::npos ? "." : dir.substr(0, slash);
  if (!IsFile(parent + "/index.jsonl")) return f;
  ReportCorruptIndexLines(parent, "repro");
  absl::StatusOr<std::unique_ptr<store::FindingsStore>> s = store::FindingsStore::Open(parent);
  if (!s.ok()) return f;
  absl::StatusOr<std::vector<nlohmann::json>> index = (*s)->Load();
  if (!index.ok()) return f;
  for (const nlohmann::json& e : *index) {
    if (e.value("id", "") == f.id) {
      f.entry = e;
      f.store = std::move(*s);
      break;
    }
  }
  return f;
}

// A program that does not reproduce may have been declined, not compared: its
// declined nodes (one CPU run; a decline depends on the values alone, the same
// on every target), each "declined: <reason>; not run" on stderr. Whether any.
bool PrintDeclines(const graph::Program& program) {
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(program);
  if (!types.ok()) return false;
  const exec::RunResult r = exec::Run(program, *types, exec::Target::kCpu);
  const std::vector<std::pair<size_t, std::string>> declined = DeclinedNodes(r, r);
  for (const auto& [i, line] : declined) {
    std::cerr << "divfuzz repro: [" << i << "] %" << absl::StrJoin(program.nodes[i].results, ", %")
              << " = " << program.nodes[i].QualifiedName() << ": " << line << "\n";
  }
  return !declined.empty();
}

// One finding or program: 0 reproduced, 1 not, 3 declined, 2 failed.
int ReproOne(const std::string& arg, const ReproChild& child, const ReproResume* resume) {
  minimize::ReproOptions options;
  Finding finding;
  std::string program_path = arg;
  std::string out_dir = absl::GetFlag(FLAGS_out);
  std::string targets_flag = absl::GetFlag(FLAGS_targets);
  if (IsDir(arg)) {
    finding = OpenFinding(arg);
    program_path = finding.dir + "/program.dfz";
    if (out_dir.empty()) out_dir = finding.dir;
    options.finding_id = finding.id;
    if (!finding.entry.is_null()) {
      options.signature = finding.entry.value("signature", "");
      options.tier = finding.entry.value("tier", "");
      // "cpu vs cuda" -> "cpu,cuda" unless --targets says otherwise.
      const std::string stored = finding.entry.value("targets", "");
      if (targets_flag.empty() && absl::StrContains(stored, " vs ")) {
        targets_flag = absl::StrReplaceAll(stored, {{" vs ", ","}});
      }
      const nlohmann::json detail = finding.entry.value("detail", nlohmann::json::object());
      options.node_index = detail.value("node", -1);
      options.output_index = detail.value("output", 0);
      if (detail.contains("summary")) {
        options.seen =
            absl::StrCat(finding.entry.value("class", ""), ", tier ",
                         finding.entry.value("tier", ""), ", wrong side ",
                         finding.entry.value("wrong_side", ""), ": ", detail.value("summary", ""));
      }
    }
  } else if (out_dir.empty()) {
    out_dir =
        absl::EndsWith(arg, ".dfz") ? arg.substr(0, arg.size() - 4) + ".repro" : arg + ".repro";
  }
  absl::StatusOr<graph::Program> program = LoadProgramFile(program_path);
  if (!program.ok()) {
    std::cerr << program.status().message() << "\n";
    return 2;
  }
  // A GPU finding on a CPU host still gets its repros, to run on a GPU host.
  if (absl::Status s = ReduceOptionsFromFlags(targets_flag, &options, /*runnable_only=*/false);
      !s.ok()) {
    std::cerr << s.message() << "\n";
    return 2;
  }
  options.minimize = absl::GetFlag(FLAGS_minimize);
  // An earlier process was on this finding and a candidate hung or crashed
  // it: go on from the smallest program it had kept, without that candidate.
  graph::Program original;
  absl::StatusOr<std::optional<graph::Program>> best =
      AttachToSupervisor(child, resume, program_path, &options);
  if (best.ok() && best->has_value()) {
    original = std::move(*program);
    program = **std::move(best);
    options.original = &original;
  }
  if (resume != nullptr && !resume->reduce) {
    options.max_seconds = 0;  // the repros for the program as it is
  }

  // A hang or crash finding cannot be judged by running both targets here.
  const std::string cls = finding.entry.is_null() ? "" : finding.entry.value("class", "");
  absl::StatusOr<minimize::ReproFiles> files =
      cls == "hang" || cls == "crash"
          ? FailureRepro(*program, options, options.signature, options.node_index, child, resume)
          : minimize::MakeRepro(*program, options);
  if (!files.ok()) {
    std::cerr << program_path << ": " << files.status().message() << "\n";
    return 2;
  }
  absl::Status written;
  if (finding.store != nullptr && out_dir == finding.dir) {
    written = minimize::WriteReproToStore(*finding.store, finding.id, *files);
  } else {
    written = minimize::WriteReproToDir(out_dir, *files);
  }
  if (!written.ok()) {
    std::cerr << written.message() << "\n";
    return 2;
  }
  std::cerr << "divfuzz repro: wrote " << out_dir << "/{"
            << (files->min_dfz.empty() ? "" : "min.dfz, ") << "repro.py, repro_cpp/, report.md}"
            << (files->reproduced ? "" : " (did not reproduce here: " + files->note + ")") << "\n";
  // A target this machine cannot run, where judging needed it, is an error
  // here as in every command (exit 2), though the repros are written for a
  // host that can run it. (A cpu nondeterminism finding of a cpu vs cuda
  // campaign needs only the cpu.)
  for (exec::Target t : {options.target_a, options.target_b}) {
    if ((t == exec::Target::kCuda || t == exec::Target::kCudaF64) && !exec::CudaAvailable() &&
        !files->reproduced && absl::StrContains(files->note, "CUDA is not available")) {
      std::cerr << "divfuzz repro: " << exec::TargetName(t)
                << " cannot run on this machine (no usable GPU): the repros are written for a GPU "
                   "host; nothing was judged here\n";
      return 2;
    }
  }
  if (!files->reproduced && cls != "hang" && cls != "crash" && PrintDeclines(*program)) {
    return kExitDeclined;
  }
  return files->reproduced ? kExitClean : kExitFindings;
}

}  // namespace

int RunRepro(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cerr << "divfuzz repro: expected finding folders or program files (.dfz)\n";
    return 2;
  }
  if (args.size() > 1 && !absl::GetFlag(FLAGS_out).empty()) {
    std::cerr << "divfuzz repro: --out takes a single finding or program\n";
    return 2;
  }
  std::optional<ReproChild> child = ReproChild::FromEnvironment();
  if (!child.has_value()) {
    SupervisorSettings settings;
    settings.max_seconds = absl::GetFlag(FLAGS_max_seconds);
    settings.run_timeout = absl::GetFlag(FLAGS_timeout);
    settings.hang_dir = absl::GetFlag(FLAGS_hang_artifacts);
    return SuperviseRepro(args, settings);
  }
  // Several in one process share libtorch's and CUDA's start-up, which costs
  // more than reducing a typical finding.
  int worst = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (child->Done(i)) continue;
    child->Begin(i);
    const int rc = ReproOne(args[i], *child, child->Resume(i));
    child->End(i, rc);
    worst = WorseExit(worst, rc);
  }
  return worst;
}

}  // namespace divfuzz::fuzz
