// The helpers rules share (rule.h).
#include "oracles/rules/rule.h"

#include <ATen/ops/abs.h>
#include <ATen/ops/isfinite.h>

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

std::string BaseName(const std::string& op) {
  std::string base = op.substr(op.rfind(':') + 1);
  if (!base.empty() && base.back() == '_') base.pop_back();
  return base;
}

bool Accumulates(const graph::Node& node, size_t pos) {
  const graph::Literal* a = ops::FindArg(node, pos, "accumulate");
  return a != nullptr && a->kind == graph::Literal::Kind::kBool && a->b;
}

}  // namespace divfuzz::oracles::rules
