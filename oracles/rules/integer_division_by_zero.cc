// integer_division_by_zero: an integer division, floor division, fmod or
// remainder by zero raises "ZeroDivisionError" on the CPU and returns a
// value on CUDA. PyTorch's own test_fmod_remainder_by_zero_integral asserts
// exactly this split and calls the CUDA result "an undefined behavior"
// (pytorch#135330, #165650): integers have no value for x / 0.
#include "oracles/rules/rule.h"

#include <ATen/ops/any.h>
#include <ATen/ops/eq.h>

#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace divfuzz::oracles::rules {
namespace {

using graph::Literal;

bool RaisedDivisionByZero(const exec::RunResult& r, int node) {
  if (node < 0 || static_cast<size_t>(node) >= r.nodes.size()) return false;
  const std::optional<exec::NodeError>& e = r.nodes[node].error;
  return e && absl::StrContains(e->message, "ZeroDivisionError");
}

bool IntegralArg(const Context& c, size_t pos) {
  if (pos >= c.node.args.size()) return false;
  const Literal& l = c.node.args[pos].value;
  if (l.kind == Literal::Kind::kInt || l.kind == Literal::Kind::kBool) return true;
  if (l.kind != Literal::Kind::kValue) return false;
  auto it = c.types.find(l.s);
  return it != c.types.end() && graph::IsIntegral(it->second.dtype);
}

}  // namespace

std::optional<RuleMatch> integer_division_by_zero(const Context& c) {
  if (c.d.cls != DivergenceClass::kErrorSplit) return std::nullopt;
  const std::string base = c.node.op;
  if (base != "aten::floor_divide" && base != "aten::fmod" && base != "aten::remainder" &&
      base != "aten::div" && base != "aten::divide") {
    return std::nullopt;
  }
  if (!RaisedDivisionByZero(c.a, c.d.node_index) && !RaisedDivisionByZero(c.b, c.d.node_index)) {
    return std::nullopt;
  }
  if (!IntegralArg(c, 0) || !IntegralArg(c, 1)) return std::nullopt;
  const Literal& divisor = c.node.args[1].value;
  bool zero = false;
  if (divisor.kind == Literal::Kind::kInt) {
    zero = divisor.i == 0;
  } else if (divisor.kind == Literal::Kind::kBool) {
    zero = !divisor.b;
  } else {
    const at::Tensor t = c.Input(1);
    zero = t.defined() && at::any(at::eq(t, 0)).item<bool>();
  }
  if (!zero) return std::nullopt;
  return RuleMatch{"integer_division_by_zero",
                   absl::StrCat(c.node.QualifiedName(), " divides integers by zero: one side "
                                "raises ZeroDivisionError, the other returns a value, which "
                                "PyTorch's test_fmod_remainder_by_zero_integral calls undefined "
                                "behaviour")};
}

}  // namespace divfuzz::oracles::rules
