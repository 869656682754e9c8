// An expected-by-policy rule (oracles/rules.def): judged on the root node's
// own inputs, it returns the evidence when it explains the divergence.
// MatchExpectedRule (oracles/expected_rules.cc) tries the rules in its kTried
// order, each only when the policy has it on; the first match wins.
//
// Adding a rule: write oracles/rules/<name>.cc defining
//   std::optional<RuleMatch> rules::<name>(const Context& c);
// add its line to oracles/rules.def and its place to kTried (the build fails
// until it has one). Helpers only that rule uses stay in its file; shared
// ones go here.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exec/run_result.h"
#include "graph/program.h"
#include "ops/infer.h"
#include "oracles/expected_rules.h"
#include "oracles/policy.h"
#include "oracles/verdict.h"

namespace divfuzz::oracles::rules {

// What every rule sees: the divergence, both runs and the root node.
struct Context {
  const graph::Program& program;
  const ops::TypeEnv& types;
  const exec::RunResult& a;
  const exec::RunResult& b;
  const Policy& policy;
  const Divergence& d;
  const graph::Node& node;
  const ops::OpSpec& spec;
  std::map<std::string, at::Tensor> inputs;  // the root's inputs as side A had them, float64
  graph::DType dtype;                        // the diverging output's dtype

  at::Tensor Input(size_t i) const {
    if (i >= node.args.size() || node.args[i].value.kind != graph::Literal::Kind::kValue) {
      return {};
    }
    auto it = inputs.find(node.args[i].value.s);
    return it == inputs.end() ? at::Tensor() : it->second;
  }
  // The program dtypes of the node's tensor arguments (list items included).
  std::vector<graph::DType> ArgDTypes() const;
  // The diverging output of side A and of side B, as float64 (or undefined).
  at::Tensor OutA() const { return AsF64(Output(a, d.node_index, d.output_index)); }
  at::Tensor OutB() const { return AsF64(Output(b, d.node_index, d.output_index)); }
  static at::Tensor AsF64(const at::Tensor& t) {
    return t.defined() ? t.to(at::kDouble).contiguous() : t;
  }
  // The output of a side's root node, or undefined.
  static at::Tensor Output(const exec::RunResult& r, int node, size_t o) {
    if (node < 0 || static_cast<size_t>(node) >= r.nodes.size()) return {};
    const exec::NodeResult& n = r.nodes[node];
    return o < n.outputs.size() ? n.outputs[o] : at::Tensor();
  }
};

// One function per rule of rules.def, named after it.
#define DIVFUZZ_GRADIENT_RULE(name, meaning)  // oracles/rules/gradient_rule.h
#define DIVFUZZ_RULE(name, meaning) std::optional<RuleMatch> name(const Context& c);
#include "oracles/rules.def"

inline at::Tensor F64(const at::Tensor& t) {
  return t.defined() ? t.to(at::kDouble).contiguous() : t;
}

// The largest finite |x| (0 when there is none).
double FiniteAbsMax(const at::Tensor& t);

// A catalogue position (-1: keyword-only) as FindArg's position.
inline size_t ArgPos(int pos) {
  return pos < 0 ? std::numeric_limits<size_t>::max() : static_cast<size_t>(pos);
}

int64_t IntArgOr(const graph::Node& node, size_t pos, const char* name, int64_t fallback);

// A grid_sampler (OpSpec::grid) with reflection padding (padding_mode 2 of
// torch.nn.functional.grid_sample): a coordinate folds into the input by its
// period, so a huge or non-finite one defines no position (pytorch#24823).
bool ReflectsGrid(const ops::OpSpec& spec, const graph::Node& node);

// Where reflection defines no position for a finite grid coordinate of
// magnitude `magnitude` over a spatial size `size`: the unnormalized
// position (|g| + 1)·size/2, when it is not finite or its rounding in the
// kernel's float (float64 for an f64 op) exceeds the period 2·size
// (pytorch#51911); nullopt where the position is defined.
std::optional<double> ReflectionLosesPosition(double magnitude, int64_t size, graph::DType dtype);

// "aten::index_put_" -> "index_put": in-place variants race like the others.
std::string BaseName(const std::string& op);

// Whether the node's `accumulate` argument (at `pos`) is true.
bool Accumulates(const graph::Node& node, size_t pos);

// The matrix whose conditioning an op inherits (its catalogue entry's
// `conditioned`: the argument at that position, not the node's n-th distinct
// value, since cholesky_solve(X, X) reads one value twice; one triangle, or
// L L^H for a Cholesky factor), in float64 or complex128 as `inputs` hold
// it; undefined where the node has none or it is not a matrix.
at::Tensor ConditionedMatrixOf(const graph::Node& node, const ops::OpSpec& spec,
                               const std::map<std::string, at::Tensor>& inputs);

}  // namespace divfuzz::oracles::rules
