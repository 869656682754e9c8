#include "fuzz/campaign/baseline_replay.h"

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

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "exec/executor.h"
#include "fuzz/campaign/spawn.h"
#include "store/findings_store.h"
#include "store/root_cause_group.h"

namespace divfuzz::fuzz {
namespace {

namespace fs = std::filesystem;

struct Expect {
  std::string op, dtype, cls;  // empty: any bug-tier root
};

// Runs `divfuzz replay --targets=T PROGRAMS...` with its output in `log`;
// false when it did not exit normally within the time.
bool RunReplay(const std::string& targets, const std::vector<std::string>& programs,
               const std::string& log, int timeout_seconds) {
  std::vector<std::string> argv = {"divfuzz", "replay", "--targets=" + targets};
  argv.insert(argv.end(), programs.begin(), programs.end());
  const pid_t pid = SpawnSelf(argv, {{}, log, /*append_log=*/false, {}});
  if (pid <= 0) return false;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::seconds(timeout_seconds * static_cast<int>(programs.size()));
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // replay: 0 agree, 1 diverge, 3 declined; 2 could not run.
  return WIFEXITED(status) && WEXITSTATUS(status) != 2;
}

// The replay's sections, "== PATH (A vs B)", each with its root divergences
// "verdict: CLASS at node N (%v = OP, DTYPE) [root]" and their "tier: T".
struct Section {
  bool finished = false;  // a verdict line was printed
  std::vector<Expect> bug_roots;
  std::string first_verdict;
};

std::map<std::string, Section> ParseReplay(const std::string& log) {
  std::map<std::string, Section> sections;
  std::ifstream in(log);
  static const std::regex kHeader("^== (.*) \\([^()]* vs [^()]*\\)$");
  static const std::regex kRoot("^verdict: (\\S+) at node [0-9]+ \\(%\\S+ = (\\S+), (\\S+)\\) \\[root\\]");
  static const std::regex kTier("^  tier: (\\S+),");
  Section* current = nullptr;
  Expect pending;
  bool have_pending = false;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, kHeader)) {
      current = &sections[m[1].str()];
      have_pending = false;
      continue;
    }
    if (current == nullptr) continue;
    if (absl::StartsWith(line, "verdict: ")) {
      current->finished = true;
      if (current->first_verdict.empty()) current->first_verdict = line.substr(9);
      have_pending = std::regex_search(line, m, kRoot);
      if (have_pending) pending = {m[2].str(), m[3].str(), m[1].str()};
      continue;
    }
    if (have_pending && std::regex_search(line, m, kTier)) {
      if (m[1].str() == "bug") current->bug_roots.push_back(pending);
      have_pending = false;
    }
  }
  return sections;
}

bool Matches(const Expect& want, const Expect& got) {
  if (want.op.empty()) return true;
  return want.cls == got.cls && want.dtype == got.dtype &&
         store::OpBaseName(want.op) == store::OpBaseName(got.op);
}

}  // namespace

