// divfuzz merge DEST SRC...: findings stores (store/merge.h) or corpora of
// several hosts into one.
//
// Corpora are merged with libFuzzer's own -merge=1 (keep the inputs that add
// coverage features to those DEST has), run as `divfuzz fuzz -merge=1` in a
// child: the features are divfuzz's extra counters, which only running the
// programs gives. libFuzzer writes the inputs it keeps into its first folder
// in place, so it merges into a staging copy (hard links of DEST's files) and
// the new files are then renamed into DEST one by one (each atomic); a merge
// killed at any point leaves DEST as it was plus whole files, and the staging
// folder is redone by the next run. DEST.lock is flock'ed throughout.
#include <fcntl.h>
#include <ftw.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "fuzz/campaign/spawn.h"
#include "fuzz/cli/cli_common.h"
#include "fuzz/cli/commands.h"
#include "fuzz/exit_codes.h"
#include "fuzz/flags.h"
#include "store/findings_store.h"
#include "store/merge.h"

namespace divfuzz::fuzz {
namespace {

namespace fs = std::filesystem;

// A findings store: a folder with index.jsonl (or the store's lock or id
// file), or index.jsonl itself.
bool IsStore(const std::string& path, std::string* folder) {
  std::error_code ec;
  if (fs::path(path).filename() == "index.jsonl" && fs::is_regular_file(path, ec)) {
    *folder = fs::path(path).parent_path().string();
    if (folder->empty()) *folder = ".";
    return true;
  }
  *folder = path;
  // A store that has no finding yet has its lock file (campaign checks it
  // at start); corpus files are named by their hash.
  for (const char* marker : {"index.jsonl", ".lock", ".store_id"}) {
    if (fs::is_regular_file(fs::path(path) / marker, ec)) return true;
  }
  return false;
}

int MergeStores(const std::string& dest_dir, const std::vector<std::string>& sources) {
  absl::StatusOr<std::unique_ptr<store::FindingsStore>> dest = store::FindingsStore::Open(dest_dir);
  if (!dest.ok()) {
    std::cerr << "divfuzz merge: " << dest.status().message() << "\n";
    return kExitCannotRun;
  }
  for (const std::string& dir : sources) {
    absl::StatusOr<std::unique_ptr<store::FindingsStore>> src = store::FindingsStore::Open(dir);
    if (!src.ok()) {
      std::cerr << "divfuzz merge: " << src.status().message() << "\n";
      return kExitCannotRun;
    }
    absl::StatusOr<store::MergeStats> stats = store::MergeStore(**dest, **src);
    if (!stats.ok()) {
      std::cerr << "divfuzz merge: " << dir << " into " << dest_dir << ": "
                << stats.status().message() << "\n";
      return kExitCannotRun;
    }
    for (const std::string& w : stats->warnings) std::cerr << "divfuzz merge: " << w << "\n";
    std::cout << "merged " << dir << " into " << dest_dir << ": " << stats->new_buckets
              << " new bucket(s), " << stats->updated_buckets << " updated, "
              << stats->smaller_programs << " smaller minimized program(s)\n";
  }
  return kExitClean;
}

// nftw, not std::filesystem::remove_all: libtorch.so exports its own copy of
// that, which crashes this process (as cmd_bench.cc found).
void RemoveTree(const std::string& dir) {
  ::nftw(
      dir.c_str(),
      [](const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

std::set<std::string> FileNames(const std::string& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file()) names.insert(e.path().filename().string());
  }
  return names;
}

int MergeCorpora(const std::string& dest, const std::vector<std::string>& sources) {
  std::error_code ec;
  fs::create_directories(dest, ec);
  const std::string lock_path = dest + ".lock";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    std::cerr << "divfuzz merge: cannot lock " << lock_path << "\n";
    return kExitCannotRun;
  }
  const std::string staging = dest + ".merging";
  const std::string scratch_findings = dest + ".merging-findings";
  RemoveTree(staging);  // a killed merge's: redone
  fs::create_directories(staging, ec);
  const std::set<std::string> before = FileNames(dest);
  for (const std::string& name : before) {
    fs::create_hard_link(fs::path(dest) / name, fs::path(staging) / name, ec);
    if (ec) fs::copy_file(fs::path(dest) / name, fs::path(staging) / name, ec);
  }
  // libFuzzer runs its merge step by re-executing argv[0] through the shell:
  // it must be this binary's path, not a name.
  std::error_code exe_ec;
  const std::string self = fs::read_symlink("/proc/self/exe", exe_ec).string();
  std::vector<std::string> argv = {self.empty() ? "divfuzz" : self, "fuzz", "-merge=1",
                                   "-max_len=65536",
                                   "-merge_control_file=" + staging + "/../" +
                                       fs::path(staging).filename().string() + ".control",
                                   staging};
  argv.insert(argv.end(), sources.begin(), sources.end());
  const std::string log = staging + ".log";
  std::cout << "divfuzz merge: running libFuzzer's -merge=1 over " << sources.size()
            << " corpus folder(s) (each input runs on " << ResolveTargets(absl::GetFlag(FLAGS_targets))
            << "; log " << log << ")\n"
            << std::flush;
  const pid_t pid = SpawnSelf(
      argv, {{{"DIVFUZZ_TARGETS", ResolveTargets(absl::GetFlag(FLAGS_targets))},
              {"DIVFUZZ_FINDINGS", scratch_findings}},
             log, /*append_log=*/false, {"DIVFUZZ_STATS", "DIVFUZZ_INFLIGHT"}});
  int status = 0;
  if (pid <= 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    std::cerr << "divfuzz merge: libFuzzer's merge failed (log: " << log << "); " << dest
              << " is unchanged\n";
    return kExitCannotRun;
  }
  int added = 0;
  for (const std::string& name : FileNames(staging)) {
    if (before.count(name) > 0 || name.find(store::kAtomicWriteInfix) != std::string::npos) continue;
    fs::rename(fs::path(staging) / name, fs::path(dest) / name, ec);
    if (!ec) ++added;
  }
  RemoveTree(staging);
  RemoveTree(scratch_findings);
  ::unlink((staging + ".control").c_str());
  std::cout << "merged " << sources.size() << " corpus folder(s) into " << dest << ": " << added
            << " input(s) that add coverage features, " << before.size() + added << " in all\n";
  ::close(lock);
  return kExitClean;
}

}  // namespace

int RunMerge(const std::vector<std::string>& args) {
  if (args.size() < 2) {
    std::cerr << "usage: divfuzz merge DEST SRC... (findings stores, or corpus folders)\n";
    return kExitCannotRun;
  }
  std::vector<std::string> stores, corpora;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string folder;
    std::error_code ec;
    if (IsStore(args[i], &folder)) {
      stores.push_back(folder);
    } else if (fs::is_directory(args[i], ec)) {
      corpora.push_back(args[i]);
    } else {
      std::cerr << "divfuzz merge: " << args[i]
                << ": not a findings store (a folder with index.jsonl) or a corpus folder\n";
      return kExitCannotRun;
    }
  }
  if (!stores.empty() && !corpora.empty()) {
    std::cerr << "divfuzz merge: the sources mix findings stores (" << stores[0]
              << ") and corpus folders (" << corpora[0] << "); merge each kind on its own\n";
    return kExitCannotRun;
  }
  std::string dest;
  if (!stores.empty()) {
    IsStore(args[0], &dest);
    ReportCorruptIndexLines(dest, "merge");
    return MergeStores(dest, stores);
  }
  return MergeCorpora(args[0], corpora);
}

}  // namespace divfuzz::fuzz
