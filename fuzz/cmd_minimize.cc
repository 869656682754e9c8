// divfuzz minimize FILE.dfz: reduce a diverging program to a minimal one that
// keeps its root divergence's signature (minimize/reducer.h), printing each
// pass's progress to stderr.
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "exec/executor.h"
#include "fuzz/cli_common.h"
#include "fuzz/commands.h"
#include "fuzz/flags.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "minimize/reducer.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {
namespace {

// Targets, policy, budget, signature and passes from the flags; false (with
// a message) on a bad value.
bool ReduceOptionsFromFlags(minimize::ReduceOptions* o) {
  absl::StatusOr<std::pair<exec::Target, exec::Target>> pair =
      TargetPairFromFlag(absl::GetFlag(FLAGS_targets));
  absl::StatusOr<oracles::Policy> policy = PolicyFromFlags();
  for (const absl::Status& s : {pair.status(), policy.status()}) {
    if (!s.ok()) {
      std::cerr << s.message() << "\n";
      return false;
    }
  }
  o->target_a = pair->first;
  o->target_b = pair->second;
  o->policy = *policy;
  o->max_seconds = absl::GetFlag(FLAGS_max_seconds);
  o->signature = absl::GetFlag(FLAGS_signature);
  for (absl::string_view p : absl::StrSplit(absl::GetFlag(FLAGS_passes), ',', absl::SkipEmpty())) {
    o->passes.emplace_back(p);
  }
  o->log = &std::cerr;
  return true;
}

}  // namespace

int RunMinimize(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    std::cerr << "divfuzz minimize: expected one program file (.dfz)\n";
    return 2;
  }
  const std::string& path = args[0];
  absl::StatusOr<graph::Program> program = LoadProgramFile(path);
  if (!program.ok()) {
    std::cerr << program.status().message() << "\n";
    return 2;
  }
  minimize::ReduceOptions options;
  if (!ReduceOptionsFromFlags(&options)) return 2;
  absl::StatusOr<minimize::ReduceResult> r = minimize::Reduce(*program, options);
  if (!r.ok()) {
    std::cerr << path << ": " << r.status().message() << "\n";
    return r.status().code() == absl::StatusCode::kNotFound ? 1 : 2;
  }
  std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    out = absl::EndsWith(path, ".dfz") ? path.substr(0, path.size() - 4) + ".min.dfz"
                                       : path + ".min.dfz";
  }
  const std::string printed = graph::PrintProgram(r->program);
  if (out == "-") {
    std::cout << printed;
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

}  // namespace divfuzz::fuzz