std::vector<KnownBugCheck> ReplayKnownBugs(const store::Baseline& baseline,
                                           const std::vector<nlohmann::json>& current,
                                           const std::string& default_targets, int timeout_seconds,
                                           const std::string& log_dir, std::ostream& progress) {
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& [id, e] : baseline.entries) by_id[id] = e;
  for (const nlohmann::json& e : current) by_id[e.value("id", "")] = e;
  std::vector<KnownBugCheck> checks;
  std::map<std::string, std::vector<size_t>> by_targets;  // target pair -> checks
  std::map<size_t, Expect> expect;
  const bool cuda_here = exec::CudaDeviceCount() > 0;
  for (const auto& [id, program] : baseline.regressions) {
    KnownBugCheck c;
    c.id = id;
    c.program = program;
    auto note = baseline.notes.find(id);
    if (note != baseline.notes.end()) c.note = note->second;
    Expect want;
    auto e = by_id.find(id);
    c.targets = default_targets;
    if (e != by_id.end()) {
      const std::string t = e->second.value("targets", "");
      if (!t.empty()) c.targets = absl::StrReplaceAll(t, {{" vs ", ","}});
      want = {e->second.value("root_op", ""), e->second.value("dtype", ""),
              e->second.value("class", "")};
    }
    if (!cuda_here && absl::StrContains(c.targets, "cuda")) {
      c.outcome = "not checked";
      c.why = "its targets (" + c.targets + ") need a CUDA device";
    }
    expect[checks.size()] = want;
    if (c.outcome.empty()) by_targets[c.targets].push_back(checks.size());
    checks.push_back(std::move(c));
  }
  if (checks.empty()) return checks;
  std::error_code ec;
  fs::create_directories(log_dir, ec);
  progress << "divfuzz: replaying " << checks.size() << " known bug(s) of --baseline="
           << baseline.path << " (is any gone?)\n"
           << std::flush;
  int pair_number = 0;
  for (const auto& [targets, members] : by_targets) {
    std::vector<std::string> programs;
    for (size_t i : members) programs.push_back(checks[i].program);
    const std::string log = absl::StrCat(log_dir, "/known-bugs-", pair_number++, ".log");
    const bool clean = RunReplay(targets, programs, log, timeout_seconds);
    std::map<std::string, Section> sections = ParseReplay(log);
    for (size_t i : members) {
      KnownBugCheck& c = checks[i];
      auto s = sections.find(c.program);
      if (!clean && (s == sections.end() || !s->second.finished)) {
        // The batch died or hung before this one was judged: alone, then.
        const std::string own = absl::StrCat(log_dir, "/known-bug-", c.id, ".log");
        if (!RunReplay(targets, {c.program}, own, timeout_seconds)) {
          c.outcome = "not checked";
          c.why = "its replay crashed, hung or could not run (log: " + own + ")";
          progress << "  " << c.id << ": " << c.outcome << ": " << c.why << "\n" << std::flush;
          continue;
        }
        sections = ParseReplay(own);
        s = sections.find(c.program);
      }
      if (s == sections.end() || !s->second.finished) {
        c.outcome = "not checked";
        c.why = "the replay printed no verdict (log: " + log + ")";
      } else {
        bool found = false;
        for (const Expect& got : s->second.bug_roots) found = found || Matches(expect[i], got);
        c.outcome = found ? "reproduces" : "gone";
        c.why = found ? "" : "now: " + s->second.first_verdict;
      }
      progress << "  " << c.id << ": " << c.outcome << (c.why.empty() ? "" : " (" + c.why + ")")
               << "\n"
               << std::flush;
    }
  }
  return checks;
}

absl::Status WriteKnownBugChecks(const std::string& path, const std::string& baseline_path,
                                 const std::vector<KnownBugCheck>& checks) {
  nlohmann::json bugs = nlohmann::json::array();
  for (const KnownBugCheck& c : checks) {
    bugs.push_back({{"id", c.id},
                    {"program", c.program},
                    {"targets", c.targets},
                    {"outcome", c.outcome},
                    {"why", c.why},
                    {"note", c.note}});
  }
  const nlohmann::json j = {
      {"baseline", baseline_path}, {"checked", store::FindingsStore::NowUtc()}, {"bugs", bugs}};
  return store::WriteFileAtomically(path, j.dump(2) + "\n");
}

std::string KnownBugChecksText(const std::vector<KnownBugCheck>& checks) {
  int reproduces = 0, gone = 0, unchecked = 0;
  std::string lines;
  for (const KnownBugCheck& c : checks) {
    if (c.outcome == "reproduces") ++reproduces;
    if (c.outcome == "not checked") ++unchecked;
    if (c.outcome != "gone") continue;
    ++gone;
    absl::StrAppend(&lines, "  gone (fixed upstream?): ", c.id, c.note.empty() ? "" : " # " + c.note,
                    "\n    program ", c.program, " ", c.why, "\n");
  }
  return absl::StrCat("known bugs replayed: ", checks.size(), " (", reproduces, " reproduce, ",
                      gone, " gone, ", unchecked, " not checked)\n", lines);
}

}  // namespace divfuzz::fuzz
