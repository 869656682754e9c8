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

// Deliberately faulty: a device that lacks `op` in some way. Runs on the CPU,
// labelled `target`; every node of `op` raises `message` instead (classified
// as the executor classifies it: a dtype gap when the message says so).
exec::RunResult OneSidedErrorRun(const graph::Program& program, const ops::TypeEnv& types,
                                 exec::Target target, const std::string& op,
                                 const std::string& message);

// Deliberately faulty: `op`'s floating outputs scaled by (1 + factor), as a
// kernel with a different rounding (or a real error) would return them.
exec::RunResult ScaledOpRun(const graph::Program& program, const ops::TypeEnv& types,
                            exec::Target target, const std::string& op, double factor);

// Deliberately faulty: element `element` (flat) of `op`'s first output set to
// `value`, as a kernel rounding that one element differently would leave it.
exec::RunResult ReplaceElementRun(const graph::Program& program, const ops::TypeEnv& types,
                                  exec::Target target, const std::string& op, int64_t element,
                                  double value);

// Deliberately faulty, for some values only (as Sleef's sinh overflows early
// on the CPU's vector path): `op`'s first output is NaN wherever its first
// input exceeds `threshold`. Runs on the CPU, labelled `target`.
exec::RunResult NanAboveRun(const graph::Program& program, const ops::TypeEnv& types,
                            exec::Target target, const std::string& op, double threshold);

}  // namespace divfuzz::testing
