#include "ops/infer.h"

#include "ops/kernel_classes.h"

#include "graph/gradient.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "ops/catalogue.h"
#include "ops/generic.h"

namespace divfuzz::ops {
namespace {

using graph::DType;
using graph::Literal;
using graph::TensorType;
using Shape = std::vector<int64_t>;

std::string ShapeStr(const Shape& s) { return absl::StrCat("[", absl::StrJoin(s, ","), "]"); }

int FloatRank(DType d) {
  switch (d) {
    case DType::kF16:
      return 1;
    case DType::kBF16:
      return 2;
    case DType::kF32:
      return 3;
    case DType::kF64:
      return 4;
    default:
      return 0;
  }
}

int IntBits(DType d) {
  switch (d) {
    case DType::kI8:
    case DType::kU8:
      return 8;
    case DType::kI16:
      return 16;
    case DType::kI32:
      return 32;
    case DType::kI64:
      return 64;
    default:
      return 0;
  }
}

DType SignedOfBits(int bits) {
  switch (bits) {
    case 8:
      return DType::kI8;
    case 16:
      return DType::kI16;
    case 32:
      return DType::kI32;
    default:
      return DType::kI64;
  }
}

absl::StatusOr<int64_t> NormalizeDim(int64_t dim, size_t rank) {
  const int64_t r = std::max<int64_t>(static_cast<int64_t>(rank), 1);
  if (dim < -r || dim >= r) {
    return absl::InvalidArgumentError(
        absl::StrCat("dim ", dim, " out of range for a tensor of rank ", rank));
  }
  return dim < 0 ? dim + r : dim;
}

absl::StatusOr<int64_t> IntArg(const Literal* l, absl::string_view what) {
  if (l == nullptr || l->kind != Literal::Kind::kInt) {
    return absl::InvalidArgumentError(absl::StrCat("expected an int for ", what));
  }
  return l->i;
}

bool BoolArg(const Literal* l, bool fallback) {
  return l != nullptr && l->kind == Literal::Kind::kBool ? l->b : fallback;
}

// Reduced shape for dims (empty list or None: all dims).
absl::StatusOr<Shape> Reduce(const Shape& in, const Literal* dims, bool keepdim) {
  std::vector<bool> reduced(in.size(), false);
  bool all = dims == nullptr || dims->kind == Literal::Kind::kNone ||
             (dims->kind == Literal::Kind::kList && dims->list.empty());
  if (!all) {
    std::vector<Literal> items =
        dims->kind == Literal::Kind::kList ? dims->list : std::vector<Literal>{*dims};
    for (const Literal& item : items) {
      absl::StatusOr<int64_t> d = IntArg(&item, "dim");
      if (!d.ok()) return d.status();
      absl::StatusOr<int64_t> n = NormalizeDim(*d, in.size());
      if (!n.ok()) return n.status();
      if (!in.empty()) {
        if (reduced[*n]) return absl::InvalidArgumentError("dim appears twice in the dim list");
        reduced[*n] = true;
      }
    }
  } else {
    reduced.assign(in.size(), true);
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(in[i]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

absl::Status NeedRank(const TensorType& t, size_t lo, size_t hi, absl::string_view what) {
  if (t.shape.size() < lo || t.shape.size() > hi) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", what, " of rank ", lo,
                                                   lo == hi ? "" : absl::StrCat("..", hi), ", got ",
                                                   ShapeStr(t.shape)));
  }
  return absl::OkStatus();
}

absl::Status NeedSquare(const TensorType& t) {
  if (t.shape.size() < 2 || t.shape[t.shape.size() - 1] != t.shape[t.shape.size() - 2]) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a (batch of) square matrices, got ", ShapeStr(t.shape)));
  }
  return absl::OkStatus();
}

// A schema position, or one no argument has (keyword-only).
size_t Pos(int position) { return position < 0 ? 1000 : static_cast<size_t>(position); }

DType WidenIfIntegral(const OpSpec& spec, DType d) {
  return spec.integer_sum_widens && (graph::IsIntegral(d) || d == DType::kBool) ? DType::kI64 : d;
}

// An explicit dtype= argument overrides the result dtype (sum, softmax ...).
DType DTypeOverride(const graph::Node& node, DType d) {
  const Literal* l = FindArg(node, 1000, "dtype");
  return l != nullptr && l->kind == Literal::Kind::kDType ? l->dtype : d;
}

absl::StatusOr<Shape> MatmulShape(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) return absl::InvalidArgumentError("matmul needs 1-d or more");
  Shape a2 = a, b2 = b;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a2.insert(a2.begin(), 1);
  if (b_vec) b2.push_back(1);
  if (a2.back() != b2[b2.size() - 2]) {
    return absl::InvalidArgumentError(
        absl::StrCat("matmul inner dims differ: ", ShapeStr(a), " x ", ShapeStr(b)));
  }
  Shape batch_a(a2.begin(), a2.end() - 2), batch_b(b2.begin(), b2.end() - 2);
  absl::StatusOr<Shape> batch = BroadcastShapes(batch_a, batch_b);
  if (!batch.ok()) return batch.status();
  Shape out = *batch;
  if (!a_vec) out.push_back(a2[a2.size() - 2]);
  if (!b_vec) out.push_back(b2.back());
  return out;
}

