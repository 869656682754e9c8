// The reducer: shrinks a diverging program to a minimal one that still shows
// the same root divergence. Independent passes (pass.h, passes/passes.def) run
// to a fixpoint against one interestingness test: the candidate type-checks
// and, run on the same two targets, compared and triaged, has a root
// divergence with the same signature (root op | dtype | class | wrong side)
// and the same tier. Deterministic for a deterministic runner; budgeted.
//
//   minimize::ReduceOptions o;
//   o.target_a = exec::Target::kCpu;  o.target_b = exec::Target::kCuda;
//   o.signature = oracles::Signature(root);  // or empty: the most severe root
//   o.max_seconds = 60;  o.log = &std::cerr;
//   absl::StatusOr<minimize::ReduceResult> r = minimize::Reduce(program, o);
//   // r->program: the minimal program; r->evaluation.root: its divergence.
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/run_result.h"
#include "exec/target.h"
#include "graph/program.h"
#include "ops/infer.h"
#include "oracles/policy.h"
#include "oracles/verdict.h"

namespace divfuzz::minimize {

// Runs a whole program on a target (like fuzz::Runner): exec::Run unless a
// test swaps in a deliberately faulty target.
using Runner =
    std::function<exec::RunResult(const graph::Program&, const ops::TypeEnv&, exec::Target)>;

// How a program is run and judged: the target pair, the runners and the policy.
struct EvalOptions {
  exec::Target target_a = exec::Target::kCpu;
  exec::Target target_b = exec::Target::kCpuF64;
  oracles::Policy policy = oracles::DefaultPolicy();
  Runner runner_a;  // empty: exec::Run
  Runner runner_b;
  // Called with the program's text just before each run of it (a run: both
  // targets once, or one rerun of a nondeterminism signature's side), and
  // with "" once it returned, so a supervisor can tell a kernel that hangs
  // or crashes from a slow reduction and save the program it did so in.
  // Empty: not called.
  std::function<void(const std::string&)> on_run;
};

// A program run on both targets, compared and triaged. For a nondeterminism
// signature, a and b are instead the blamed target's first run and the rerun
// that differed from it (else its last rerun), and verdict holds the root alone.
struct Evaluation {
  ops::TypeEnv types;
  exec::RunResult a;
  exec::RunResult b;
  int rerun = 0;  // nondeterminism: which run (2, 3, ...) differed from the first
  // Runs (reruns, for nondeterminism) that showed the signature, of `runs`.
  int hits = 0;
  int runs = 0;
  // Every divergence; with a signature, only the roots that could carry it
  // (same op, dtype and class), triaged.
  oracles::Verdict verdict;
  // The root divergence chosen (see FindRoot); root.node_index < 0 when none.
  oracles::Divergence root;
  bool found = false;
};

// Type-checks, runs, compares and triages; FailedPrecondition when a target
// is cuda (with exec::Run) and CUDA is not available. `signature` picks the root (and
// `tier`, when not empty, must match too); an empty signature picks the most
// severe root (oracles::SeverityRank), the first in node order on ties.
//
// A nondeterminism signature ("op|dtype|nondeterminism|side") runs only its
// side's target (that side's runner), then reruns it up to
// kNondeterminismReruns times: found when a rerun differs from the first run
// bit for bit (oracles::RerunDifference) at a node of that op with an output
// of that dtype. No divergence between the two targets is required, so the
// reducer can shrink to the racing op alone.
//
// Any other signature whose op may vary between runs
// (oracles::MayVaryBetweenRuns: racing indexed writes, atomics) gets up to
// 1 + kNondeterminismReruns runs of both targets; with tier "expected" (which
// write lands is undefined) any root of that op and dtype matches, whatever
// class and wrong side the race gave.
//
// How many of those runs must show it: `required_hits` (found as soon as that
// many did, not found as soon as that many no longer can), or, with 0, every
// run is made and one is enough (a start program's rate is measured). The
// reducer asks each candidate for its start's rate, so a race that showed on
// every run is not shrunk into one that seldom does.
absl::StatusOr<Evaluation> Evaluate(const graph::Program& program, const EvalOptions& options,
                                    const std::string& signature = "", const std::string& tier = "",
                                    int required_hits = 1);

// Reruns per candidate: real races need not show on every run; each one costs
// a whole run of the program.
inline constexpr int kNondeterminismReruns = 3;

// The target a nondeterminism signature blames ("aten::x|f32|nondeterminism|cuda"
// -> "cuda"); empty for any other signature.
std::string NondeterministicSide(const std::string& signature);

struct ReduceOptions;
// Evaluate for the program a reduction (or repro) starts from, every run
// made (required_hits 0): with options.tier first, then, when that finds
// nothing, without it.
absl::StatusOr<Evaluation> EvaluateStart(const graph::Program& program,
                                         const ReduceOptions& options);

struct ReduceOptions : EvalOptions {
  double max_seconds = 60;
  // Bucket signature to keep ("aten::logdet|f32|class_split|cpu"); empty: the
  // most severe root divergence of the input program.
  std::string signature;
  // The bucket's tier, when known (a stored finding's): the starting
  // program's root is looked for with it first. Empty: any tier.
  std::string tier;
  // Also keep the root's tier (so a bug does not turn into expected variance).
  bool keep_tier = true;
  // Progress, one line per pass run (pass, nodes, elements, bytes before and
  // after); nullptr: silent.
  std::ostream* log = nullptr;
  // Called with the start program, then with each candidate kept (the
  // smallest program so far), and the signature and tier kept, so a
  // supervisor can resume from it. Empty: not called.
  std::function<void(const std::string& program, const std::string& signature,
                     const std::string& tier)>
      on_keep;
  // Candidates not to run (texts; they hung or crashed a kernel in an
  // earlier try and are findings of their own): each counts as not
  // reproducing.
  std::set<std::string> skip;
  // Only these passes (by name), in the table's order; empty: all.
  std::vector<std::string> passes;
  // Replaces Evaluate as the interestingness test of candidates (the start's
  // evaluation is then the caller's): a finding that hangs or crashes a
  // kernel cannot be judged by running both targets in this process
  // (minimize/hang_crash_repro.h). Empty: Evaluate with the signature and tier.
  std::function<absl::StatusOr<Evaluation>(const graph::Program&)> evaluate;
};

struct PassStats {
  std::string name;
  int runs = 0;
  int tests = 0;     // candidates run (cache hits not counted)
  int accepted = 0;  // candidates kept
  double seconds = 0;
};

struct ReduceResult {
  graph::Program program;  // the minimal program; its outputs are the diverging value
  std::string signature;
  std::string tier;
  Evaluation evaluation;  // of `program`; evaluation.root is the divergence kept
  int nodes_before = 0, nodes_after = 0;
  int64_t elements_before = 0, elements_after = 0;  // input elements
  size_t bytes_before = 0, bytes_after = 0;         // printed program text
  int rounds = 0;
  int tests = 0;
  int skipped = 0;  // candidates that hung or crashed a kernel: options.skip
  double seconds = 0;
  bool out_of_time = false;  // the budget ran out before a fixpoint
  std::vector<PassStats> passes;
};

// Errors: InvalidArgument when the program does not type-check or names an
// unknown pass; FailedPrecondition when a target cannot run here; NotFound when it shows no root
// divergence (with the signature, when one is given) on the target pair.
absl::StatusOr<ReduceResult> Reduce(const graph::Program& program, const ReduceOptions& options);
// The same from `start`, the program's EvaluateStart that the caller already
// made (a second one could miss a divergence that shows on some runs only).
absl::StatusOr<ReduceResult> Reduce(const graph::Program& program, const ReduceOptions& options,
                                    Evaluation start);

}  // namespace divfuzz::minimize
