#include "mutators/node_builder.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ops/kernel_classes.h"
#include "ops/catalogue.h"

namespace divfuzz::mutators {
namespace {

using graph::DType;
using graph::Literal;
using graph::TensorType;
using ops::Rule;
using Shape = std::vector<int64_t>;

// Sizes that sit on either side of AVX2/AVX512 vector widths and GPU block
// boundaries, plus small ones for linear algebra.
const std::vector<int64_t> kDims = {1, 2, 3, 4, 5, 7, 8, 16, 17, 33, 64};

int64_t NumelOf(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

double Round(double x, double step) { return std::round(x / step) * step; }

Literal Ref(const std::string& name) { return Literal::Value(name); }

}  // namespace

DType RandomDType(Random& random) {
  const uint64_t r = random.Below(100);
  if (r < 45) return DType::kF32;
  if (r < 60) return DType::kF64;
  if (r < 70) return DType::kF16;
  if (r < 80) return DType::kBF16;
  if (r < 86) return DType::kI64;
  if (r < 92) return DType::kI32;
  if (r < 95) return DType::kI16;
  if (r < 98) return DType::kI8;
  return DType::kU8;
}

NodeBuilder::NodeBuilder(graph::Program& program, ops::TypeEnv& types, Random& random)
    : program_(program), types_(types), random_(random) {}

std::string NodeBuilder::FreshName(const char* prefix) {
  for (size_t i = types_.size();; ++i) {
    std::string name = absl::StrCat(prefix, i);
    if (types_.count(name) == 0) return name;
  }
}

Shape NodeBuilder::RandomShape(int min_rank, int max_rank) {
  const int rank = static_cast<int>(random_.Range(min_rank, max_rank));
  Shape s;
  for (int i = 0; i < rank; ++i) s.push_back(random_.Pick(kDims));
  while (NumelOf(s) > kMaxGeneratedNumel) {
    *std::max_element(s.begin(), s.end()) /= 2;
  }
  return s;
}

graph::Payload NodeBuilder::RandomPayload(DType dtype, ops::Domain domain) {
  graph::Payload p;
  p.seed = random_.Seed();
  if (!graph::IsFloating(dtype) && !graph::IsComplex(dtype)) {
    if (random_.Chance(0.2)) {
      p.kind = graph::Payload::Kind::kSpecial;
      return p;
    }
    p.kind = graph::Payload::Kind::kUniform;
    p.a = dtype == DType::kU8 || dtype == DType::kBool ? 0 : -10;
    p.b = dtype == DType::kBool ? 1 : 10;
    return p;
  }
  // Off-domain values still matter (NaN handling), but rarely.
  if (domain != ops::Domain::kAny && domain != ops::Domain::kSpd && !random_.Chance(0.15)) {
    p.kind = graph::Payload::Kind::kUniform;
    switch (domain) {
      case ops::Domain::kPositive:
        p.a = 0.01, p.b = 4;
        break;
      case ops::Domain::kUnit:
        p.a = -0.99, p.b = 0.99;
        break;
      default:
        p.a = 1, p.b = 5;
        break;
    }
    return p;
  }
  const uint64_t r = random_.Below(10);
  if (r < 4) {
    p.kind = graph::Payload::Kind::kNormal;
  } else if (r < 6) {
    p.kind = graph::Payload::Kind::kUniform;
    p.a = -3, p.b = 3;
  } else if (r < 8) {
    p.kind = graph::Payload::Kind::kSpecial;
  } else if (r < 9) {
    p.kind = graph::Payload::Kind::kFill;
    p.values = {Round(random_.Uniform(-2, 2), 1e-4)};
  } else {
    p.kind = graph::Payload::Kind::kNormal;
    p.b = 100;
  }
  return p;
}

std::string NodeBuilder::NewInput(const TensorType& type, ops::Domain domain) {
  graph::Input in;
  in.name = FreshName("x");
  in.type = type;
  in.payload = RandomPayload(type.dtype, domain);
  types_[in.name] = type;
  program_.inputs.push_back(in);
  return in.name;
}

template <typename Pred>
std::string NodeBuilder::Reuse(DType dtype, Pred pred, double probability) {
  if (!random_.Chance(probability)) return "";
  std::vector<std::string> fits;
  for (const auto& [name, type] : types_) {
    if (type.dtype == dtype && type.Numel() <= kMaxGeneratedNumel && pred(type.shape)) {
      fits.push_back(name);
    }
  }
  return fits.empty() ? "" : random_.Pick(fits);
}

void NodeBuilder::RegenerateAttributes(const ops::OpSpec& spec, graph::Node& node) {
  if (spec.rule == Rule::kGeneric) {
    RegenerateGeneric(*spec.generic, node);
    return;
  }
  const size_t keep = spec.rule == Rule::kLinear ? std::min<size_t>(3, node.args.size())
                                                 : static_cast<size_t>(ops::TensorArity(spec.rule));
  node.args.resize(std::min(keep, node.args.size()));
  const TensorType& x = types_.at(node.args[0].value.s);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  auto random_dim = [&] {
    return random_.Range(-std::max<int64_t>(rank, 1), std::max<int64_t>(rank, 1) - 1);
  };
  switch (spec.rule) {
    case Rule::kUnaryScalar:
      if (graph::IsFloating(x.dtype)) {
        node.args.push_back(
            {"", Literal::Float(Round(random_.Uniform(spec.scalar_low, spec.scalar_high), 0.01))});
      } else {
        node.args.push_back(
            {"", Literal::Int(random_.Range(static_cast<int64_t>(spec.scalar_low),
                                            static_cast<int64_t>(spec.scalar_high)))});
      }
      break;
    case Rule::kReduceDims: {
      std::vector<Literal> dims;
      for (int64_t d = 0; d < rank; ++d) {
        if (random_.Chance(0.5)) dims.push_back(Literal::Int(random_.Chance(0.3) ? d - rank : d));
      }
      if (dims.empty() && rank > 0) dims.push_back(Literal::Int(random_dim()));
      node.args.push_back({"dim", Literal::List(dims)});
      node.args.push_back({"keepdim", Literal::Bool(random_.Chance(0.5))});
      break;
    }
    case Rule::kReduceOneDim:
      node.args.push_back({"", Literal::Int(random_dim())});
      node.args.push_back({"keepdim", Literal::Bool(random_.Chance(0.5))});
      break;
    case Rule::kDimwise:
      node.args.push_back({"", Literal::Int(random_dim())});
      break;
    case Rule::kArgReduce:
    case Rule::kValuesIndices:
      node.args.push_back({"", Literal::Int(random_dim())});
      node.args.push_back({"keepdim", Literal::Bool(random_.Chance(0.5))});
      break;
    case Rule::kSort:
      node.args.push_back({"", Literal::Int(random_dim())});
      node.args.push_back({"descending", Literal::Bool(random_.Chance(0.5))});
      break;
    case Rule::kTopk: {
      const int64_t dim = random_dim();
      const int64_t size = rank == 0 ? 1 : x.shape[dim < 0 ? dim + rank : dim];
      node.args.push_back({"", Literal::Int(random_.Range(std::min<int64_t>(size, 1), size))});
      node.args.push_back({"", Literal::Int(dim)});
      node.args.push_back({"largest", Literal::Bool(random_.Chance(0.5))});
      break;
    }
    case Rule::kCast: {
      // Mostly float -> int and back: where CPU and CUDA casts differ.
      const std::vector<DType> to = {DType::kI32,  DType::kI64, DType::kI8,  DType::kU8,
                                     DType::kBool, DType::kF16, DType::kF32, DType::kF64};
      node.args.push_back({"", Literal::OfDType(random_.Pick(to))});
      break;
    }
    case Rule::kSvd:
      node.args.push_back({"full_matrices", Literal::Bool(false)});
      break;
    default:
      break;
  }
  if (spec.device_argument != nullptr && random_.Chance(0.3)) {
    node.args.push_back(
        {std::string(spec.device_argument->name), DeviceArgumentValue(*spec.device_argument)});
  }
}

Literal NodeBuilder::DeviceArgumentValue(const ops::DeviceArgument& da) {
  std::vector<std::string> values = absl::StrSplit(da.cpu, ',', absl::SkipEmpty());
  for (absl::string_view v : absl::StrSplit(da.cuda, ',', absl::SkipEmpty())) {
    if (std::find(values.begin(), values.end(), v) == values.end()) values.emplace_back(v);
  }
  return Literal::String(random_.Pick(values));
}

bool NodeBuilder::Append(const ops::OpSpec& spec, DType dtype, bool one_sided) {
  if (one_sided ? !ops::OneSided(spec, dtype) : !ops::Has(spec.dtypes, dtype)) return false;
  if (spec.rule == Rule::kGeneric) return AppendGenericOp(spec, dtype, one_sided);
  const graph::Program saved_program = program_;
  const ops::TypeEnv saved_types = types_;
  const ops::Domain domain = spec.domain;
  const double reuse = domain == ops::Domain::kAny ? 0.7 : 0.3;
  auto any = [](const Shape&) { return true; };
  auto rank_is = [](size_t lo, size_t hi) {
    return [lo, hi](const Shape& s) { return s.size() >= lo && s.size() <= hi; };
  };
  auto square = [](const Shape& s) {
    return s.size() >= 2 && s.size() <= 3 && s[s.size() - 1] == s[s.size() - 2] && s.back() <= 8;
  };
  auto value_or_new = [&](std::string reused, const TensorType& fresh) {
    return reused.empty() ? NewInput(fresh, domain) : reused;
  };
  auto small = [&] { return random_.Range(1, 6); };

  std::vector<graph::Argument> args;
  auto push = [&](const std::string& name) { args.push_back({"", Ref(name)}); };
  switch (spec.rule) {
    case Rule::kUnary:
    case Rule::kUnaryScalar:
    case Rule::kReduceAll:
    case Rule::kReduceDims:
    case Rule::kReduceOneDim:
    case Rule::kDimwise:
      push(value_or_new(Reuse(dtype, any, reuse), {dtype, RandomShape(0, 3)}));
      break;
    case Rule::kBinary:
    case Rule::kCompare: {
      const std::string x = value_or_new(Reuse(dtype, any, reuse), {dtype, RandomShape(0, 3)});
      const Shape xs = types_.at(x).shape;
      std::string y = Reuse(
          dtype, [&](const Shape& s) { return ops::BroadcastShapes(xs, s).ok(); }, 0.4);
      if (y.empty()) {
        Shape ys = xs;
        if (random_.Chance(0.2) && !ys.empty()) ys.erase(ys.begin());
        for (int64_t& d : ys) {
          if (random_.Chance(0.25)) d = 1;
        }
        y = NewInput({dtype, ys}, domain);
      }
      if (random_.Chance(0.5)) {
        push(x), push(y);
      } else {
        push(y), push(x);
      }
      break;
    }
    case Rule::kMm:
    case Rule::kBmm: {
      const size_t r = spec.rule == Rule::kMm ? 2 : 3;
      Shape fresh = r == 2 ? Shape{small(), small()} : Shape{small(), small(), small()};
      const std::string a = value_or_new(Reuse(dtype, rank_is(r, r), reuse), {dtype, fresh});
      Shape bs = types_.at(a).shape;
      std::swap(bs[r - 1], bs[r - 2]);
      bs[r - 1] = random_.Chance(0.5) ? bs[r - 1] : small();
      push(a);
      push(NewInput({dtype, bs}, domain));
      break;
    }
    case Rule::kMatmul: {
      const std::string a =
          value_or_new(Reuse(dtype, rank_is(1, 3), reuse), {dtype, RandomShape(1, 3)});
      const Shape as = types_.at(a).shape;
      const int64_t k = as.back();
      Shape bs = random_.Chance(0.3) ? Shape{k} : Shape{k, small()};
      if (as.size() == 3 && bs.size() == 2 && random_.Chance(0.3)) bs.insert(bs.begin(), as[0]);
      push(a);
      push(NewInput({dtype, bs}, domain));
      break;
    }
    case Rule::kLinear: {
      const std::string x =
          value_or_new(Reuse(dtype, rank_is(1, 3), reuse), {dtype, RandomShape(1, 3)});
      const int64_t k = types_.at(x).shape.back();
      const int64_t n = random_.Pick(std::vector<int64_t>{1, 2, 4, 8, 16});
      push(x);
      push(NewInput({dtype, {n, k}}, domain));
      if (random_.Chance(0.7)) push(NewInput({dtype, {n}}, domain));
      break;
    }
    case Rule::kSquareToBatch:
    case Rule::kSquareToTwoBatch:
    case Rule::kSquare:
    case Rule::kSquareToVector:
    case Rule::kSquareWithInfo:
    case Rule::kEigh:
    case Rule::kEig:
    case Rule::kSolve: {
      const int64_t n = small();
      std::string a;
      if (domain == ops::Domain::kSpd) {
        // A A^T is symmetric positive semi-definite: cholesky's domain.
        const size_t inputs_before = program_.inputs.size();
        const std::string base = value_or_new(
            Reuse(
                dtype, [n](const Shape& s) { return s.size() == 2 && s[0] <= 8; }, 0.5),
            {dtype, {n, n}});
        // A fresh square base of normal values has full rank: A A^T is then
        // positive definite, not just semi-definite.
        if (program_.inputs.size() > inputs_before) {
          graph::Payload& payload = program_.inputs.back().payload;
          payload.kind = graph::Payload::Kind::kNormal;
          payload.a = 0;
          payload.b = 1;
        }
        graph::Node t{{FreshName("v")}, "aten::t", "", {{"", Ref(base)}}};
        types_[t.results[0]] = {dtype, {types_.at(base).shape[1], types_.at(base).shape[0]}};
        graph::Node mm{
            {FreshName("v")}, "aten::mm", "", {{"", Ref(base)}, {"", Ref(t.results[0])}}};
        types_[mm.results[0]] = {dtype, {types_.at(base).shape[0], types_.at(base).shape[0]}};
        program_.nodes.push_back(t);
        program_.nodes.push_back(mm);
        a = mm.results[0];
      } else {
        Shape fresh = random_.Chance(0.2) ? Shape{small(), n, n} : Shape{n, n};
        a = value_or_new(Reuse(dtype, square, reuse), {dtype, fresh});
      }
      push(a);
      if (spec.rule == Rule::kSolve) {
        const int64_t m = types_.at(a).shape.back();
        push(NewInput({dtype, Shape{m, small()}}, domain));
      }
      break;
    }
    case Rule::kTranspose2d:
      push(value_or_new(Reuse(dtype, rank_is(0, 2), reuse), {dtype, RandomShape(2, 2)}));
      break;
    case Rule::kArgReduce:
    case Rule::kValuesIndices:
    case Rule::kSort:
    case Rule::kTopk:
    case Rule::kCast: {
      std::string x = value_or_new(Reuse(dtype, any, reuse), {dtype, RandomShape(0, 3)});
      // Rounded values tie often: where index outputs may legally differ.
      if (spec.rule != Rule::kCast && graph::IsFloating(dtype) && random_.Chance(0.4)) {
        graph::Node round{{FreshName("v")}, "aten::round", "", {{"", Ref(x)}}};
        types_[round.results[0]] = types_.at(x);
        program_.nodes.push_back(round);
        x = round.results[0];
      }
      push(x);
      break;
    }
    case Rule::kQr:
    case Rule::kSvd:
    case Rule::kLu:
      push(value_or_new(
          Reuse(
              dtype, [](const Shape& s) { return s.size() == 2 && s[0] <= 8 && s[1] <= 8; }, reuse),
          {dtype, {small(), small()}}));
      break;
    case Rule::kTrace:
      push(value_or_new(Reuse(dtype, rank_is(2, 2), reuse), {dtype, RandomShape(2, 2)}));
      break;
    case Rule::kGeneric:
      return false;  // handled above
  }

  graph::Node node;
  node.op = std::string(spec.name);
  node.overload = std::string(spec.overload);
  node.args = std::move(args);
  RegenerateAttributes(spec, node);
  absl::StatusOr<std::vector<TensorType>> out = ops::InferNode(spec, node, types_);
  if (!out.ok()) {
    program_ = saved_program;
    types_ = saved_types;
    return false;
  }
  for (const TensorType& t : *out) {
    node.results.push_back(FreshName("v"));
    types_[node.results.back()] = t;
  }
  program_.nodes.push_back(std::move(node));
  return true;
}

namespace {

using ops::GenericArg;
using ops::ShapeForm;

bool IsIndexName(absl::string_view name) { return name == "index" || name == "indices"; }

// Spatial dims of convolution- and pooling-like ops: from the name ("2d"), or
// every dim after batch and channels.
int64_t SpatialDims(absl::string_view op, int64_t rank) {
  if (absl::StrContains(op, "1d")) return 1;
  if (absl::StrContains(op, "2d")) return 2;
  if (absl::StrContains(op, "3d")) return 3;
  return std::max<int64_t>(rank - 2, 1);
}

std::vector<Literal> Ints(std::vector<int64_t> v) {
  std::vector<Literal> out;
  for (int64_t i : v) out.push_back(Literal::Int(i));
  return out;
}

}  // namespace

std::optional<Literal> NodeBuilder::GenericLiteral(const ops::GenericOp& op, const GenericArg& a,
                                                   const TensorType& primary) {
  const absl::string_view name = a.name;
  const int64_t rank = static_cast<int64_t>(primary.shape.size());
  const int64_t r1 = std::max<int64_t>(rank, 1);
  const int64_t sp = SpatialDims(op.name, rank);
  const bool integral = graph::IsIntegral(primary.dtype) || primary.dtype == DType::kBool;
  auto dim = [&] { return random_.Range(-r1, r1 - 1); };
  switch (a.kind) {
    case GenericArg::Kind::kInt:
      if (absl::StrContains(name, "dim")) return Literal::Int(dim());
      // grid_sampler: bilinear, nearest, bicubic (2-d only); zeros, border, reflection.
      if (name == "interpolation_mode") return Literal::Int(random_.Range(0, sp == 3 ? 1 : 2));
      if (name == "padding_mode") return Literal::Int(random_.Range(0, 2));
      if (name == "diagonal" || name == "offset" || name == "index" || name == "start" ||
          name == "padding_idx" || name == "correction") {
        return Literal::Int(0);
      }
      if (name == "repeats" || name == "chunks" || name == "sections" || name == "size" ||
          name == "output_size" || name == "p") {
        return Literal::Int(2);
      }
      if (name == "num_classes") return Literal::Int(primary.shape.empty() ? 4 : 64);
      return Literal::Int(1);
    case GenericArg::Kind::kIntList: {
      if (name == "dims" || name == "perm") {
        std::vector<int64_t> v;
        for (int64_t d = rank - 1; d >= 0; --d) v.push_back(d);
        return Literal::List(Ints(v));
      }
      if (absl::StrContains(name, "dim")) return Literal::List(Ints({dim()}));
      if (name == "size" || name == "shape" || name == "sizes") {
        return Literal::List(Ints(random_.Chance(0.5) ? primary.shape : Shape{-1}));
      }
      if (name == "repeats") {
        Shape v(primary.shape.size(), 1);
        if (!v.empty()) v[0] = 2;
        return Literal::List(Ints(v));
      }
      if (name == "kernel_size" || name == "output_size") return Literal::List(Ints(Shape(sp, 2)));
      if (name == "stride" || name == "dilation") return Literal::List(Ints(Shape(sp, 1)));
      // reflection_pad2d and replication_pad3d: a (left, right) pair per spatial dim.
      if (name == "padding" && absl::StrContains(op.name, "_pad")) {
        return Literal::List(Ints(Shape(2 * sp, 1)));
      }
      if (name == "padding" || name == "output_padding") {
        return Literal::List(Ints(Shape(sp, 0)));
      }
      if (name == "pad") return Literal::List(Ints({1, 1}));
      if (name == "normalized_shape") {
        return Literal::List(Ints(primary.shape.empty() ? Shape{} : Shape{primary.shape.back()}));
      }
      if (name == "shifts") return Literal::List(Ints({1}));
      return Literal::List(Ints({1}));
    }
    case GenericArg::Kind::kFloat:
      if (name == "eps") return Literal::Float(1e-5);
      if (name == "momentum" || name == "negative_slope") return Literal::Float(0.1);
      if (name == "p") return Literal::Float(2);
      if (name == "min_val") return Literal::Float(-1);
      if (name == "max_val" || name == "beta" || name == "margin" || name == "scale" ||
          name == "alpha") {
        return Literal::Float(1);
      }
      return Literal::Float(Round(random_.Uniform(0.1, 2), 0.05));
    case GenericArg::Kind::kFloatList:
      return Literal::List({Literal::Float(2), Literal::Float(2)});
    case GenericArg::Kind::kBool:
      return Literal::Bool(random_.Chance(0.5));
    case GenericArg::Kind::kBoolList:
      return Literal::List({Literal::Bool(true), Literal::Bool(true), Literal::Bool(true)});
    case GenericArg::Kind::kScalar: {
      if (name == "min") return Literal::Int(-1);
      if (name == "max") return Literal::Int(1);
      if (name == "alpha" || name == "beta" || name == "value") return Literal::Int(1);
      if (integral) return Literal::Int(random_.Range(1, 3));
      const std::vector<double> values = {2, 0.5, -1.5, 3, 0.25};
      return Literal::Float(random_.Pick(values));
    }
    case GenericArg::Kind::kScalarType:
      return Literal::OfDType(primary.dtype);
    case GenericArg::Kind::kString:
      if (const ops::DeviceArgument* da = ops::DeviceArgumentOf(op.Qualified());
          da != nullptr && name == da->name) {
        return DeviceArgumentValue(*da);
      }
      if (name == "reduce") {
        const std::vector<std::string> modes = {"sum", "prod", "mean", "amax", "amin"};
        return Literal::String(random_.Pick(modes));
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

void NodeBuilder::RegenerateGeneric(const ops::GenericOp& op, graph::Node& node) {
  // The first tensor argument decides dims and sizes.
  const TensorType* primary = nullptr;
  for (const graph::Argument& a : node.args) {
    const Literal& l =
        a.value.kind == Literal::Kind::kList && !a.value.list.empty() ? a.value.list[0] : a.value;
    if (l.kind == Literal::Kind::kValue && types_.count(l.s)) {
      primary = &types_.at(l.s);
      break;
    }
  }
  if (primary == nullptr) return;
  const TensorType p = *primary;
  for (size_t i = 0; i < node.args.size(); ++i) {
    graph::Argument& arg = node.args[i];
    const bool tensor = arg.value.kind == Literal::Kind::kValue ||
                        (arg.value.kind == Literal::Kind::kList && !arg.value.list.empty() &&
                         arg.value.list[0].kind == Literal::Kind::kValue);
    if (tensor || arg.value.kind == Literal::Kind::kNone) continue;
    const GenericArg* schema_arg = nullptr;
    for (size_t k = 0; k < op.args.size(); ++k) {
      if (arg.name.empty() ? k == i : op.args[k].name == arg.name) schema_arg = &op.args[k];
    }
    if (schema_arg == nullptr) continue;
    if (std::optional<Literal> l = GenericLiteral(op, *schema_arg, p)) arg.value = *l;
  }
}

bool NodeBuilder::AppendGeneric(const ops::GenericOp& op, DType dtype, ShapeForm form) {
  const graph::Program saved_program = program_;
  const ops::TypeEnv saved_types = types_;
  auto small = [&](int64_t hi) { return random_.Range(1, hi); };
  // The first tensor's shape, reusing a pool value of the form when one fits.
  Shape first;
  std::string reused;
  switch (form) {
    case ShapeForm::kSame1:
      first = {random_.Pick(kDims)};
      reused = Reuse(
          dtype, [](const Shape& s) { return s.size() == 1; }, 0.5);
      break;
    case ShapeForm::kSame2:
    case ShapeForm::kBroadcast:
      first = {small(8), random_.Pick(kDims)};
      reused = Reuse(
          dtype, [](const Shape& s) { return s.size() == 2; }, 0.5);
      break;
    case ShapeForm::kSame3:
      first = {small(3), small(5), small(8)};
      reused = Reuse(
          dtype, [](const Shape& s) { return s.size() == 3; }, 0.5);
      break;
    case ShapeForm::kSame4:
      first = {small(2), small(3), random_.Range(4, 9), random_.Range(4, 9)};
      reused = Reuse(
          dtype, [](const Shape& s) { return s.size() == 4 && s[2] >= 4 && s[3] >= 4; }, 0.5);
      break;
    case ShapeForm::kSame5:
      first = {small(2), small(3), random_.Range(2, 5), random_.Range(2, 5), random_.Range(2, 5)};
      reused = Reuse(
          dtype, [](const Shape& s) { return s.size() == 5 && s[2] >= 2 && s[3] >= 2; }, 0.5);
      break;
    case ShapeForm::kGrid: {
      bool has_grid = false;
      for (const GenericArg& a : op.args) has_grid = has_grid || a.name == "grid";
      if (!has_grid) return false;
      first = absl::StrContains(op.name, "3d")
                  ? Shape{small(2), small(3), random_.Range(2, 5), random_.Range(2, 5),
                          random_.Range(2, 5)}
                  : Shape{small(2), small(3), random_.Range(2, 7), random_.Range(2, 7)};
      break;
    }
    case ShapeForm::kClasses: {
      bool has_target = false;
      for (const GenericArg& a : op.args) has_target = has_target || a.name == "target";
      if (!has_target) return false;
      first = absl::StrContains(op.name, "2d")
                  ? Shape{small(3), random_.Range(2, 6), random_.Range(1, 5), random_.Range(1, 5)}
                  : Shape{small(6), random_.Range(2, 9)};
      break;
    }
    case ShapeForm::kScalar:
      reused = Reuse(
          dtype, [](const Shape& s) { return s.empty(); }, 0.5);
      break;
    case ShapeForm::kSquare: {
      const int64_t n = small(6);
      first = random_.Chance(0.25) ? Shape{small(3), n, n} : Shape{n, n};
      reused = Reuse(
          dtype,
          [](const Shape& s) {
            return s.size() >= 2 && s.size() <= 3 && s[s.size() - 1] == s[s.size() - 2] &&
                   s.back() <= 8;
          },
          0.5);
      break;
    }
  }
  if (!reused.empty()) first = types_.at(reused).shape;
  const TensorType primary{dtype, first};
  int64_t min_dim = 1 << 20;
  for (int64_t d : first) min_dim = std::min(min_dim, d);
  if (first.empty() || min_dim < 1) min_dim = 1;

  const bool finite_only = op.family == "linalg" || op.family == "norm";
  int tensors = 0;
  // A tensor for a slot: the first is `primary`; index-like ones are in-range
  // i64, masks bool, the rest `dtype` in the form's shape.
  auto tensor = [&](absl::string_view arg_name) -> std::string {
    const int slot = tensors++;
    if (slot == 0 && !reused.empty()) return reused;
    Shape s = first;
    if (form == ShapeForm::kBroadcast && slot > 0) {
      if (random_.Chance(0.3) && !s.empty()) s.erase(s.begin());
      for (int64_t& d : s) {
        if (random_.Chance(0.4)) d = 1;
      }
    }
    if (form == ShapeForm::kClasses && arg_name == "target") {
      // A class index per sample (and pixel): the input without its class dim.
      Shape t = first;
      t.erase(t.begin() + 1);
      graph::Input in;
      in.name = FreshName("x");
      in.type = {DType::kI64, t};
      in.payload.kind = graph::Payload::Kind::kUniform;
      in.payload.seed = random_.Seed();
      in.payload.a = 0;
      in.payload.b = static_cast<double>(first[1]) - 0.51;
      types_[in.name] = in.type;
      program_.inputs.push_back(in);
      return in.name;
    }
    if (form == ShapeForm::kGrid && arg_name == "grid") {
      // [n, out spatial..., rank - 2] sampling points, mostly inside [-1, 1].
      Shape g = {first[0]};
      for (size_t k = 2; k < first.size(); ++k) g.push_back(random_.Range(1, 6));
      g.push_back(static_cast<int64_t>(first.size()) - 2);
      const std::string name = NewInput({dtype, g}, ops::Domain::kAny);
      graph::Payload& payload = program_.inputs.back().payload;
      payload.kind = graph::Payload::Kind::kUniform;
      payload.a = -1.2;
      payload.b = 1.2;
      return name;
    }
    if (IsIndexName(arg_name)) {
      graph::Input in;
      in.name = FreshName("x");
      in.type = {DType::kI64, s};
      in.payload.kind = graph::Payload::Kind::kUniform;
      in.payload.seed = random_.Seed();
      in.payload.a = 0;
      in.payload.b = static_cast<double>(min_dim) - 0.51;
      types_[in.name] = in.type;
      program_.inputs.push_back(in);
      return in.name;
    }
    const DType d = arg_name == "mask" ? DType::kBool : dtype;
    if (slot > 0 && random_.Chance(0.3)) {
      const std::string r = Reuse(
          d, [&](const Shape& shape) { return shape == s; }, 1.0);
      if (!r.empty()) return r;
    }
    const std::string name = NewInput({d, s}, ops::Domain::kAny);
    // Factorizations raise on inf/nan input: keep their inputs finite.
    if (finite_only && (graph::IsFloating(d) || graph::IsComplex(d))) {
      program_.inputs.back().payload.kind = graph::Payload::Kind::kNormal;
      program_.inputs.back().payload.a = 0;
      program_.inputs.back().payload.b = 1;
    }
    return name;
  };

  graph::Node node;
  node.op = op.name;
  node.overload = op.overload;
  bool positional = true;
  // Tensors first: literals need the first tensor's type.
  std::vector<std::optional<graph::Argument>> args(op.args.size());
  for (size_t i = 0; i < op.args.size(); ++i) {
    const GenericArg& a = op.args[i];
    if (a.has_default) continue;
    if (a.kind == GenericArg::Kind::kTensor) {
      args[i] = graph::Argument{"", a.optional ? Literal::None() : Ref(tensor(a.name))};
    } else if (a.kind == GenericArg::Kind::kTensorList && !a.optional) {
      const std::string x = tensor(a.name), y = tensor(a.name);
      args[i] = graph::Argument{"", Literal::List({Ref(x), Ref(y)})};
    }
  }
  for (size_t i = 0; i < op.args.size(); ++i) {
    const GenericArg& a = op.args[i];
    if (a.has_default) {
      // Vary the common reduction attributes now and then; otherwise the default.
      const ops::DeviceArgument* da = ops::DeviceArgumentOf(op.Qualified());
      const bool vary = (a.name == "keepdim" && a.kind == GenericArg::Kind::kBool) ||
                        (a.name == "dim" && (a.kind == GenericArg::Kind::kInt ||
                                             a.kind == GenericArg::Kind::kIntList)) ||
                        (da != nullptr && a.name == da->name);
      if (vary && random_.Chance(0.3)) {
        std::optional<Literal> l = GenericLiteral(op, a, primary);
        if (l) node.args.push_back({a.name, *l});
      }
      positional = false;
      continue;
    }
    graph::Argument arg;
    if (args[i]) {
      arg = *args[i];
    } else if (a.optional) {
      arg.value = Literal::None();
    } else {
      std::optional<Literal> l = GenericLiteral(op, a, primary);
      if (!l) {
        program_ = saved_program;
        types_ = saved_types;
        return false;
      }
      arg.value = *l;
    }
    if (!positional || a.kwarg_only) {
      arg.name = a.name;
      positional = false;
    }
    node.args.push_back(std::move(arg));
  }
  // PyTorch does not check kernel_size against the weight (the executor
  // declines a mismatch): take the weight's own spatial shape.
  if (ops::UncheckedPreconditionOf(op.name) == ops::UncheckedPrecondition::kWeightCoversKernel &&
      node.args.size() >= 3 && node.args[1].value.kind == Literal::Kind::kValue &&
      node.args[2].value.kind == Literal::Kind::kList) {
    const Shape& w = types_.at(node.args[1].value.s).shape;
    if (w.size() >= 3) node.args[2].value = Literal::List(Ints(Shape(w.begin() + 2, w.end())));
  }
  // Not InferNode: its check of the learned dtypes would keep the learner
  // from ever learning a dtype the current table lacks.
  absl::StatusOr<std::vector<TensorType>> out = ops::InferGeneric(node, types_);
  bool ok = out.ok() && static_cast<int>(out->size()) == op.num_returns;
  if (ok) {
    for (const TensorType& t : *out) ok = ok && t.Numel() <= 16 * kMaxGeneratedNumel;
  }
  if (!ok) {
    program_ = saved_program;
    types_ = saved_types;
    return false;
  }
  for (const TensorType& t : *out) {
    node.results.push_back(FreshName("v"));
    types_[node.results.back()] = t;
  }
  program_.nodes.push_back(std::move(node));
  return true;
}

bool NodeBuilder::Rebind(const ops::OpSpec& spec, graph::Node& node) {
  if (spec.rule != Rule::kGeneric) return false;
  const ops::GenericOp& op = *spec.generic;
  std::vector<std::string> refs;
  for (const graph::Argument& a : node.args) {
    if (a.value.kind == Literal::Kind::kValue) refs.push_back(a.value.s);
  }
  size_t wanted = 0;
  for (const GenericArg& a : op.args) {
    if (a.kind == GenericArg::Kind::kTensorList && !a.has_default && !a.optional) return false;
    wanted += a.kind == GenericArg::Kind::kTensor && !a.has_default && !a.optional;
  }
  if (refs.empty() || wanted != refs.size() || !types_.count(refs[0])) return false;
  const TensorType primary = types_.at(refs[0]);
  graph::Node next = node;
  next.op = op.name;
  next.overload = op.overload;
  next.args.clear();
  size_t used = 0;
  bool positional = true;
  for (const GenericArg& a : op.args) {
    if (a.has_default) {
      positional = false;
      continue;
    }
    graph::Argument arg;
    if (a.optional) {
      arg.value = Literal::None();
    } else if (a.kind == GenericArg::Kind::kTensor) {
      arg.value = Ref(refs[used++]);
    } else if (std::optional<Literal> l = GenericLiteral(op, a, primary)) {
      arg.value = *l;
    } else {
      return false;
    }
    if (!positional || a.kwarg_only) {
      arg.name = a.name;
      positional = false;
    }
    next.args.push_back(std::move(arg));
  }
  absl::StatusOr<std::vector<TensorType>> out = ops::InferNode(spec, next, types_);
  if (!out.ok() || out->size() != node.results.size()) return false;
  node = std::move(next);
  return true;
}

bool NodeBuilder::AppendGenericOp(const ops::OpSpec& spec, DType dtype, bool one_sided) {
  // Half the time, attention as models call it (CUDA picks among four kernels by shape).
  if (!one_sided && (spec.cuda_kernels & ops::kCudaAttention) &&
      spec.name == "aten::scaled_dot_product_attention" && random_.Chance(0.5) &&
      AppendAttention(spec, dtype)) {
    return true;
  }
  std::vector<const ops::GenericForm*> forms;
  for (const ops::GenericForm& f : spec.generic->forms) {
    if (f.dtype == dtype && f.one_sided == one_sided) forms.push_back(&f);
  }
  for (int attempt = 0; attempt < 5 && !forms.empty(); ++attempt) {
    if (AppendGeneric(*spec.generic, dtype, random_.Pick(forms)->shape)) return true;
  }
  return false;
}

}  // namespace divfuzz::mutators
