#include "exec/arguments.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "exec/dtype_convert.h"

namespace divfuzz::exec {
namespace {

using graph::Literal;

absl::Status Mismatch(const c10::Argument& arg, absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat("argument '", arg.name(), "' expects ", expected));
}

absl::StatusOr<at::Tensor> TensorOf(const c10::Argument& arg, const Literal& lit,
                                    const ValueLookup& lookup) {
  if (lit.kind != Literal::Kind::kValue) return Mismatch(arg, "a tensor value (%name)");
  at::Tensor t = lookup(lit.s);
  if (!t.defined()) return Mismatch(arg, absl::StrCat("a defined value, %", lit.s, " is not"));
  return t;
}

absl::StatusOr<c10::IValue> Convert(const c10::Argument& arg, const c10::TypePtr& type,
                                    const Literal& lit, const ValueLookup& lookup) {
  using K = c10::TypeKind;
  switch (type->kind()) {
    case K::OptionalType:
      if (lit.kind == Literal::Kind::kNone) return c10::IValue();
      return Convert(arg, type->castRaw<c10::OptionalType>()->getElementType(), lit, lookup);
    case K::TensorType: {
      absl::StatusOr<at::Tensor> t = TensorOf(arg, lit, lookup);
      if (!t.ok()) return t.status();
      return c10::IValue(*t);
    }
    case K::IntType:
    case K::SymIntType:
      if (lit.kind == Literal::Kind::kInt) return c10::IValue(lit.i);
      if (lit.kind == Literal::Kind::kBool) return c10::IValue(static_cast<int64_t>(lit.b));
      return Mismatch(arg, "an int");
    case K::FloatType:
    case K::SymFloatType:
      if (lit.kind == Literal::Kind::kFloat) return c10::IValue(lit.f);
      if (lit.kind == Literal::Kind::kInt) return c10::IValue(static_cast<double>(lit.i));
      return Mismatch(arg, "a float");
    case K::BoolType:
    case K::SymBoolType:
      if (lit.kind == Literal::Kind::kBool) return c10::IValue(lit.b);
      return Mismatch(arg, "a bool");
    case K::NumberType:
      if (lit.kind == Literal::Kind::kInt) return c10::IValue(c10::Scalar(lit.i));
      if (lit.kind == Literal::Kind::kFloat) return c10::IValue(c10::Scalar(lit.f));
      if (lit.kind == Literal::Kind::kBool) return c10::IValue(c10::Scalar(lit.b));
      return Mismatch(arg, "a number");
    case K::ScalarTypeType:
      if (lit.kind == Literal::Kind::kDType) return c10::IValue(ToScalarType(lit.dtype));
      return Mismatch(arg, "a dtype (f32, i64, ...)");
    case K::StringType:
      if (lit.kind == Literal::Kind::kString) return c10::IValue(lit.s);
      return Mismatch(arg, "a string");
    case K::ListType: {
      const c10::TypePtr elem = type->castRaw<c10::ListType>()->getElementType();
      // int[1] accepts a bare int.
      std::vector<Literal> items =
          lit.kind == Literal::Kind::kList ? lit.list : std::vector<Literal>{lit};
      if (lit.kind != Literal::Kind::kList && elem->kind() != K::IntType &&
          elem->kind() != K::SymIntType) {
        return Mismatch(arg, "a list");
      }
      if (elem->kind() == K::IntType || elem->kind() == K::SymIntType) {
        std::vector<int64_t> v;
        for (const Literal& i : items) {
          if (i.kind != Literal::Kind::kInt) return Mismatch(arg, "a list of ints");
          v.push_back(i.i);
        }
        return c10::IValue(v);
      }
      if (elem->kind() == K::FloatType) {
        std::vector<double> v;
        for (const Literal& i : items) {
          if (i.kind != Literal::Kind::kFloat && i.kind != Literal::Kind::kInt) {
            return Mismatch(arg, "a list of floats");
          }
          v.push_back(i.kind == Literal::Kind::kInt ? static_cast<double>(i.i) : i.f);
        }
        return c10::IValue(v);
      }
      if (elem->kind() == K::BoolType) {
        c10::List<bool> v;
        for (const Literal& i : items) {
          if (i.kind != Literal::Kind::kBool) return Mismatch(arg, "a list of bools");
          v.push_back(i.b);
        }
        return c10::IValue(v);
      }
      if (elem->kind() == K::TensorType) {
        c10::List<at::Tensor> v;
        for (const Literal& i : items) {
          absl::StatusOr<at::Tensor> t = TensorOf(arg, i, lookup);
          if (!t.ok()) return t.status();
          v.push_back(*t);
        }
        return c10::IValue(v);
      }
      return Mismatch(arg, absl::StrCat("a ", type->str(), ", which divfuzz cannot express yet"));
    }
    default:
      // Device, layout, memory format, generator: only None (the default) is expressible.
      if (lit.kind == Literal::Kind::kNone) return c10::IValue();
      return Mismatch(arg, absl::StrCat("a ", type->str(), "; only None is supported"));
  }
}

}  // namespace

absl::StatusOr<torch::jit::Stack> BuildStack(const c10::FunctionSchema& schema,
                                             const graph::Node& node, const ValueLookup& lookup) {
  const std::vector<c10::Argument>& params = schema.arguments();
  std::vector<const Literal*> bound(params.size(), nullptr);
  size_t next_positional = 0;
  for (const graph::Argument& a : node.args) {
    if (a.name.empty()) {
      if (next_positional >= params.size() || params[next_positional].kwarg_only()) {
        return absl::InvalidArgumentError(
            absl::StrCat("too many positional arguments for ", schema.name()));
      }
      bound[next_positional++] = &a.value;
      continue;
    }
    size_t i = 0;
    while (i < params.size() && params[i].name() != a.name) ++i;
    if (i == params.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(schema.name(), " has no argument named '", a.name, "'"));
    }
    if (bound[i] != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("argument '", a.name, "' given twice"));
    }
    bound[i] = &a.value;
  }
  torch::jit::Stack stack;
  for (size_t i = 0; i < params.size(); ++i) {
    if (bound[i] == nullptr) {
      if (!params[i].default_value().has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("missing argument '", params[i].name(), "' of ", schema.name()));
      }
      stack.push_back(*params[i].default_value());
      continue;
    }
    absl::StatusOr<c10::IValue> v = Convert(params[i], params[i].real_type(), *bound[i], lookup);
    if (!v.ok()) return v.status();
    stack.push_back(std::move(*v));
  }
  return stack;
}

}  // namespace divfuzz::exec
