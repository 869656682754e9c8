// What several subcommands read from the command line: program files, the
// target pair and the policy. Errors are printable as they are.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "exec/run_result.h"
#include "exec/target.h"
#include "graph/program.h"
#include "minimize/reducer.h"
#include "oracles/policy.h"

namespace divfuzz::fuzz {

// Reads and parses a .dfz file ("PATH: cannot read the file", or the
// parser's file:line:col message).
absl::StatusOr<graph::Program> LoadProgramFile(const std::string& path);

// "cpu,cuda" where CUDA is available, else "cpu,cpu-f64"; a --targets value wins.
std::string ResolveTargets(const std::string& flag_value);

// An error when the pair names a target this machine cannot run (cuda without
// a visible CUDA device): "<what>=cpu,cuda: target cuda cannot run here: ...".
// Such a pair is refused, never run: a target that fails every node would
// otherwise show up as a divergence.
absl::Status CheckTargetsRunnable(const std::string& what, const std::string& targets);

// ResolveTargets(flag) parsed and checked with CheckTargetsRunnable:
// "divfuzz: --targets=...: expected ...".
// `runnable_only` = false skips that check: `divfuzz repro` writes the repros
// of a GPU finding on a CPU host (unminimized, "did not reproduce here").
absl::StatusOr<std::pair<exec::Target, exec::Target>> TargetPairFromFlag(const std::string& flag,
                                                                         bool runnable_only = true);

// The --policy file (or the built-in default) with --tf32 applied; sets the
// CUDA math mode to match.
absl::StatusOr<oracles::Policy> PolicyFromFlags();

// The reducer's options from the flags: targets (from `targets_flag`), policy,
// --max_seconds, --signature (kept as it is when the flag is empty), --passes;
// progress goes to stderr.
absl::Status ReduceOptionsFromFlags(const std::string& targets_flag,
                                    minimize::ReduceOptions* options, bool runnable_only = true);

// The nodes either run declined (exec::NodeError::declined), in program order,
// each once: its index and "declined: <reason>; not run".
std::vector<std::pair<size_t, std::string>> DeclinedNodes(const exec::RunResult& a,
                                                          const exec::RunResult& b);

// Sets aside corrupt lines of <findings_dir>/index.jsonl (when the index
// exists) and says so on stderr, a line each, prefixed "divfuzz <command>: ":
// the file and line, why, and where the line went.
void ReportCorruptIndexLines(const std::string& findings_dir, const std::string& command);

}  // namespace divfuzz::fuzz
