// `divfuzz repro` (and `divfuzz minimize`) reduce in a child process that a
// supervisor watches. A reducer candidate can hang or crash a kernel (seen on
// the H200: a one-qr candidate on CUDA hung once in a while); in-process,
// that took the whole finding down, and the reduction so far with it. The
// child reports every run and every kept candidate; when it hangs (a run over
// --timeout, or the finding over its budget's grace) or dies, the supervisor
// saves the program it was running (a finding of its own: --hang_artifacts),
// and starts a new child that resumes from the smallest program so far
// without that candidate. After kMaxFailedCandidates the smallest program so
// far is the result (its repros, or minimize's .min.dfz). A finding whose own
// program hangs or crashes is given up (exit 2), and the rest of the batch
// goes on.
//
// A hang or crash finding (its own program hangs or crashes a kernel) is
// reduced the other way round: the child runs each candidate on the failing
// target in-process and announces every node; a candidate that returns is not
// interesting, one that hangs (over --timeout) or crashes in the finding's op
// and dtype is the new smallest program, and the supervisor starts a child
// from it. The first such run confirms the finding's own program.
//
// The supervisor itself never touches libtorch; each child re-executes this
// command line and tells itself apart by its environment.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace divfuzz::fuzz {

// Where a restarted child picks a finding up.
struct ReproResume {
  std::string best;             // the smallest program so far; empty: the finding's own
  std::string signature, tier;  // what the reduction keeps
  std::set<std::string> skip;   // candidates that hung or crashed: never run again
  bool reduce = true;           // false: write the repros for `best` as it is
  // A hang or crash finding: the node `best` fails in, whether a run has
  // shown it failing, the reducer's budget left, and candidates that
  // returned after a second or more (not interesting; not run again).
  int node = -1;
  bool confirmed = false;
  double seconds_left = -1;
  std::set<std::string> returned;
  int runs = 0;  // runs made by the children before (for the reduction's numbers)
};

inline constexpr int kMaxFailedCandidates = 3;
// A hang or crash finding's reduction budget, in --timeout's: at least
// --max_seconds, and this many runs that hang.
inline constexpr int kFailureTimeouts = 10;

// The child's side: what earlier children did, and the reports it sends.
class ReproChild {
 public:
  // Set when this process is a supervised child; nullopt otherwise.
  static std::optional<ReproChild> FromEnvironment();

  bool Done(size_t arg) const { return done_.count(arg) > 0; }
  // The resume point of `arg`, when an earlier child was on it.
  const ReproResume* Resume(size_t arg) const { return resume_arg_ == arg ? &resume_ : nullptr; }

  void Begin(size_t arg) const;
  void Run(const std::string& program) const;  // "" once it returned
  void Keep(const std::string& program, const std::string& signature,
            const std::string& tier) const;
  void End(size_t arg, int rc) const;
  // A hang or crash finding: sent before its first run.
  void Failing(const std::string& kind, const std::string& signature) const;
  // Before node `index` runs: its op and dtype ("aten::x|f32").
  void Node(int index, const std::string& at) const;
  // The run just hit a CUDA fault (its context is poisoned): sent before
  // this process exits, and read as a crash in the node last announced.
  void Fault() const;

 private:
  void Send(const std::string& line) const;

  int fd_ = -1;
  std::set<size_t> done_;
  size_t resume_arg_ = static_cast<size_t>(-1);
  ReproResume resume_;
};

struct SupervisorSettings {
  std::string command = "repro";  // whose messages: "divfuzz <command>: ..."
  int max_seconds = 60;           // the reducer's budget per finding
  int run_timeout = 20;           // seconds one run of a program may take
  std::string hang_dir;           // where hanging and crashing programs go; empty: nowhere
};

// Runs this command line (`divfuzz repro` or `divfuzz minimize`) on `args` in
// supervised children; returns the worst exit code (0 reproduced, 1 not, 2
// failed).
int SuperviseRepro(const std::vector<std::string>& args, const SupervisorSettings& settings);

}  // namespace divfuzz::fuzz
