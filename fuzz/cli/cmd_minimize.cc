// divfuzz minimize FILE.dfz: reduce a diverging program to a minimal one that
// keeps its root divergence's signature (minimize/reducer.h), printing each
// pass's progress to stderr. It reduces in a supervised child process, as
// `divfuzz repro` does (fuzz/campaign/reducer_supervisor.h): a candidate that hangs or
// crashes a kernel is left out and the reduction goes on from the smallest
// program kept so far.
#include <iostream>
#include <optional>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "fuzz/cli/cli_common.h"
#include "fuzz/cli/commands.h"
#include "fuzz/flags.h"
#include "fuzz/campaign/reducer_child.h"
#include "fuzz/campaign/reducer_supervisor.h"
#include "graph/printer.h"
#include "minimize/reducer.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {
namespace {

// The child's side: 0 written, 1 no divergence to keep, 2 failed.
int MinimizeOne(const std::string& path, const ReproChild& child, const ReproResume* resume) {
  absl::StatusOr<graph::Program> program = LoadProgramFile(path);
  if (!program.ok()) {
    std::cerr << program.status().message() << "\n";
    return 2;
  }
  minimize::ReduceOptions options;
  if (absl::Status s = ReduceOptionsFromFlags(absl::GetFlag(FLAGS_targets), &options); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 2;
  }
  // An earlier child was killed by a candidate: go on from the smallest
  // program it had kept, without that candidate (or stop there).
  absl::StatusOr<std::optional<graph::Program>> best =
      AttachToSupervisor(child, resume, path, &options);
  if (!best.ok()) {
    std::cerr << best.status().message() << "\n";
    return 2;
  }
  if (best->has_value()) program = **std::move(best);
  graph::Program result;
  if (best->has_value() && !resume->reduce) {
    result = *std::move(program);
  } else {
    absl::StatusOr<minimize::ReduceResult> r = minimize::Reduce(*program, options);
    if (!r.ok()) {
      std::cerr << path << ": " << r.status().message() << "\n";
      return r.status().code() == absl::StatusCode::kNotFound ? 1 : 2;
    }
    result = std::move(r->program);
  }
  std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    out = absl::EndsWith(path, ".dfz") ? path.substr(0, path.size() - 4) + ".min.dfz"
                                       : path + ".min.dfz";
  }
  const std::string printed = graph::PrintProgram(result);
  if (out == "-") {
    std::cout << printed << std::flush;
  } else {
    absl::Status s = store::WriteFileAtomically(out, printed);
    if (!s.ok()) {
      std::cerr << s.message() << "\n";
      return 2;
    }
    std::cerr << "divfuzz minimize: wrote " << out << "\n";
  }
  return 0;
}

}  // namespace

int RunMinimize(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    std::cerr << "divfuzz minimize: expected one program file (.dfz)\n";
    return 2;
  }
  std::optional<ReproChild> child = ReproChild::FromEnvironment();
  if (!child.has_value()) {
    SupervisorSettings settings;
    settings.command = "minimize";
    settings.max_seconds = absl::GetFlag(FLAGS_max_seconds);
    settings.run_timeout = absl::GetFlag(FLAGS_timeout);
    settings.hang_dir = absl::GetFlag(FLAGS_hang_artifacts);
    return SuperviseRepro(args, settings);
  }
  if (child->Done(0)) return 0;
  child->Begin(0);
  const int rc = MinimizeOne(args[0], *child, child->Resume(0));
  child->End(0, rc);
  return rc;
}

}  // namespace divfuzz::fuzz
