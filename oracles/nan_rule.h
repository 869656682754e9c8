// Where the float64 reference is known to be wrong: PyTorch's orthogonal
// polynomials (aten::special_*_polynomial_*, arguments x and n) stop their
// recurrence at a NaN and return a variable that was never set, so at a NaN x
// with n >= 2 both the kernels and the float64 reference (the same CPU
// kernel) give whatever the register held (torch 2.11; on the H100 the oracle
// blamed cuda, which returns NaN, for such elements). The value there is NaN
// for every n >= 1, and the reference is corrected to say so.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exec/run_result.h"
#include "graph/program.h"
#include "oracles/verdict.h"

namespace divfuzz::oracles {

// Whether `op` (qualified, any overload) is one of the orthogonal polynomials.
bool IsOrthogonalPolynomial(const std::string& op);

// The node's reference `outputs` (float64 or its dtype) with NaN where x is
// NaN and n >= 1; `inputs` are the node's tensor arguments by value name.
// Unchanged for other ops.
void CorrectReference(const graph::Node& node, const std::map<std::string, at::Tensor>& inputs,
                      std::vector<at::Tensor>* outputs);

// Whether every element the sides differ at (`only`, a mask over output 0)
// is one the rule above defines (a NaN x, n >= 1): the corrected reference
// is the rule's value there, not the kernel's, so it judges a float64
// program too (session 52's 1fc0078c: the CPU's unset variable, 3.2e-319,
// against CUDA's NaN at U_6(NaN), left undecided).
bool DefinedByNanRule(const graph::Node& node, const std::map<std::string, at::Tensor>& inputs,
                      const at::Tensor& only);

// Two runs of one target at node `node`, as RerunDifference compares them,
// except that elements the rule above defines count as NaN in both runs: the
// unset variable there differs from run to run, and that is the wrong value
// the oracle already reports (a non-NaN at a NaN x), not a second finding.
std::optional<Divergence> RerunDifferenceOutsideNanRule(const graph::Program& program, int node,
                                                        const exec::RunResult& first,
                                                        const exec::RunResult& again);

}  // namespace divfuzz::oracles
