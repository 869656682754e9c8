#include "oracles/nan_rule.h"

#include <ATen/ops/ge.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/where.h>

#include <limits>
#include <optional>

#include "ops/catalogue.h"
#include "oracles/attribution.h"
#include "oracles/compare.h"

namespace divfuzz::oracles {
namespace {

// Argument i as a float64 CPU tensor (a value, or a number literal).
std::optional<at::Tensor> ArgAsTensor(const graph::Node& node, size_t i,
                                      const std::map<std::string, at::Tensor>& inputs) {
  if (i >= node.args.size()) return std::nullopt;
  const graph::Literal& l = node.args[i].value;
  switch (l.kind) {
    case graph::Literal::Kind::kValue: {
      auto it = inputs.find(l.s);
      if (it == inputs.end() || !it->second.defined() || it->second.is_complex()) {
        return std::nullopt;
      }
      return it->second.detach().cpu().to(at::kDouble);
    }
    case graph::Literal::Kind::kFloat:
      return at::scalar_tensor(l.f, at::kDouble);
    case graph::Literal::Kind::kInt:
      return at::scalar_tensor(static_cast<double>(l.i), at::kDouble);
    case graph::Literal::Kind::kBool:
      return at::scalar_tensor(l.b ? 1.0 : 0.0, at::kDouble);
    default:
      return std::nullopt;
  }
}

// Where the rule defines the value (NaN): a NaN x with n >= 1, broadcast to
// the result's shape; nullopt for another op or arguments it cannot read.
std::optional<at::Tensor> NanRuleMask(const graph::Node& node,
                                      const std::map<std::string, at::Tensor>& inputs) {
  if (!IsOrthogonalPolynomial(node.op)) return std::nullopt;
  const std::optional<at::Tensor> x = ArgAsTensor(node, 0, inputs);
  const std::optional<at::Tensor> n = ArgAsTensor(node, 1, inputs);
  if (!x || !n) return std::nullopt;
  return at::isnan(*x).logical_and(at::ge(*n, 1));
}

}  // namespace

bool IsOrthogonalPolynomial(const std::string& op) {
  const ops::OpSpec* spec = ops::FindAnyOverload(op);
  return spec != nullptr && (spec->hints & ops::kNanOnlyFromDegreeOne);
}

void CorrectReference(const graph::Node& node, const std::map<std::string, at::Tensor>& inputs,
                      std::vector<at::Tensor>* outputs) {
  if (!IsOrthogonalPolynomial(node.op) || outputs->empty() || !(*outputs)[0].defined() ||
      !(*outputs)[0].is_floating_point()) {
    return;
  }
  const std::optional<at::Tensor> nan = NanRuleMask(node, inputs);
  at::Tensor& out = (*outputs)[0];
  if (!nan || nan->sizes() != out.sizes()) return;  // x and n broadcast to the result's shape
  out = at::where(*nan, at::scalar_tensor(std::numeric_limits<double>::quiet_NaN(), out.options()),
                  out)
            .contiguous();
}

bool DefinedByNanRule(const graph::Node& node, const std::map<std::string, at::Tensor>& inputs,
                      const at::Tensor& only) {
  if (!only.defined()) return false;
  const std::optional<at::Tensor> nan = NanRuleMask(node, inputs);
  if (!nan || nan->numel() != only.numel()) return false;
  const at::Tensor differing = only.reshape({-1}).to(at::kBool);
  return differing.any().item<bool>() &&
         !differing.logical_and(nan->reshape({-1}).logical_not()).any().item<bool>();
}

std::optional<Divergence> RerunDifferenceOutsideNanRule(const graph::Program& program, int node,
                                                        const exec::RunResult& first,
                                                        const exec::RunResult& again) {
  const exec::NodeResult& one = first.nodes[node];
  const exec::NodeResult& two = again.nodes[node];
  const graph::Node& n = program.nodes[node];
  if (!IsOrthogonalPolynomial(n.op) || one.error || two.error) return RerunDifference(one, two);
  exec::NodeResult a = one, b = two;
  // Each run's own x: an upstream difference in x is still a difference.
  CorrectReference(n, NodeInputs(program, node, first), &a.outputs);
  CorrectReference(n, NodeInputs(program, node, again), &b.outputs);
  return RerunDifference(a, b);
}

}  // namespace divfuzz::oracles
