// Builds one valid node of a catalogue op over a pool of typed values,
// creating new inputs where no pool value fits. Generic over ops::Rule: the
// builder knows no op by name (NNSmith's design).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/program.h"
#include "mutators/random.h"
#include "ops/generic.h"
#include "ops/infer.h"
#include "ops/op_spec.h"

namespace divfuzz::mutators {

// Largest tensor the generator creates: keeps executions fast while still
// crossing vectorized-loop widths (16/32 elements) and tails.
inline constexpr int64_t kMaxGeneratedNumel = 4096;

class NodeBuilder {
 public:
  // `program` receives new inputs and nodes; `types` must type every value
  // defined so far. Names are fresh (%x<N> inputs, %v<N> results).
  NodeBuilder(graph::Program& program, ops::TypeEnv& types, Random& random);

  // Appends a node of `spec` (and any helper nodes/inputs it needs); returns
  // false, leaving the program unchanged, when no valid node could be made.
  // one_sided: a dtype some device rejects (ops::OneSided), not a kept one.
  bool Append(const ops::OpSpec& spec, graph::DType dtype, bool one_sided = false);

  // A node of a generic op (ops/generic.h) with the arguments synthesized from
  // its schema in one shape form; false, leaving the program unchanged, when
  // the Meta-device inference rejects them.
  bool AppendGeneric(const ops::GenericOp& op, graph::DType dtype, ops::ShapeForm form);

  // Rewrites `node` as a call of the generic op `spec` on the node's own
  // tensor operands (in order) with fresh attributes; false, leaving the node
  // unchanged, when the operand count differs or inference rejects it.
  bool Rebind(const ops::OpSpec& spec, graph::Node& node);

  // Regenerates a node's non-tensor arguments (attributes) for its spec.
  void RegenerateAttributes(const ops::OpSpec& spec, graph::Node& node);

  // A fresh input of the type, with a payload suited to the domain.
  std::string NewInput(const graph::TensorType& type, ops::Domain domain);
  graph::Payload RandomPayload(graph::DType dtype, ops::Domain domain);
  std::vector<int64_t> RandomShape(int min_rank, int max_rank);

 private:
  std::string FreshName(const char* prefix);
  bool AppendGenericOp(const ops::OpSpec& spec, graph::DType dtype, bool one_sided);
  // scaled_dot_product_attention with attention's shapes (attention_builder.cc).
  bool AppendAttention(const ops::OpSpec& spec, graph::DType dtype);
  void RegenerateGeneric(const ops::GenericOp& op, graph::Node& node);
  // A literal for a non-tensor schema argument, given the first tensor's type;
  // nullopt when the generator cannot make one.
  // One of the values either device takes for a per-device argument.
  graph::Literal DeviceArgumentValue(const ops::DeviceArgument& da);
  std::optional<graph::Literal> GenericLiteral(const ops::GenericOp& op, const ops::GenericArg& a,
                                               const graph::TensorType& primary);
  // A pool value of this dtype satisfying pred, or empty.
  template <typename Pred>
  std::string Reuse(graph::DType dtype, Pred pred, double probability);

  graph::Program& program_;
  ops::TypeEnv& types_;
  Random& random_;
};

// A random dtype for a fresh program, weighted towards f32.
graph::DType RandomDType(Random& random);

}  // namespace divfuzz::mutators
