// Turns a node's literal arguments into the boxed stack its ATen schema
// expects: positional in order, name=value by name, schema defaults for the rest.
#pragma once

#include <ATen/core/function_schema.h>
#include <ATen/core/stack.h>

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "graph/program.h"

namespace divfuzz::exec {

// Looks up a %value; returns an undefined tensor when it is unknown.
using ValueLookup = std::function<at::Tensor(const std::string&)>;

absl::StatusOr<torch::jit::Stack> BuildStack(const c10::FunctionSchema& schema,
                                             const graph::Node& node, const ValueLookup& lookup);

}  // namespace divfuzz::exec