int Category(DType d) {
  if (d == DType::kBool) return 0;
  if (graph::IsIntegral(d)) return 1;
  if (graph::IsFloating(d)) return 2;
  return 3;  // complex
}

}  // namespace

DType ResultType(const TensorType& a, const TensorType& b) {
  // torch's rule: a 0-d operand only decides the dtype when it is of a higher
  // category (bool < int < float < complex) than the dimensioned one.
  const bool a0 = a.shape.empty(), b0 = b.shape.empty();
  if (a0 == b0) return PromoteTypes(a.dtype, b.dtype);
  const TensorType& dim = a0 ? b : a;
  const TensorType& zero = a0 ? a : b;
  return Category(zero.dtype) <= Category(dim.dtype) ? dim.dtype : zero.dtype;
}

DType PromoteTypes(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  if (graph::IsComplex(a) || graph::IsComplex(b)) {
    const bool wide =
        a == DType::kC128 || b == DType::kC128 || a == DType::kF64 || b == DType::kF64;
    return wide ? DType::kC128 : DType::kC64;
  }
  const int fa = FloatRank(a), fb = FloatRank(b);
  if (fa != 0 || fb != 0) {
    if (fa == 0) return b;
    if (fb == 0) return a;
    if ((fa == 1 && fb == 2) || (fa == 2 && fb == 1)) return DType::kF32;
    return fa > fb ? a : b;
  }
  // Both integral.
  const bool ua = a == DType::kU8, ub = b == DType::kU8;
  const int bits = std::max(IntBits(a), IntBits(b));
  if (ua != ub) {
    const int other = ua ? IntBits(b) : IntBits(a);
    return other > 8 ? SignedOfBits(other) : DType::kI16;
  }
  return SignedOfBits(bits);
}

absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes ", ShapeStr(a), " and ", ShapeStr(b), " do not broadcast"));
    }
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

int TensorArity(Rule rule) {
  switch (rule) {
    case Rule::kBinary:
    case Rule::kCompare:
    case Rule::kMm:
    case Rule::kBmm:
    case Rule::kMatmul:
    case Rule::kLinear:
    case Rule::kSolve:
      return 2;
    default:
      return 1;
  }
}

const Literal* FindArg(const graph::Node& node, size_t position, absl::string_view name) {
  for (const graph::Argument& a : node.args) {
    if (a.name == name) return &a.value;
  }
  if (position < node.args.size() && node.args[position].name.empty()) {
    return &node.args[position].value;
  }
  return nullptr;
}

