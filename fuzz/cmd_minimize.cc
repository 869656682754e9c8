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
namespace {}  // namespace

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
  if (absl::Status s = ReduceOptionsFromFlags(absl::GetFlag(FLAGS_targets), &options); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 2;
  }
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
