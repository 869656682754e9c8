// Shape and dtype inference over the catalogue's rules. The generator uses it
// to chain ops; the CLI uses it to reject programs with a clear message before
// anything runs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/program.h"
#include "ops/op_spec.h"

namespace divfuzz::ops {

using TypeEnv = std::map<std::string, graph::TensorType, std::less<>>;

graph::DType PromoteTypes(graph::DType a, graph::DType b);
// The dtype of a binary op's result, with torch's special case for 0-d operands.
graph::DType ResultType(const graph::TensorType& a, const graph::TensorType& b);
absl::StatusOr<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b);

// Number of leading tensor arguments a rule takes (linear: 2, bias optional).
int TensorArity(Rule rule);

// Output types of one node whose tensor inputs are typed in env. The message
// of an error says what was expected, without a location.
absl::StatusOr<std::vector<graph::TensorType>> InferNode(const OpSpec& spec,
                                                         const graph::Node& node,
                                                         const TypeEnv& env);

// Types of every value of a program; errors carry file:line:col.
absl::StatusOr<TypeEnv> InferProgram(const graph::Program& program,
                                     absl::string_view filename = "<input>");

// The argument at a position, or by name; nullptr when absent.
const graph::Literal* FindArg(const graph::Node& node, size_t position, absl::string_view name);

}  // namespace divfuzz::ops