absl::StatusOr<std::vector<TensorType>> InferNode(const OpSpec& spec, const graph::Node& node,
                                                  const TypeEnv& env) {
  if (std::optional<std::string> wrong = ChannelParameterMisshapen(node, env)) {
    return absl::InvalidArgumentError(*wrong);
  }
  if (spec.rule == Rule::kGeneric) {
    // The first tensor argument decides which learned dtypes apply.
    for (const graph::Argument& a : node.args) {
      const Literal& l =
          a.value.kind == Literal::Kind::kList && !a.value.list.empty() ? a.value.list[0] : a.value;
      if (l.kind != Literal::Kind::kValue) continue;
      auto it = env.find(l.s);
      if (it == env.end())
        return absl::InvalidArgumentError(absl::StrCat("undefined value %", l.s));
      if (!Has(spec.dtypes | spec.one_sided_dtypes, it->second.dtype)) {
        return absl::InvalidArgumentError(
            absl::StrCat(spec.Qualified(), " was not learned to take ",
                         std::string(graph::DTypeName(it->second.dtype))));
      }
      break;
    }
    return InferGeneric(node, env);
  }
  const int arity = TensorArity(spec.rule);
  std::vector<TensorType> in;
  for (int i = 0; i < arity; ++i) {
    if (static_cast<size_t>(i) >= node.args.size() || !node.args[i].name.empty() ||
        node.args[i].value.kind != Literal::Kind::kValue) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected a tensor value (%name) as argument ", i + 1));
    }
    auto it = env.find(node.args[i].value.s);
    if (it == env.end()) {
      return absl::InvalidArgumentError(absl::StrCat("undefined value %", node.args[i].value.s));
    }
    if (!Has(spec.dtypes, it->second.dtype)) {
      return absl::InvalidArgumentError(
          absl::StrCat(spec.Qualified(), " does not take ",
                       std::string(graph::DTypeName(it->second.dtype)), " in the catalogue"));
    }
    in.push_back(it->second);
  }
  const TensorType& x = in[0];
  auto one = [](DType d, Shape s) { return std::vector<TensorType>{TensorType{d, std::move(s)}}; };

  switch (spec.rule) {
    case Rule::kUnary:
      return one(x.dtype, x.shape);
    case Rule::kUnaryScalar: {
      const Literal* s = node.args.size() > 1 ? &node.args[1].value : nullptr;
      const bool float_scalar = s != nullptr && s->kind == Literal::Kind::kFloat;
      return one(float_scalar && !graph::IsFloating(x.dtype) ? DType::kF32 : x.dtype, x.shape);
    }
    case Rule::kBinary:
    case Rule::kCompare: {
      absl::StatusOr<Shape> s = BroadcastShapes(in[0].shape, in[1].shape);
      if (!s.ok()) return s.status();
      return one(spec.rule == Rule::kCompare ? DType::kBool : ResultType(in[0], in[1]), *s);
    }
    case Rule::kReduceAll:
      return one(DTypeOverride(node, WidenIfIntegral(spec, x.dtype)), {});
    case Rule::kReduceDims: {
      absl::StatusOr<Shape> s =
          Reduce(x.shape, FindArg(node, Pos(spec.dim_pos), "dim"),
                 BoolArg(FindArg(node, Pos(spec.keepdim_pos), "keepdim"), false));
      if (!s.ok()) return s.status();
      return one(DTypeOverride(node, WidenIfIntegral(spec, x.dtype)), *s);
    }
    case Rule::kReduceOneDim: {
      const Literal* d = FindArg(node, 1, "dim");
      absl::StatusOr<int64_t> dim = IntArg(d, "dim");
      if (!dim.ok()) return dim.status();
      absl::StatusOr<Shape> s =
          Reduce(x.shape, d, BoolArg(FindArg(node, Pos(spec.keepdim_pos), "keepdim"), false));
      if (!s.ok()) return s.status();
      return one(DTypeOverride(node, WidenIfIntegral(spec, x.dtype)), *s);
    }
    case Rule::kDimwise: {
      absl::StatusOr<int64_t> dim = IntArg(FindArg(node, 1, "dim"), "dim");
      if (!dim.ok()) return dim.status();
      absl::StatusOr<int64_t> n = NormalizeDim(*dim, x.shape.size());
      if (!n.ok()) return n.status();
      return one(DTypeOverride(node, WidenIfIntegral(spec, x.dtype)), x.shape);
    }
    case Rule::kMm:
    case Rule::kBmm: {
      const size_t r = spec.rule == Rule::kMm ? 2 : 3;
      if (auto st = NeedRank(in[0], r, r, "self"); !st.ok()) return st;
      if (auto st = NeedRank(in[1], r, r, "mat2"); !st.ok()) return st;
      if (in[0].dtype != in[1].dtype) return absl::InvalidArgumentError("operand dtypes differ");
      if (r == 3 && in[0].shape[0] != in[1].shape[0]) {
        return absl::InvalidArgumentError("bmm batch sizes differ");
      }
      if (in[0].shape[r - 1] != in[1].shape[r - 2]) {
        return absl::InvalidArgumentError(absl::StrCat("inner dims differ: ", ShapeStr(in[0].shape),
                                                       " x ", ShapeStr(in[1].shape)));
      }
      Shape out = in[0].shape;
      out.back() = in[1].shape.back();
      return one(x.dtype, out);
    }
    case Rule::kMatmul: {
      if (in[0].dtype != in[1].dtype) return absl::InvalidArgumentError("operand dtypes differ");
      absl::StatusOr<Shape> s = MatmulShape(in[0].shape, in[1].shape);
      if (!s.ok()) return s.status();
      return one(x.dtype, *s);
    }
    case Rule::kLinear: {
      if (auto st = NeedRank(in[0], 1, 8, "input"); !st.ok()) return st;
      if (auto st = NeedRank(in[1], 2, 2, "weight"); !st.ok()) return st;
      if (in[0].dtype != in[1].dtype) return absl::InvalidArgumentError("operand dtypes differ");
      if (in[0].shape.back() != in[1].shape[1]) {
        return absl::InvalidArgumentError(absl::StrCat("linear: input ", ShapeStr(in[0].shape),
                                                       " does not match weight ",
                                                       ShapeStr(in[1].shape)));
      }
      const Literal* bias = FindArg(node, 2, "bias");
      if (bias != nullptr && bias->kind == Literal::Kind::kValue) {
        auto it = env.find(bias->s);
        if (it == env.end()) return absl::InvalidArgumentError("undefined bias value");
        if (it->second.dtype != x.dtype) return absl::InvalidArgumentError("bias dtype differs");
        if (!BroadcastShapes(it->second.shape, {in[1].shape[0]}).ok() ||
            it->second.shape.size() > 1) {
          return absl::InvalidArgumentError("bias must be [out_features]");
        }
      }
      Shape out = in[0].shape;
      out.back() = in[1].shape[0];
      return one(x.dtype, out);
    }
    case Rule::kSquareToBatch:
    case Rule::kSquareToTwoBatch: {
      if (auto st = NeedSquare(x); !st.ok()) return st;
      Shape batch(x.shape.begin(), x.shape.end() - 2);
      std::vector<TensorType> out = one(x.dtype, batch);
      if (spec.rule == Rule::kSquareToTwoBatch) out.push_back(out[0]);
      return out;
    }
    case Rule::kSquare:
      if (auto st = NeedSquare(x); !st.ok()) return st;
      return one(x.dtype, x.shape);
    case Rule::kSquareToVector: {
      if (auto st = NeedSquare(x); !st.ok()) return st;
      return one(x.dtype, Shape(x.shape.begin(), x.shape.end() - 1));
    }
    case Rule::kSolve: {
      if (auto st = NeedSquare(in[0]); !st.ok()) return st;
      const TensorType& b = in[1];
      if (in[0].dtype != b.dtype) return absl::InvalidArgumentError("operand dtypes differ");
      const int64_t n = in[0].shape.back();
      if (b.shape.size() == 1 ? b.shape[0] != n
                              : b.shape.size() < 2 || b.shape[b.shape.size() - 2] != n) {
        return absl::InvalidArgumentError(absl::StrCat(
            "solve: B ", ShapeStr(b.shape), " does not match A ", ShapeStr(in[0].shape)));
      }
      Shape batch_a(in[0].shape.begin(), in[0].shape.end() - 2);
      // torch.linalg.solve reads B as a (batch of) vector(s) in these cases.
      const bool vector_case =
          b.shape.size() == 1 || (b.shape.size() + 1 == in[0].shape.size() &&
                                  Shape(b.shape.begin(), b.shape.end()) ==
                                      Shape(in[0].shape.begin(), in[0].shape.end() - 1));
      if (vector_case) {
        absl::StatusOr<Shape> batch =
            BroadcastShapes(batch_a, Shape(b.shape.begin(), b.shape.end() - 1));
        if (!batch.ok()) return batch.status();
        Shape out = *batch;
        out.push_back(n);
        return one(x.dtype, out);
      }
      Shape batch_b(b.shape.begin(), b.shape.end() - 2);
      absl::StatusOr<Shape> batch = BroadcastShapes(batch_a, batch_b);
      if (!batch.ok()) return batch.status();
      Shape out = *batch;
      out.push_back(n);
      out.push_back(b.shape.back());
      return one(x.dtype, out);
    }
    case Rule::kTranspose2d: {
      if (auto st = NeedRank(x, 0, 2, "self"); !st.ok()) return st;
      Shape out = x.shape;
      std::reverse(out.begin(), out.end());
      return one(x.dtype, out);
    }
    case Rule::kTrace:
      if (auto st = NeedRank(x, 2, 2, "self"); !st.ok()) return st;
      return one(x.dtype, {});
    case Rule::kSquareWithInfo: {
      if (auto st = NeedSquare(x); !st.ok()) return st;
      std::vector<TensorType> out = one(x.dtype, x.shape);
      out.push_back({DType::kI32, Shape(x.shape.begin(), x.shape.end() - 2)});
      return out;
    }
    case Rule::kArgReduce:
    case Rule::kValuesIndices: {
      const Literal* d = FindArg(node, 1, "dim");
      if (d == nullptr || d->kind != Literal::Kind::kInt) {
        return absl::InvalidArgumentError("expected an int dim as argument 2");
      }
      absl::StatusOr<Shape> s = Reduce(x.shape, d, BoolArg(FindArg(node, 2, "keepdim"), false));
      if (!s.ok()) return s.status();
      if (spec.rule == Rule::kArgReduce) return one(DType::kI64, *s);
      return std::vector<TensorType>{{x.dtype, *s}, {DType::kI64, *s}};
    }
    case Rule::kSort: {
      const Literal* d = FindArg(node, 1, "dim");
      if (d != nullptr) {
        absl::StatusOr<int64_t> dim = IntArg(d, "dim");
        if (!dim.ok()) return dim.status();
        if (absl::StatusOr<int64_t> n = NormalizeDim(*dim, x.shape.size()); !n.ok()) {
          return n.status();
        }
      }
      return std::vector<TensorType>{{x.dtype, x.shape}, {DType::kI64, x.shape}};
    }
    case Rule::kTopk: {
      absl::StatusOr<int64_t> k = IntArg(FindArg(node, 1, "k"), "k");
      if (!k.ok()) return k.status();
      const Literal* d = FindArg(node, 2, "dim");
      absl::StatusOr<int64_t> dim = d == nullptr ? absl::StatusOr<int64_t>(-1) : IntArg(d, "dim");
      if (!dim.ok()) return dim.status();
      absl::StatusOr<int64_t> n = NormalizeDim(*dim, x.shape.size());
      if (!n.ok()) return n.status();
      Shape out = x.shape;
      const int64_t size = out.empty() ? 1 : out[*n];
      if (*k < 0 || *k > size) {
        return absl::InvalidArgumentError(absl::StrCat("k=", *k, " out of range for size ", size));
      }
      if (!out.empty()) out[*n] = *k;
      return std::vector<TensorType>{{x.dtype, out}, {DType::kI64, out}};
    }
    case Rule::kCast: {
      const Literal* d = FindArg(node, 1, "dtype");
      if (d == nullptr || d->kind != Literal::Kind::kDType) {
        return absl::InvalidArgumentError("expected a dtype as argument 2");
      }
      return one(d->dtype, x.shape);
    }
    case Rule::kQr:
    case Rule::kSvd: {
      if (auto st = NeedRank(x, 2, 4, "A"); !st.ok()) return st;
      const int64_t m = x.shape[x.shape.size() - 2], n = x.shape.back(), k = std::min(m, n);
      Shape batch(x.shape.begin(), x.shape.end() - 2);
      auto with = [&](std::initializer_list<int64_t> tail) {
        Shape s = batch;
        s.insert(s.end(), tail);
        return TensorType{x.dtype, s};
      };
      if (spec.rule == Rule::kQr) return std::vector<TensorType>{with({m, k}), with({k, n})};
      const Literal* full = FindArg(node, 1, "full_matrices");
      if (full == nullptr || full->kind != Literal::Kind::kBool || full->b) {
        return absl::InvalidArgumentError("expected full_matrices=False");
      }
      return std::vector<TensorType>{with({m, k}), with({k}), with({k, n})};
    }
    case Rule::kEig: {
      if (auto st = NeedSquare(x); !st.ok()) return st;
      const DType c = x.dtype == DType::kF64 ? DType::kC128 : DType::kC64;
      return std::vector<TensorType>{{c, Shape(x.shape.begin(), x.shape.end() - 1)}, {c, x.shape}};
    }
    case Rule::kLu: {
      if (auto st = NeedRank(x, 2, 4, "A"); !st.ok()) return st;
      const int64_t m = x.shape[x.shape.size() - 2], n = x.shape.back(), k = std::min(m, n);
      Shape batch(x.shape.begin(), x.shape.end() - 2);
      auto with = [&](int64_t r, int64_t c) {
        Shape s = batch;
        s.push_back(r);
        s.push_back(c);
        return TensorType{x.dtype, s};
      };
      return std::vector<TensorType>{with(m, m), with(m, k), with(k, n)};
    }
    case Rule::kEigh: {
      if (auto st = NeedSquare(x); !st.ok()) return st;
      return std::vector<TensorType>{{x.dtype, Shape(x.shape.begin(), x.shape.end() - 1)},
                                     {x.dtype, x.shape}};
    }
    case Rule::kGeneric:
      break;  // handled above
  }
  return absl::InternalError("unhandled rule");
}

