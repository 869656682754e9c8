#include "ops/catalogue.h"

#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "ops/generic.h"
#include "ops/kernel_classes.h"

namespace divfuzz::ops {
namespace {

using graph::DType;
constexpr DTypeMask kFloat = Mask({DType::kF16, DType::kBF16, DType::kF32, DType::kF64});
constexpr DTypeMask kF32F64 = Mask({DType::kF32, DType::kF64});
constexpr DTypeMask kInt = Mask({DType::kI8, DType::kI16, DType::kI32, DType::kI64, DType::kU8});
constexpr DTypeMask kSignedInt = Mask({DType::kI8, DType::kI16, DType::kI32, DType::kI64});
constexpr DTypeMask kNum = kFloat | kInt;

OpSpec Op(absl::string_view name, absl::string_view overload, Rule rule, DTypeMask dtypes,
          absl::string_view family, Domain domain = Domain::kAny) {
  OpSpec s{name, overload, rule, dtypes};
  s.family = family;
  s.domain = domain;
  return s;
}

OpSpec Scalar(absl::string_view name, absl::string_view overload, DTypeMask dtypes,
              absl::string_view family, double low, double high) {
  OpSpec s = Op(name, overload, Rule::kUnaryScalar, dtypes, family);
  s.scalar_low = low;
  s.scalar_high = high;
  return s;
}

OpSpec Positions(OpSpec s, int dim_pos, int keepdim_pos) {
  s.dim_pos = dim_pos;
  s.keepdim_pos = keepdim_pos;
  return s;
}

OpSpec With(OpSpec s, uint64_t hints) {
  s.hints |= hints;
  return s;
}

OpSpec Widening(OpSpec s) {
  s.integer_sum_widens = true;
  return s;
}

std::vector<OpSpec> Build() {
  const Rule U = Rule::kUnary;
  return {
      // Exponential and logarithmic.
      Op("aten::exp", "", U, kFloat, "exp_log"),
      Op("aten::exp2", "", U, kFloat, "exp_log"),
      Op("aten::expm1", "", U, kFloat, "exp_log"),
      Op("aten::log", "", U, kFloat, "exp_log", Domain::kPositive),
      Op("aten::log2", "", U, kFloat, "exp_log", Domain::kPositive),
      Op("aten::log10", "", U, kFloat, "exp_log", Domain::kPositive),
      Op("aten::log1p", "", U, kFloat, "exp_log", Domain::kPositive),
      Op("aten::sqrt", "", U, kFloat, "exp_log", Domain::kPositive),
      Op("aten::rsqrt", "", U, kFloat, "exp_log", Domain::kPositive),
      Op("aten::reciprocal", "", U, kFloat, "division"),
      // Trigonometric and hyperbolic.
      Op("aten::sin", "", U, kFloat, "trig"),
      Op("aten::cos", "", U, kFloat, "trig"),
      Op("aten::tan", "", U, kFloat, "trig"),
      Op("aten::asin", "", U, kFloat, "trig", Domain::kUnit),
      Op("aten::acos", "", U, kFloat, "trig", Domain::kUnit),
      Op("aten::atan", "", U, kFloat, "trig"),
      Op("aten::sinh", "", U, kFloat, "hyperbolic"),
      Op("aten::cosh", "", U, kFloat, "hyperbolic"),
      Op("aten::tanh", "", U, kFloat, "hyperbolic"),
      Op("aten::asinh", "", U, kFloat, "hyperbolic"),
      Op("aten::acosh", "", U, kFloat, "hyperbolic", Domain::kAtLeastOne),
      Op("aten::arccosh", "", U, kFloat, "hyperbolic", Domain::kAtLeastOne),
      Op("aten::atanh", "", U, kFloat, "hyperbolic", Domain::kUnit),
      // Special functions.
      Op("aten::erf", "", U, kFloat, "special"),
      Op("aten::erfc", "", U, kFloat, "special"),
      Op("aten::erfinv", "", U, kFloat, "special", Domain::kUnit),
      Op("aten::lgamma", "", U, kFloat, "special"),
      Op("aten::digamma", "", U, kFloat, "special"),
      Op("aten::sigmoid", "", U, kFloat, "activation"),
      // Activations.
      Op("aten::relu", "", U, kFloat | kSignedInt, "activation"),
      Op("aten::gelu", "", U, kFloat, "activation"),
      Op("aten::silu", "", U, kFloat, "activation"),
      Op("aten::mish", "", U, kFloat, "activation"),
      Op("aten::hardswish", "", U, kFloat, "activation"),
      Op("aten::hardsigmoid", "", U, kFloat, "activation"),
      Scalar("aten::leaky_relu", "", kFloat, "activation", 0.0, 0.5),
      Scalar("aten::softplus", "", kFloat, "activation", 0.5, 4.0),
      Scalar("aten::elu", "", kFloat, "activation", 0.1, 2.0),
      // Rounding and sign.
      Op("aten::abs", "", U, kFloat | kSignedInt, "sign"),
      Op("aten::neg", "", U, kFloat | kSignedInt, "sign"),
      Op("aten::sign", "", U, kFloat | kSignedInt, "sign"),
      Op("aten::floor", "", U, kFloat, "rounding"),
      Op("aten::ceil", "", U, kFloat, "rounding"),
      Op("aten::round", "", U, kFloat, "rounding"),
      Op("aten::trunc", "", U, kFloat, "rounding"),
      Op("aten::frac", "", U, kFloat, "rounding"),
      Op("aten::square", "", U, kFloat | kSignedInt, "arith"),
      // Binary arithmetic.
      Op("aten::add", "Tensor", Rule::kBinary, kNum, "arith"),
      Op("aten::sub", "Tensor", Rule::kBinary, kFloat | kSignedInt, "arith"),
      Op("aten::mul", "Tensor", Rule::kBinary, kNum, "arith"),
      Op("aten::div", "Tensor", Rule::kBinary, kFloat, "division"),
      // Integer division by zero raises on the CPU; CUDA has no such check.
      Op("aten::remainder", "Tensor", Rule::kBinary, kFloat | kInt, "division"),
      Op("aten::fmod", "Tensor", Rule::kBinary, kFloat | kInt, "division"),
      Op("aten::pow", "Tensor_Tensor", Rule::kBinary, kFloat, "exp_log"),
      Op("aten::atan2", "", Rule::kBinary, kFloat, "trig"),
      Op("aten::hypot", "", Rule::kBinary, kFloat, "arith"),
      Op("aten::maximum", "", Rule::kBinary, kNum, "minmax"),
      Op("aten::minimum", "", Rule::kBinary, kNum, "minmax"),
      Op("aten::fmax", "", Rule::kBinary, kFloat, "minmax"),
      Op("aten::fmin", "", Rule::kBinary, kFloat, "minmax"),
      Op("aten::xlogy", "Tensor", Rule::kBinary, kFloat, "exp_log"),
      Op("aten::logaddexp", "", Rule::kBinary, kFloat, "exp_log"),
      Op("aten::copysign", "Tensor", Rule::kBinary, kFloat, "sign"),
      Op("aten::bitwise_and", "Tensor", Rule::kBinary, kInt, "bitwise"),
      Op("aten::bitwise_or", "Tensor", Rule::kBinary, kInt, "bitwise"),
      Op("aten::bitwise_xor", "Tensor", Rule::kBinary, kInt, "bitwise"),
      // Tensor-scalar arithmetic.
      Scalar("aten::add", "Scalar", kFloat, "arith", -4, 4),
      Scalar("aten::mul", "Scalar", kFloat, "arith", -4, 4),
      Scalar("aten::div", "Scalar", kFloat, "division", 0.25, 8),
      Scalar("aten::pow", "Tensor_Scalar", kFloat, "exp_log", -3, 3),
      Scalar("aten::clamp_min", "", kFloat, "minmax", -1, 1),
      Scalar("aten::clamp_max", "", kFloat, "minmax", -1, 1),
      // Comparisons.
      Op("aten::eq", "Tensor", Rule::kCompare, kNum, "compare"),
      Op("aten::ne", "Tensor", Rule::kCompare, kNum, "compare"),
      Op("aten::lt", "Tensor", Rule::kCompare, kNum, "compare"),
      Op("aten::le", "Tensor", Rule::kCompare, kNum, "compare"),
      Op("aten::gt", "Tensor", Rule::kCompare, kNum, "compare"),
      Op("aten::ge", "Tensor", Rule::kCompare, kNum, "compare"),
      // Reductions.
      With(Widening(Op("aten::sum", "", Rule::kReduceAll, kNum, "reduction")),
           kCancellingReduction),
      With(Widening(Op("aten::prod", "", Rule::kReduceAll, kNum, "reduction")), kProductReduction),
      With(Op("aten::mean", "", Rule::kReduceAll, kFloat, "reduction"), kCancellingReduction),
      Op("aten::max", "", Rule::kReduceAll, kNum, "reduction"),
      Op("aten::min", "", Rule::kReduceAll, kNum, "reduction"),
      With(Widening(Op("aten::sum", "dim_IntList", Rule::kReduceDims, kNum, "reduction")),
           kCancellingReduction),
      With(Op("aten::mean", "dim", Rule::kReduceDims, kFloat, "reduction"), kCancellingReduction),
      Op("aten::amax", "", Rule::kReduceDims, kNum, "reduction"),
      Op("aten::amin", "", Rule::kReduceDims, kNum, "reduction"),
      Op("aten::logsumexp", "", Rule::kReduceDims, kFloat, "reduction"),
      Positions(Op("aten::var", "correction", Rule::kReduceDims, kFloat, "reduction"), 1, -1),
      Positions(Op("aten::std", "correction", Rule::kReduceDims, kFloat, "reduction"), 1, -1),
      Positions(Op("aten::linalg_vector_norm", "", Rule::kReduceDims, kFloat, "norm"), 2, 3),
      With(Widening(Op("aten::prod", "dim_int", Rule::kReduceOneDim, kNum, "reduction")),
           kProductReduction),
      // Softmax family and scans.
      Op("aten::softmax", "int", Rule::kDimwise, kFloat, "softmax"),
      Op("aten::log_softmax", "int", Rule::kDimwise, kFloat, "softmax"),
      With(Widening(Op("aten::cumsum", "", Rule::kDimwise, kNum, "scan")), kCancellingReduction),
      With(Widening(Op("aten::cumprod", "", Rule::kDimwise, kNum, "scan")), kProductReduction),
      Op("aten::logcumsumexp", "", Rule::kDimwise, kFloat, "scan"),
      // Matrix products.
      With(Op("aten::mm", "", Rule::kMm, kFloat, "matmul"), kCancellingMatmul | kTf32Sensitive),
      With(Op("aten::bmm", "", Rule::kBmm, kFloat, "matmul"), kCancellingMatmul | kTf32Sensitive),
      With(Op("aten::matmul", "", Rule::kMatmul, kFloat, "matmul"),
           kCancellingMatmul | kTf32Sensitive),
      With(Op("aten::linear", "", Rule::kLinear, kFloat, "matmul"),
           kCancellingMatmul | kTf32Sensitive),
      Op("aten::t", "", Rule::kTranspose2d, kNum, "layout"),
      Op("aten::trace", "", Rule::kTrace, kF32F64, "linalg"),
      // Linear algebra through LAPACK / cuSOLVER.
      With(Op("aten::logdet", "", Rule::kSquareToBatch, kF32F64, "linalg"), kConditioned),
      With(Op("aten::det", "", Rule::kSquareToBatch, kF32F64, "linalg"), kConditioned),
      With(Op("aten::linalg_det", "", Rule::kSquareToBatch, kF32F64, "linalg"), kConditioned),
      With(Op("aten::slogdet", "", Rule::kSquareToTwoBatch, kF32F64, "linalg"), kConditioned),
      With(Op("aten::linalg_slogdet", "", Rule::kSquareToTwoBatch, kF32F64, "linalg"),
           kConditioned),
      With(Op("aten::inverse", "", Rule::kSquare, kF32F64, "linalg"), kConditioned),
      With(Op("aten::linalg_inv", "", Rule::kSquare, kF32F64, "linalg"), kConditioned),
      With(Op("aten::linalg_cholesky", "", Rule::kSquare, kF32F64, "linalg", Domain::kSpd),
           kConditioned),
      With(Op("aten::cholesky", "", Rule::kSquare, kF32F64, "linalg", Domain::kSpd), kConditioned),
      Op("aten::linalg_matrix_exp", "", Rule::kSquare, kF32F64, "linalg"),
      With(Op("aten::linalg_eigvalsh", "", Rule::kSquareToVector, kF32F64, "linalg"), kConditioned),
      With(Op("aten::linalg_solve", "", Rule::kSolve, kF32F64, "linalg"), kConditioned),
      // Factorizations with an info output: results are only defined where info == 0.
      With(Op("aten::linalg_cholesky_ex", "", Rule::kSquareWithInfo, kF32F64, "linalg",
              Domain::kSpd),
           kInfoGated | kConditioned),
      With(Op("aten::linalg_inv_ex", "", Rule::kSquareWithInfo, kF32F64, "linalg"),
           kInfoGated | kConditioned),
      // Decompositions: signs and phases of factors are free; compared via invariants.
      With(Op("aten::linalg_qr", "", Rule::kQr, kF32F64, "decomposition"), kDecomposition),
      With(Op("aten::linalg_svd", "", Rule::kSvd, kF32F64, "decomposition"),
           kDecomposition | kConditioned),
      With(Op("aten::linalg_eigh", "", Rule::kEigh, kF32F64, "decomposition"),
           kDecomposition | kConditioned),
      With(Op("aten::linalg_eig", "", Rule::kEig, kF32F64, "decomposition"),
           kDecomposition | kConditioned),
      With(Op("aten::linalg_lu", "", Rule::kLu, kF32F64, "decomposition"),
           kDecomposition | kConditioned),
      // Index outputs: ties make the indices free; their selected values are compared.
      With(Op("aten::argmax", "", Rule::kArgReduce, kNum, "indexing"), kIndicesOutput),
      With(Op("aten::argmin", "", Rule::kArgReduce, kNum, "indexing"), kIndicesOutput),
      With(Op("aten::max", "dim", Rule::kValuesIndices, kNum, "indexing"), kIndicesOutput),
      With(Op("aten::min", "dim", Rule::kValuesIndices, kNum, "indexing"), kIndicesOutput),
      With(Op("aten::median", "dim", Rule::kValuesIndices, kNum, "indexing"), kIndicesOutput),
      With(Op("aten::mode", "", Rule::kValuesIndices, kNum, "indexing"), kIndicesOutput),
      With(Op("aten::sort", "", Rule::kSort, kNum, "indexing"), kIndicesOutput),
      With(Positions(Op("aten::topk", "", Rule::kTopk, kNum, "indexing"), 2, -1), kIndicesOutput),
      // More elementwise math and torch.special.
      Op("aten::sinc", "", U, kFloat, "special"),
      Op("aten::deg2rad", "", U, kFloat, "trig"),
      Op("aten::rad2deg", "", U, kFloat, "trig"),
      Op("aten::arcsin", "", U, kFloat, "trig", Domain::kUnit),
      Op("aten::arctan", "", U, kFloat, "trig"),
      Op("aten::arcsinh", "", U, kFloat, "hyperbolic"),
      Op("aten::logit", "", U, kFloat, "exp_log", Domain::kUnit),
      Op("aten::i0", "", U, kFloat, "special"),
      Op("aten::special_i0e", "", U, kF32F64, "special"),
      Op("aten::special_i1", "", U, kF32F64, "special"),
      Op("aten::special_i1e", "", U, kF32F64, "special"),
      Op("aten::special_ndtr", "", U, kF32F64, "special"),
      Op("aten::special_ndtri", "", U, kF32F64, "special", Domain::kUnit),
      Op("aten::special_log_ndtr", "", U, kF32F64, "special"),
      Op("aten::special_erfcx", "", U, kF32F64, "special"),
      Op("aten::special_entr", "", U, kF32F64, "special"),
      Op("aten::special_expit", "", U, kFloat, "special"),
      Op("aten::special_bessel_j0", "", U, kF32F64, "special"),
      Op("aten::special_bessel_j1", "", U, kF32F64, "special"),
      Op("aten::special_modified_bessel_i0", "", U, kF32F64, "special"),
      Op("aten::special_modified_bessel_k0", "", U, kF32F64, "special", Domain::kPositive),
      Op("aten::nan_to_num", "", U, kFloat, "special"),
      Op("aten::sgn", "", U, kFloat | kSignedInt, "sign"),
      Op("aten::negative", "", U, kFloat | kSignedInt, "sign"),
      Op("aten::fix", "", U, kFloat, "rounding"),
      Op("aten::bitwise_not", "", U, kInt, "bitwise"),
      // More activations.
      Op("aten::selu", "", U, kFloat, "activation"),
      Op("aten::celu", "", U, kFloat, "activation"),
      Op("aten::relu6", "", U, kFloat, "activation"),
      Op("aten::hardtanh", "", U, kFloat, "activation"),
      Op("aten::log_sigmoid", "", U, kFloat, "activation"),
      Scalar("aten::softshrink", "", kFloat, "activation", 0.0, 1.0),
      Scalar("aten::hardshrink", "", kFloat, "activation", 0.0, 1.0),
      // More binary arithmetic, integer arithmetic and logic.
      Op("aten::true_divide", "Tensor", Rule::kBinary, kFloat, "division"),
      Op("aten::floor_divide", "", Rule::kBinary, kFloat | kInt, "division"),
      Op("aten::nextafter", "", Rule::kBinary, kF32F64, "arith"),
      Op("aten::ldexp", "Tensor", Rule::kBinary, kF32F64, "exp_log"),
      Op("aten::igamma", "", Rule::kBinary, kF32F64, "special", Domain::kPositive),
      Op("aten::igammac", "", Rule::kBinary, kF32F64, "special", Domain::kPositive),
      Op("aten::special_xlog1py", "", Rule::kBinary, kF32F64, "special"),
      Op("aten::special_zeta", "", Rule::kBinary, kF32F64, "special", Domain::kPositive),
      Op("aten::logaddexp2", "", Rule::kBinary, kFloat, "exp_log"),
      Op("aten::heaviside", "", Rule::kBinary, kNum, "sign"),
      Op("aten::gcd", "", Rule::kBinary, kInt, "integer"),
      Op("aten::lcm", "", Rule::kBinary, kInt, "integer"),
      Op("aten::bitwise_left_shift", "Tensor", Rule::kBinary, kInt, "bitwise"),
      Op("aten::bitwise_right_shift", "Tensor", Rule::kBinary, kInt, "bitwise"),
      Op("aten::logical_and", "", Rule::kCompare, kNum, "compare"),
      Op("aten::logical_or", "", Rule::kCompare, kNum, "compare"),
      Op("aten::logical_xor", "", Rule::kCompare, kNum, "compare"),
      // More reductions and softmax variants.
      With(Op("aten::nansum", "", Rule::kReduceDims, kFloat, "reduction"), kCancellingReduction),
      With(Op("aten::nanmean", "", Rule::kReduceDims, kFloat, "reduction"), kCancellingReduction),
      Op("aten::special_logsumexp", "", Rule::kReduceDims, kFloat, "reduction"),
      Op("aten::median", "", Rule::kReduceAll, kNum, "reduction"),
      Op("aten::nanmedian", "", Rule::kReduceAll, kFloat, "reduction"),
      With(Op("aten::nanmedian", "dim", Rule::kValuesIndices, kFloat, "indexing"), kIndicesOutput),
      Op("aten::special_softmax", "", Rule::kDimwise, kFloat, "softmax"),
      Op("aten::special_log_softmax", "", Rule::kDimwise, kFloat, "softmax"),
      // More linear algebra.
      With(Op("aten::pinverse", "", Rule::kSquare, kF32F64, "linalg"), kConditioned),
      Op("aten::matrix_exp", "", Rule::kSquare, kF32F64, "linalg"),
      With(Op("aten::cholesky_inverse", "", Rule::kSquare, kF32F64, "linalg", Domain::kSpd),
           kConditioned),
      Op("aten::triu", "", Rule::kSquare, kNum, "layout"),
      Op("aten::tril", "", Rule::kSquare, kNum, "layout"),
      With(Op("aten::linalg_cond", "", Rule::kSquareToBatch, kF32F64, "linalg"), kConditioned),
      Op("aten::linalg_matrix_norm", "str_ord", Rule::kSquareToBatch, kF32F64, "norm"),
      With(Op("aten::linalg_svdvals", "", Rule::kSquareToVector, kF32F64, "linalg"), kConditioned),
      // Casts (float to int out of range is undefined behaviour in C++).
      Op("aten::to", "dtype", Rule::kCast, kNum | Mask(DType::kBool), "cast"),
  };
}

}  // namespace

std::string OpSpec::Qualified() const {
  std::string q(name);
  if (!overload.empty()) q += "." + std::string(overload);
  return q;
}

const std::vector<OpSpec>& Catalogue() {
  // Curated entries first; then the generic ops the learned table keeps,
  // unless a curated entry already covers them.
  static const std::vector<OpSpec>* catalogue = [] {
    auto* all = new std::vector<OpSpec>(Build());
    std::map<std::string, bool> curated;
    for (const OpSpec& s : *all) curated[s.Qualified()] = true;
    for (const GenericOp& op : GenericOps()) {
      if (!curated.count(op.Qualified())) all->push_back(GenericSpec(op));
    }
    for (OpSpec& s : *all) ApplyKernelClasses(s);
    return all;
  }();
  return *catalogue;
}

const OpSpec* FindOp(absl::string_view qualified) {
  static const auto* index = [] {
    auto* m = new std::map<std::string, const OpSpec*, std::less<>>();
    for (const OpSpec& s : Catalogue()) (*m)[s.Qualified()] = &s;
    return m;
  }();
  auto it = index->find(qualified);
  return it == index->end() ? nullptr : it->second;
}

const OpSpec* FindAnyOverload(absl::string_view name) {
  static const auto* index = [] {
    auto* m = new std::map<std::string, const OpSpec*, std::less<>>();
    for (const OpSpec& s : Catalogue()) m->emplace(std::string(s.name), &s);
    return m;
  }();
  auto it = index->find(name);
  return it == index->end() ? nullptr : it->second;
}

absl::string_view DecompositionName(absl::string_view qualified) {
  const OpSpec* spec = FindOp(qualified);
  if (spec == nullptr || !(spec->hints & kDecomposition)) return "";
  switch (spec->decomposition) {
    case Decomposition::kQr:
      return "qr";
    case Decomposition::kSvd:
      return "svd";
    case Decomposition::kSvdV:
      return "svd_v";
    case Decomposition::kEigh:
      return "eigh";
    case Decomposition::kLu:
      return "lu";
    case Decomposition::kEig:
      return "eig";
    case Decomposition::kNone:
      break;
  }
  return "";
}

}  // namespace divfuzz::ops
