// Deliberately faulty test targets: real CPU runs with a planted bug, so the
// oracle's attribution and bucketing can be tested against known truth.
#pragma once

#include <string>

#include "exec/run_result.h"
#include "graph/program.h"
#include "ops/infer.h"

namespace divfuzz::testing {

// Mimics the seed bug report: aten::logdet returns -inf whenever |det| of its
// input is below `threshold`, however well-conditioned the matrix is.
exec::RunResult FaultyLogdetRun(const graph::Program& program, const ops::TypeEnv& types,
                                exec::Target target, double threshold = 1e-6);

// Adds a different tiny offset to every floating output on each call: a
// target that disagrees with itself.
exec::RunResult NondeterministicRun(const graph::Program& program, const ops::TypeEnv& types,
                                    exec::Target target);

// Deliberately faulty: a racing `op` (qualified, "aten::cumsum"). Its nodes'
// floating outputs get element 0 moved by a different amount on each call;
// every other node stays deterministic (and computes from the unmoved value).
exec::RunResult RacingOpRun(const graph::Program& program, const ops::TypeEnv& types,
                            exec::Target target, const std::string& op);

// Mimics PyTorch 2.11's orthogonal polynomials (oracles/nan_rule.h): at a NaN
// x with n >= 1 an aten::special_*_polynomial_* node returns a finite value
// that changes on every call, as an unset variable does (`uninitialized`), or
// NaN (the right answer). The run is labelled `target`, computed on the CPU.
exec::RunResult NanPolynomialRun(const graph::Program& program, const ops::TypeEnv& types,
                                 exec::Target target, bool uninitialized);

}  // namespace divfuzz::testing
