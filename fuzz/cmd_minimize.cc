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
  const std::string targets = ResolveTargets(absl::GetFlag(FLAGS_targets));
  std::vector<std::string> pair = absl::StrSplit(targets, ',');
  absl::StatusOr<exec::Target> ta = exec::ParseTarget(pair.empty() ? "" : pair[0]);
  absl::StatusOr<exec::Target> tb = exec::ParseTarget(pair.size() < 2 ? "" : pair[1]);
  if (pair.size() != 2 || !ta.ok() || !tb.ok()) {
    std::cerr << "divfuzz: --targets=" << targets << ": expected two of cpu, cuda, cpu-f64\n";
    return false;
  }
  o->target_a = *ta;
  o->target_b = *tb;
  if (const std::string p = absl::GetFlag(FLAGS_policy); !p.empty()) {
    absl::StatusOr<oracles::Policy> loaded = oracles::LoadPolicy(p);
    if (!loaded.ok()) {
      std::cerr << loaded.status().message() << "\n";
      return false;
    }
    o->policy = *loaded;
  }
  o->policy.cuda_tf32 = absl::GetFlag(FLAGS_tf32);
  exec::SetCudaMathMode({absl::GetFlag(FLAGS_tf32), absl::GetFlag(FLAGS_tf32)});
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
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << path << ": cannot read the file\n";
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<graph::Program> program = graph::ParseProgram(text.str(), path);
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
