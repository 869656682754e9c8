// The cpu-scalar target. ATen picks its CPU kernels' vector ISA (AVX2,
// AVX512) once per process, so ATen's scalar kernels run in a helper process
// started with ATEN_CPU_CAPABILITY=default: this binary re-executed, with the
// helper entered before main() (see scalar_helper.cc). One helper per process,
// started on first use and restarted if it dies.
#pragma once

#include <map>
#include <string>

#include "exec/run_result.h"
#include "graph/program.h"

namespace divfuzz::exec {

// Runs the program on the CPU in the helper. A dead or unreachable helper is
// a setup_error; the next call starts a new one.
RunResult RunInScalarHelper(const graph::Program& program);

// One node with the given CPU values, in the helper.
NodeResult RunNodeInScalarHelper(const graph::Node& node,
                                 const std::map<std::string, at::Tensor>& values);

}  // namespace divfuzz::exec
