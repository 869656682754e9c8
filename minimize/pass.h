// A reduction pass (C-Reduce / fx_minifier style): one transformation that
// proposes smaller candidates of the current program and keeps those the
// interestingness test accepts. Passes know nothing of each other; the reducer
// runs them in the order of passes/passes.def until none makes progress.
//
// Adding a pass: write minimize/passes/<name>.cc defining
//   void <Name>Pass(ReductionContext& ctx);
// and add one line to minimize/passes/passes.def. Nothing else changes.
#pragma once

#include <string>
#include <vector>

#include "exec/run_result.h"
#include "graph/program.h"
#include "ops/infer.h"
#include "oracles/verdict.h"

namespace divfuzz::minimize {

class ReductionContext {
 public:
  virtual ~ReductionContext() = default;
  // The current program: it type-checks and reproduces the signature.
  virtual const graph::Program& program() const = 0;
  virtual const ops::TypeEnv& types() const = 0;
  // Both targets' runs of program() (per-node outputs, for freezing).
  virtual const exec::RunResult& run_a() const = 0;
  virtual const exec::RunResult& run_b() const = 0;
  // The root divergence with the signature in program() (node_index, value ...).
  virtual const oracles::Divergence& root() const = 0;
  // Tests a candidate: when it type-checks and reproduces the signature on
  // the same target pair it becomes the current program and Try returns
  // true. Candidates already tested are answered from a cache. Returns false
  // without testing once the time budget is spent.
  virtual bool Try(const graph::Program& candidate) = 0;
  virtual bool OutOfTime() const = 0;
};

using PassFn = void (*)(ReductionContext& ctx);

struct PassInfo {
  const char* name;
  const char* summary;
  PassFn run;
};

// Every pass, in the order the reducer runs them (passes/passes.def).
const std::vector<PassInfo>& Passes();

// The diverging value of the current program (the root's output), or the
// root node's first result.
std::string RootValue(const ReductionContext& ctx);

}  // namespace divfuzz::minimize
