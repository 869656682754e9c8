// Program transformations the reduction passes share: slicing, rewiring uses,
// freezing a computed value into an input, and resizing an input's payload.
// Each returns a new candidate; whether it is kept is the interestingness
// test's call (reducer.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "exec/run_result.h"
#include "graph/program.h"
#include "ops/infer.h"

namespace divfuzz::minimize {

// The values a node reads (its %refs, lists included), unique, in argument order.
std::vector<std::string> Uses(const graph::Node& node);

// Replaces every use (not definition) of a key of `renames` by its value.
void RenameUses(graph::Program& program, const std::map<std::string, std::string>& renames);

// Keeps the nodes that `live` values (transitively) depend on and the inputs
// they read; the outputs become `live`. Node order is kept.
graph::Program Slice(const graph::Program& program, const std::vector<std::string>& live);

// Removes the nodes `cut` (indices) and rewires their results: with `bypass`,
// a result becomes the first operand of its node that has the same type
// (arccosh(%z) -> %z); otherwise, or when there is none, an input holding the
// value `run` computed for it (FrozenInput). Then slices to `live`. nullopt
// when a value cannot be frozen (no such output in `run`, too large).
std::optional<graph::Program> CutNodes(const graph::Program& program, const ops::TypeEnv& types,
                                       const exec::RunResult& run, const std::set<int>& cut,
                                       bool bypass, const std::vector<std::string>& live);

// Indices of the nodes `node` depends on, transitively, ascending.
std::set<int> Ancestors(const graph::Program& program, int node);

// Total elements over the program's inputs.
int64_t InputElements(const graph::Program& program);

// An input named `name` of `type` whose values() payload holds exactly the
// tensor's elements (at most `max_elements`); nullopt when the tensor does not
// have that type or a value is not exactly a double (i64 beyond 2^53).
std::optional<graph::Input> FrozenInput(const std::string& name, const graph::TensorType& type,
                                        const at::Tensor& value, int64_t max_elements = 1 << 16);

// The input with shape `sizes` over the old dims `kept` (ascending indices into
// the old shape, one per new dim). `offsets` (one per old dim; empty: all 0)
// says where the kept window starts along every old dim, and which index of a
// dropped dim is kept. A values() payload keeps that window (by default the
// leading elements along every kept dim, index 0 of every dropped dim); fill()
// is kept; a generator payload is kept (it draws fresh values for the new
// shape) unless `slice_generators`, which turns it into the sliced values().
graph::Input ResizeInput(const graph::Input& input, const std::vector<int>& kept,
                         const std::vector<int64_t>& sizes,
                         const std::vector<int64_t>& offsets = {}, bool slice_generators = false);

// The shortest decimal with at most `digits` significant digits near v,
// rounded to the dtype (RoundToDType); non-finite values are kept.
double RoundDigits(double v, int digits, graph::DType dtype);

}  // namespace divfuzz::minimize
