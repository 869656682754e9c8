// The cpu-scalar target. ATen picks its CPU kernels' vector ISA (AVX2,
// AVX512) once per process, so ATen's scalar kernels run in a helper process
// started with ATEN_CPU_CAPABILITY=default: this binary re-executed, with the
// helper entered before main() (see scalar_helper.cc). One helper per process,
// started on first use and restarted if it dies.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "exec/run_result.h"
#include "graph/program.h"

namespace divfuzz::exec {

// Runs the program on the CPU in the helper. A dead or unreachable helper is
// a setup_error; the next call starts a new one.
RunResult RunInScalarHelper(const graph::Program& program);

// One node with the given CPU values, in the helper.
NodeResult RunNodeInScalarHelper(const graph::Node& node,
                                 const std::map<std::string, at::Tensor>& values);

// One node's backward in the helper (RunNodeVjp's plain case): the node's
// forward under autograd from `values`, then torch::autograd::grad of its
// results with `cotangents` (one per result; undefined: none) with respect
// to the values named `wrt`. Gradients in wrt's order, on the CPU.
VjpResult RunNodeVjpInScalarHelper(const graph::Node& node,
                                   const std::map<std::string, at::Tensor>& values,
                                   const std::vector<at::Tensor>& cotangents,
                                   const std::vector<std::string>& wrt);

}  // namespace divfuzz::exec
