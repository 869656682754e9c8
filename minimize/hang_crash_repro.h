// Repros for a finding that hangs or crashes a kernel (class hang or crash,
// as fuzz/artifacts.cc records them). Such a program cannot be judged the
// way a divergence is: its run never returns, or takes the process with it.
// Its reduction uses the caller's interestingness test (ReduceOptions::
// evaluate), which a supervisor backs (fuzz/repro_supervisor.h): a candidate
// whose run returns is not interesting; one that hangs or crashes ends the
// process, and the supervisor restarts the reduction from it when it failed
// at the same op. This file is the libtorch side: the reducer's start and
// the repros.
//
//   minimize::FailureSpec f = ...;  // FailureSpecFor(signature, targets, node, seconds)
//   o.evaluate = <runs a candidate on f.target, announcing each node>;
//   absl::StatusOr<minimize::ReproFiles> r = minimize::MakeFailureRepro(program, f, o);
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "exec/target.h"
#include "graph/program.h"
#include "minimize/reducer.h"
#include "minimize/repro.h"

namespace divfuzz::minimize {

struct FailureSpec {
  std::string kind;                          // "hang" or "crash"
  std::string signature;                     // "aten::x|f32|hang|cuda"
  exec::Target target = exec::Target::kCpu;  // the side that hangs or crashes
  int node = -1;                             // the node it does so in
  int hang_seconds = 20;                     // a hang: still running after this long
  // Candidates run and seconds spent by earlier processes of this reduction
  // (each restarted from a candidate that failed): added to its numbers.
  int runs_before = 0;
  double seconds_before = 0;
  int hung_or_crashed = 0;  // candidates that failed otherwise (ReduceResult::skipped)
};

// The spec of a stored finding: its signature's class must be hang or crash
// and its side one of the two targets (InvalidArgument otherwise).
absl::StatusOr<FailureSpec> FailureSpecFor(const std::string& signature, exec::Target target_a,
                                           exec::Target target_b, int node, int hang_seconds);

// The reducer's start for `program`, which fails at spec.node: its types, the
// nodes before that one run on spec.target (their values, so the freeze and
// delta passes can turn a prefix into literals; announced to on_run), and
// the root at spec.node.
absl::StatusOr<Evaluation> FailureStart(const graph::Program& program, const FailureSpec& spec,
                                        const EvalOptions& options);

// Reduces (options.minimize with a budget and an options.evaluate; the
// signature kept is spec.signature) and writes repro.py, repro_cpp/ and
// report.md, which run spec.target in a child process and exit 1 when it
// hangs or crashes. With no budget, the repros are for `program` as it is.
absl::StatusOr<ReproFiles> MakeFailureRepro(const graph::Program& program, const FailureSpec& spec,
                                            const ReproOptions& options);

}  // namespace divfuzz::minimize
