#include "fuzz/campaign/crash_hang_reduction.h"

#include <algorithm>
#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "fuzz/flags.h"
#include "graph/printer.h"
#include "minimize/hang_crash_repro.h"
#include "ops/infer.h"

namespace divfuzz::fuzz {
namespace {

// "aten::x|f32": node i's op and the dtype of its first result, as
// fuzz/campaign/artifact_replay.cc names a hang or crash.
std::string At(const graph::Program& program, const ops::TypeEnv& types, int i) {
  const graph::Node& node = program.nodes[i];
  std::string dtype;
  if (!node.results.empty()) {
    auto t = types.find(node.results[0]);
    if (t != types.end()) dtype = std::string(graph::DTypeName(t->second.dtype));
  }
  return absl::StrCat(node.QualifiedName(), "|", dtype);
}

}  // namespace

absl::StatusOr<minimize::ReproFiles> FailureRepro(const graph::Program& program,
                                                  minimize::ReproOptions options,
                                                  const std::string& signature, int node,
                                                  const ReproChild& child,
                                                  const ReproResume* resume) {
  const int timeout = absl::GetFlag(FLAGS_timeout);
  absl::StatusOr<minimize::FailureSpec> spec = minimize::FailureSpecFor(
      signature, options.target_a, options.target_b,
      resume != nullptr && resume->node >= 0 ? resume->node : node, timeout);
  if (!spec.ok()) return spec.status();
  child.Failing(spec->kind, signature);
  options.max_seconds = std::max<double>(options.max_seconds, kFailureTimeouts * timeout);
  const double budget = options.max_seconds;
  if (resume != nullptr && resume->seconds_left >= 0) options.max_seconds = resume->seconds_left;
  if (resume != nullptr && !resume->reduce) options.max_seconds = 0;
  const int hung_or_crashed = resume != nullptr ? static_cast<int>(resume->skip.size()) : 0;
  if (resume != nullptr) options.skip.insert(resume->returned.begin(), resume->returned.end());
  const exec::Target target = spec->target;
  options.evaluate =
      [&child, target](const graph::Program& candidate) -> absl::StatusOr<minimize::Evaluation> {
    absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(candidate);
    if (!types.ok()) return types.status();
    child.Run(graph::PrintProgram(candidate));
    const exec::RunResult r = exec::Run(candidate, *types, target,
                                        [&](int i) { child.Node(i, At(candidate, *types, i)); });
    for (size_t i = 0; i < r.nodes.size(); ++i) {
      const auto& e = r.nodes[i].error;
      if (e && e->kind == exec::NodeError::Kind::kCudaFatal) {
        // The context is poisoned: this process can run nothing more.
        child.Node(static_cast<int>(i), At(candidate, *types, static_cast<int>(i)));
        child.Fault();
        std::_Exit(3);
      }
    }
    child.Run("");
    minimize::Evaluation e;
    e.types = std::move(*types);
    return e;  // not found: it returned
  };

  if (resume == nullptr || !resume->confirmed) {
    // The finding's own program: when it hangs or crashes as the finding
    // did, this process ends here and the supervisor goes on from it.
    if (absl::StatusOr<minimize::Evaluation> e = options.evaluate(program); !e.ok()) {
      return e.status();
    }
    options.minimize = false;
    absl::StatusOr<minimize::ReproFiles> files =
        minimize::MakeFailureRepro(program, *spec, options);
    if (!files.ok()) return files.status();
    files->reproduced = false;
    files->note = absl::StrCat("the program ran to its end on ", exec::TargetName(target),
                               " here: the ", spec->kind, " did not recur");
    files->report_md = absl::StrCat("**Did not reproduce on this machine**: ", files->note, ".\n\n",
                                    files->report_md);
    return files;
  }
  // The numbers of the whole reduction, over every process it took.
  spec->runs_before = resume->runs;
  if (resume->seconds_left >= 0) spec->seconds_before = budget - resume->seconds_left;
  spec->hung_or_crashed = hung_or_crashed;
  absl::StatusOr<minimize::ReproFiles> files = minimize::MakeFailureRepro(program, *spec, options);
  return files;
}

}  // namespace divfuzz::fuzz
