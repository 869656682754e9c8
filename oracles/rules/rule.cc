// The helpers rules share (rule.h).
#include "oracles/rules/rule.h"

#include <ATen/ops/abs.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/tril.h>
#include <ATen/ops/triu.h>
#include <ATen/ops/isfinite.h>

#include <cmath>

namespace divfuzz::oracles::rules {

using graph::Literal;

std::vector<graph::DType> Context::ArgDTypes() const {
  std::vector<graph::DType> out;
  auto add = [&](const Literal& l) {
    if (l.kind != Literal::Kind::kValue) return;
    auto it = types.find(l.s);
    if (it != types.end()) out.push_back(it->second.dtype);
  };
  for (const graph::Argument& arg : node.args) {
    add(arg.value);
    for (const Literal& item : arg.value.list) add(item);
  }
  return out;
}

double FiniteAbsMax(const at::Tensor& t) {
  const at::Tensor a = at::abs(t.to(at::kDouble));
  const at::Tensor finite = a.masked_select(at::isfinite(a));
  return finite.numel() == 0 ? 0.0 : finite.max().item<double>();
}

int64_t IntArgOr(const graph::Node& node, size_t pos, const char* name, int64_t fallback) {
  const Literal* l = ops::FindArg(node, pos, name);
  return l != nullptr && l->kind == Literal::Kind::kInt ? l->i : fallback;
}

bool ReflectsGrid(const ops::OpSpec& spec, const graph::Node& node) {
  return spec.grid.arg >= 0 && IntArgOr(node, ArgPos(spec.grid.padding_arg), "padding_mode", -1) == 2;
}

std::optional<double> ReflectionLosesPosition(double magnitude, int64_t size,
                                              graph::DType dtype) {
  const double u = dtype == graph::DType::kF64 ? graph::Epsilon(graph::DType::kF64)
                                               : graph::Epsilon(graph::DType::kF32);
  const double position = (magnitude + 1) * static_cast<double>(size) / 2;
  if (std::isfinite(position) && position * u <= 2.0 * static_cast<double>(size)) {
    return std::nullopt;
  }
  return position;
}

std::string BaseName(const std::string& op) {
  std::string base = op.substr(op.rfind(':') + 1);
  if (!base.empty() && base.back() == '_') base.pop_back();
  return base;
}

bool Accumulates(const graph::Node& node, size_t pos) {
  const graph::Literal* a = ops::FindArg(node, pos, "accumulate");
  return a != nullptr && a->kind == graph::Literal::Kind::kBool && a->b;
}

at::Tensor ConditionedMatrixOf(const graph::Node& node, const ops::OpSpec& spec,
                               const std::map<std::string, at::Tensor>& inputs) {
  const ops::ConditionedMatrix& cm = spec.conditioned;
  const size_t pos = static_cast<size_t>(std::max(0, cm.arg));
  const Literal& arg = node.args.size() > pos ? node.args[pos].value : node.args[0].value;
  if (arg.kind != Literal::Kind::kValue) return {};
  auto found = inputs.find(arg.s);
  if (found == inputs.end() || !found->second.defined() || found->second.dim() < 2) return {};
  at::Tensor x = found->second.to(found->second.is_complex() ? at::kComplexDouble : at::kDouble)
                     .contiguous();
  if (cm.as != ops::ConditionedAs::kWhole) {
    // The op reads one triangle (and cholesky_solve solves with L L^H).
    const Literal* u = ops::FindArg(node, cm.upper_pos < 0 ? 1000 : cm.upper_pos, "upper");
    const bool upper = u != nullptr && u->kind == Literal::Kind::kBool ? u->b : cm.upper_default;
    x = upper ? at::triu(x) : at::tril(x);
    if (cm.as == ops::ConditionedAs::kCholeskyFactor) {
      x = upper ? at::matmul(x.mH(), x) : at::matmul(x, x.mH());
    }
  }
  return x;
}

}  // namespace divfuzz::oracles::rules
