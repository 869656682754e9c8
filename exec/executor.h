// Runs a program on a target through the c10 dispatcher, so any ATen op named
// by its schema runs without per-op code. Never throws.
#pragma once

#include "absl/strings/string_view.h"
#include "exec/run_result.h"
#include "graph/program.h"
#include "ops/infer.h"

namespace divfuzz::exec {

bool CudaAvailable();

// `types` are the program's inferred types (ops::InferProgram); the cpu-f64
// target rounds its results back to them.
RunResult Run(const graph::Program& program, const ops::TypeEnv& types, Target target);

absl::string_view ErrorKindName(NodeError::Kind kind);

}  // namespace divfuzz::exec
