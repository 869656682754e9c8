// documented_domain: inputs outside the domain PyTorch documents for the op.
//
// It rests on torch.special.multigammaln's documentation: "All elements
// must be greater than :math:`\frac{p - 1}{2}`, otherwise the behavior is
// undefined."
#include "oracles/rules/rule.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "graph/printer.h"

namespace divfuzz::oracles::rules {

using graph::Literal;

// Outside its documented domain an op's behaviour is undefined by PyTorch's
// own documentation (torch.mvlgamma: "otherwise the behavior is undefined").
std::optional<RuleMatch> documented_domain(const Context& c) {
  const ops::OpSpec::DocumentedDomain& dom = c.spec.documented_domain;
  if (dom.arg < 0) return std::nullopt;
  const Literal* p = ops::FindArg(c.node, static_cast<size_t>(dom.arg), "p");
  const at::Tensor x = c.Input(0);
  if (p == nullptr || p->kind != Literal::Kind::kInt || !x.defined()) return std::nullopt;
  const double bound = dom.scale * static_cast<double>(p->i) + dom.offset;
  const int64_t outside = F64(x).gt(bound).logical_not().sum().item<int64_t>();
  if (outside == 0) return std::nullopt;
  return RuleMatch{"documented_domain",
                   absl::StrCat(outside, " input value(s) are not greater than ",
                                graph::FormatFloat(bound), ", outside the domain PyTorch documents "
                                "for ", c.node.op, ": the behaviour is undefined there")};
}

}  // namespace divfuzz::oracles::rules
