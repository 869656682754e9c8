#include "mutators/node_builder.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
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
}

bool NodeBuilder::Append(const ops::OpSpec& spec, DType dtype) {
  if (!ops::Has(spec.dtypes, dtype)) return false;
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
        const std::string base = value_or_new(
            Reuse(
                dtype, [n](const Shape& s) { return s.size() == 2 && s[0] <= 8; }, 0.5),
            {dtype, {n, n}});
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

}  // namespace divfuzz::mutators