// A gradient has its input's type; each cotangent has its output's shape
// (autograd casts a cotangent's dtype, never its shape).
static absl::Status InferGradNode(const graph::Node& node, TypeEnv& env) {
  graph::GradCallOrError g = graph::ParseGradCall(node);
  if (!g.call) return absl::InvalidArgumentError(g.error);
  for (size_t i = 0; i < g.call->outputs.size(); ++i) {
    auto y = env.find(g.call->outputs[i]);
    auto v = env.find(g.call->cotangents[i]);
    if (y == env.end() || v == env.end()) return absl::InvalidArgumentError("undefined value");
    const bool differentiable = graph::IsFloating(y->second.dtype) || graph::IsComplex(y->second.dtype);
    if (!differentiable) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected floating or complex outputs to differentiate, got %", y->first, " of ",
          std::string(graph::DTypeName(y->second.dtype))));
    }
    if (y->second.shape != v->second.shape ||
        graph::IsComplex(y->second.dtype) != graph::IsComplex(v->second.dtype) ||
        !(graph::IsFloating(v->second.dtype) || graph::IsComplex(v->second.dtype))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected cotangent %", v->first, " of the shape and kind of %", y->first, " (",
          std::string(graph::DTypeName(y->second.dtype)), ShapeStr(y->second.shape), "), got ",
          std::string(graph::DTypeName(v->second.dtype)), ShapeStr(v->second.shape)));
    }
  }
  for (size_t i = 0; i < g.call->wrt.size(); ++i) {
    auto x = env.find(g.call->wrt[i]);
    if (x == env.end()) return absl::InvalidArgumentError("undefined input");
    env[node.results[i]] = x->second;
  }
  return absl::OkStatus();
}

