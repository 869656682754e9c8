// One call from a diverging program to everything a bug report needs: the
// minimal program (reducer.h), repro.py, repro_cpp/{main.cpp,CMakeLists.txt}
// and report.md. `divfuzz repro` and `divfuzz minimize` are thin wrappers.
//
//   minimize::ReproOptions o;            // targets, runners, policy, budget ...
//   o.target_a = exec::Target::kCpu;  o.target_b = exec::Target::kCuda;
//   o.signature = finding_signature;     // keep that bucket (empty: most severe root)
//   absl::StatusOr<minimize::ReproFiles> f = minimize::MakeRepro(program, o);
//   minimize::WriteReproToStore(store, id, *f);   // or WriteReproToDir(dir, *f)
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/program.h"
#include "minimize/ablation.h"
#include "minimize/reducer.h"
#include "store/findings_store.h"

namespace divfuzz::minimize {

struct ReproOptions : ReduceOptions {
  bool minimize = true;    // reduce first (else the repros run the program as given)
  std::string finding_id;  // named in the report
  // Where the repros point when the divergence does not show here (a GPU
  // finding replayed without a GPU): result `output_index` of node
  // `node_index` (-1: the node of the program's first output).
  int node_index = -1;
  int output_index = 0;
  std::string seen;  // what the fuzzer saw, one line (printed by the repros)
  // The finding's own program, when the one given is where an earlier,
  // interrupted reduction had got to (a candidate hung or crashed it): the
  // reduction's "before" numbers count from it. nullptr: the one given.
  const graph::Program* original = nullptr;
  // Rerun a CUDA finding's minimal program under each CUDA switch that
  // changes its root op's kernel (minimize/ablation.h).
  bool ablate = true;
};

struct ReproFiles {
  std::string min_dfz;  // empty unless minimized
  std::string repro_py;
  std::string main_cpp;
  std::string cmake_lists;
  std::string report_md;
  bool reproduced = false;  // the divergence showed on this machine
  std::string note;         // why not, when not
  std::optional<ReduceResult> reduction;
  std::string signature;  // of the divergence the files reproduce
  std::optional<Ablation> ablation;  // which CUDA library (none: not a CUDA finding of such an op)
};

// Errors: InvalidArgument for a program that does not type-check. A
// divergence that does not show here (or a target that cannot run here, like
// cuda without a GPU) still yields the repros, unminimized, for the node
// `node_index` names, with reproduced false and a note.
absl::StatusOr<ReproFiles> MakeRepro(const graph::Program& program, const ReproOptions& options);

// <dir>/min.dfz (when minimized), repro.py, repro_cpp/main.cpp,
// repro_cpp/CMakeLists.txt, report.md; folders created, files atomic.
absl::Status WriteReproToDir(const std::string& dir, const ReproFiles& files);

// The same files in a finding's folder, with the index fields minimized,
// repro_py, repro_cpp and report_md set (and ablation: ablation.json).
absl::Status WriteReproToStore(store::FindingsStore& store, const std::string& id,
                               const ReproFiles& files);

}  // namespace divfuzz::minimize
