// float_to_int_casts: casts of non-finite or out-of-range floats to integers, the op's own
// (torch.Tensor.to) or one made inside an op (InternalIntCast).
//
// It rests on the C++ rule ATen's casts inherit ([conv.fpint]): "The
// behavior is undefined if the truncated value cannot be represented in the
// destination type." PyTorch documents no saturation for such casts.
#include "oracles/rules/rule.h"

#include <ATen/ops/isfinite.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/scalar_tensor.h>

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"

namespace divfuzz::oracles::rules {

using graph::Literal;

namespace {

// The integer dtype a cast converts to: its dtype= argument, or, for the
// casts that take it from another tensor (to.other, type_as), its result's.
std::optional<graph::DType> CastTarget(const Context& c) {
  if (const Literal* to = ops::FindArg(c.node, 1, "dtype");
      to != nullptr && to->kind == Literal::Kind::kDType && c.spec.rule == ops::Rule::kCast) {
    return to->dtype;
  }
  const std::string op = c.node.QualifiedName();
  const bool from_other = op == "aten::to.other" || op == "aten::type_as";
  if (!from_other || c.node.results.empty()) return std::nullopt;
  auto it = c.types.find(c.node.results[0]);
  if (it == c.types.end()) return std::nullopt;
  return it->second.dtype;
}

std::optional<RuleMatch> FloatToIntCast(const Context& c) {
  const std::optional<graph::DType> target = CastTarget(c);
  const at::Tensor x = c.Input(0);
  if (!x.defined() || !target || !graph::IsIntegral(*target)) return std::nullopt;
  const Literal to_literal = Literal::OfDType(*target);
  const Literal* to = &to_literal;
  auto it = c.types.find(c.node.args[0].value.s);
  if (it == c.types.end() || !graph::IsFloating(it->second.dtype)) return std::nullopt;
  const at::Tensor bad = at::logical_or(
      at::isfinite(x).logical_not(),
      at::logical_or(x.lt(graph::MinValue(to->dtype)), x.gt(graph::MaxFinite(to->dtype))));
  const int64_t n = bad.sum().item<int64_t>();
  if (n == 0) return std::nullopt;
  return RuleMatch{"float_to_int_casts",
                   absl::StrCat(n, " input element(s) are non-finite or outside the range of ",
                                std::string(graph::DTypeName(to->dtype)),
                                ": the cast is undefined behaviour in C++")};
}

// A float argument an op casts to int64 inside (the orthogonal polynomials'
// n): undefined for non-finite values and beyond 2^63 (x86 gives INT64_MIN,
// CUDA saturates).
std::optional<RuleMatch> InternalIntCast(const Context& c) {
  if (!(c.spec.hints & ops::kInternalIntCast) || c.spec.int_cast_arg < 0) return std::nullopt;
  const size_t pos = static_cast<size_t>(c.spec.int_cast_arg);
  if (pos >= c.node.args.size()) return std::nullopt;
  const Literal& l = c.node.args[pos].value;
  at::Tensor n;
  if (l.kind == Literal::Kind::kValue) {
    n = c.Input(pos);
  } else if (l.kind == Literal::Kind::kFloat) {
    n = at::scalar_tensor(l.f, at::kDouble);
  }
  if (!n.defined() || !at::isFloatingType(n.scalar_type())) return std::nullopt;
  const at::Tensor bad =
      at::logical_or(at::isfinite(n).logical_not(), n.abs().ge(9223372036854775808.0));
  const int64_t count = bad.sum().item<int64_t>();
  if (count == 0) return std::nullopt;
  return RuleMatch{"float_to_int_casts",
                   absl::StrCat(count, " value(s) of the argument ", c.node.op,
                                " casts to int64 inside are non-finite or beyond 2^63: the cast is "
                                "undefined behaviour in C++")};
}

}  // namespace

std::optional<RuleMatch> float_to_int_casts(const Context& c) {
  if (auto m = FloatToIntCast(c)) return m;
  return InternalIntCast(c);
}

}  // namespace divfuzz::oracles::rules
