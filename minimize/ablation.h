// The ablation: a finding blamed on CUDA whose root op has kernels that
// process-wide switches choose (ops::OpSpec::cuda_kernels) is rerun, minimal
// program and all, with its CUDA side under each switch that changes that
// op's kernel (exec/cuda_variants.def), so report.md can say which library
// computed it: "cuda (default libraries): wrong; cuda+magma (MAGMA): matches
// the witness: the defect is in the default path, not MAGMA's".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "exec/target.h"
#include "graph/program.h"
#include "minimize/reducer.h"
#include "oracles/verdict.h"

namespace divfuzz::minimize {

struct AblationRow {
  enum class Outcome {
    kWrong,    // the same node diverges with this side blamed (or both)
    kMatches,  // no divergence: it agrees with the other side, which matched the witness
    kRaises,   // the node raised here
    kOther,    // another divergence (another node, or the other side blamed)
    kNotRun,   // could not run here (no GPU)
  };
  std::string target;   // "cuda+magma"
  std::string library;  // "MAGMA", "default libraries"
  Outcome outcome = Outcome::kNotRun;
  std::string detail;   // the class and values, the error, or why not run
};

struct Ablation {
  std::string op;                 // the root op
  std::string side;               // the finding's CUDA target ("cuda")
  std::vector<AblationRow> rows;  // the finding's own target first
  std::string conclusion;         // AblationConclusion(rows)
};

absl::string_view OutcomeText(AblationRow::Outcome o);  // "wrong", "matches the witness" ...

// The CUDA side an ablation reruns: for a bug or divergence tier finding
// (not nondeterminism) with a CUDA side that is blamed or undecided. nullopt
// when none.
std::optional<exec::Target> AblationSide(const oracles::Divergence& d, exec::Target a,
                                         exec::Target b);

// The targets to rerun `side` as: under each variant whose kernel classes
// meet `op_kernels` (a variant of a group the side already has replaces
// it), and without switches when the side has some; never `side` itself.
std::vector<exec::Target> AblationTargets(exec::Target side, uint32_t op_kernels);

// What the rows show (rows[0]: the finding's own target).
std::string AblationConclusion(const std::vector<AblationRow>& rows);

// report.md's section ("## Which CUDA library", a table and the conclusion)
// and the one line for ablation.json's summary; empty for no ablation.
std::string RenderAblation(const Ablation& ablation);
std::string AblationLine(const Ablation& ablation);
// ablation.json: {"op", "side", "rows": [{"target", "library", "outcome", "detail"}], "conclusion", "summary"}.
std::string AblationJson(const Ablation& ablation);

// Runs it for `eval`'s root (Evaluate with the CUDA side replaced by each
// AblationTargets entry; the side's runner, when a test set one, runs them).
// nullopt when the finding does not qualify.
std::optional<Ablation> RunAblation(const graph::Program& program, const Evaluation& eval,
                                    const EvalOptions& options);

}  // namespace divfuzz::minimize
