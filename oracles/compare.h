// Oracle v1: compares two targets' runs node by node and output by output,
// classifies each divergence and marks the roots (nodes whose inputs agree).
#pragma once

#include <ATen/core/Tensor.h>

#include "exec/run_result.h"
#include "graph/program.h"
#include "ops/infer.h"
#include "oracles/policy.h"
#include "oracles/verdict.h"

namespace divfuzz::oracles {

// b is the expected side: tolerance is atol + rtol * |b|, as in assert_close.
Verdict Compare(const graph::Program& program, const ops::TypeEnv& types, const exec::RunResult& a,
                const exec::RunResult& b, const Policy& policy = DefaultPolicy());

// Compares one output; nullopt when the two agree. Fills class, element,
// values and errors; the caller fills node, op, value, root.
std::optional<Divergence> CompareTensors(const at::Tensor& a, const at::Tensor& b,
                                         graph::DType dtype, Tolerance tolerance);
// With assert_close's default tolerance for the dtype.
std::optional<Divergence> CompareTensors(const at::Tensor& a, const at::Tensor& b,
                                         graph::DType dtype);

// Where two outputs of one shape differ (class, or beyond the tolerance), as
// a flat bool tensor over their real view (complex: (re, im) pairs);
// undefined when the shapes differ. Blame rests on these elements only.
at::Tensor DifferingElements(const at::Tensor& a, const at::Tensor& b, graph::DType dtype,
                             Tolerance tolerance);

// Two runs of one target bit for bit: the first element that differs (a NaN
// matches any NaN in the same place; -0.0 and 0.0 differ), as a
// kNondeterminism divergence with element, values and detail; nullopt when
// identical. The determinism check's comparison, shared by the fuzzing
// harness and the reducer so both judge nondeterminism alike.
std::optional<Divergence> BitwiseDifference(const at::Tensor& first, const at::Tensor& again);
// One node in two runs: an error against no error, then each output in turn
// (output_index says which). Both raising counts as the same.
std::optional<Divergence> RerunDifference(const exec::NodeResult& first,
                                          const exec::NodeResult& again);

}  // namespace divfuzz::oracles