absl::StatusOr<TypeEnv> InferProgram(const graph::Program& program, absl::string_view filename) {
  TypeEnv env;
  for (const graph::Input& in : program.inputs) env[in.name] = in.type;
  for (const graph::Node& node : program.nodes) {
    auto where = [&](absl::string_view msg) {
      return absl::InvalidArgumentError(
          absl::StrCat(filename, ":", node.loc.line, ":", node.loc.col, ": ", msg));
    };
    if (graph::IsGradNode(node)) {
      absl::Status st = InferGradNode(node, env);
      if (!st.ok()) return where(st.message());
      continue;
    }
    const OpSpec* spec = FindOp(node.QualifiedName());
    if (spec == nullptr) {
      return where(absl::StrCat("expected an op from the catalogue (see 'divfuzz ops'), got '",
                                node.QualifiedName(), "'"));
    }
    if (std::optional<std::string> random = RandomArgumentOf(node)) {
      return where(absl::StrCat(node.QualifiedName(), ": ", *random));
    }
    absl::StatusOr<std::vector<TensorType>> out = InferNode(*spec, node, env);
    if (!out.ok()) return where(absl::StrCat(node.QualifiedName(), ": ", out.status().message()));
    if (out->size() != node.results.size()) {
      return where(absl::StrCat("expected ", out->size(), " result name(s) for ",
                                node.QualifiedName(), ", got ", node.results.size()));
    }
    for (size_t i = 0; i < out->size(); ++i) env[node.results[i]] = (*out)[i];
  }
  return env;
}

}  // namespace divfuzz::ops
