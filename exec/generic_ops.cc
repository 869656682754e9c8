#include "exec/generic_ops.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "exec/arguments.h"
#include "exec/dtype_convert.h"
#include "exec/index_precheck.h"

namespace divfuzz::exec {
namespace {

using ops::GenericArg;

// Name parts of ops that are random, uninitialized, data-dependent in their
// output size, backend-internal or otherwise not worth differential testing.
constexpr absl::string_view kExcludedParts[] = {
    "rand",
    "dropout",
    "bernoulli",
    "multinomial",
    "normal",
    "poisson",
    "uniform",
    "exponential",
    "geometric",
    "cauchy",
    "log_normal",
    "rrelu",
    "empty",
    "backward",
    "quantize",
    "fbgemm",
    "mkl",
    "cudnn",
    "miopen",
    "native_",
    "sparse",
    "mps",
    "vulkan",
    "xnnpack",
    "fake_quant",
    "nested",
    "unique",
    "nonzero",
    "argwhere",
    "masked_select",
    "pin_memory",
    "to_padded",
    "q_",
    "int_repr",
    "record_stream",
    "lift",
    "sym_",
    "segment_reduce",
    "to_dense",
    "coalesce",
    "fused",
    "cufft",
    "align_",
    "refine_names",
    "rename",
    "retain",
    "requires_grad",
    "is_",
    "resize",
    "set_",
    "as_strided",
    "from_file",
    "unsafe",
    "bincount",
    "repeat_interleave",
    "histogram",
};
// Whole names: sparse accessors, Python-only helpers, and identities.
constexpr absl::string_view kExcludedNames[] = {
    "indices", "values", "crow_indices", "col_indices", "row_indices", "ccol_indices",
    "data",    "item",   "alias",        "output_nr",   "detach",      "contiguous",
};

bool Excluded(absl::string_view base) {
  if (base.empty() || base[0] == '_' || base.back() == '_') return true;
  for (absl::string_view part : kExcludedParts) {
    if (absl::StrContains(base, part)) return true;
  }
  for (absl::string_view name : kExcludedNames) {
    if (base == name) return true;
  }
  return false;
}

GenericArg::Kind KindOf(const c10::TypePtr& type) {
  using K = c10::TypeKind;
  switch (type->kind()) {
    case K::TensorType:
      return GenericArg::Kind::kTensor;
    case K::IntType:
    case K::SymIntType:
      return GenericArg::Kind::kInt;
    case K::FloatType:
    case K::SymFloatType:
      return GenericArg::Kind::kFloat;
    case K::BoolType:
    case K::SymBoolType:
      return GenericArg::Kind::kBool;
    case K::NumberType:
      return GenericArg::Kind::kScalar;
    case K::ScalarTypeType:
      return GenericArg::Kind::kScalarType;
    case K::StringType:
      return GenericArg::Kind::kString;
    case K::ListType: {
      const c10::TypePtr elem = type->castRaw<c10::ListType>()->getElementType();
      switch (elem->kind()) {
        case K::TensorType:
          return GenericArg::Kind::kTensorList;
        case K::IntType:
        case K::SymIntType:
          return GenericArg::Kind::kIntList;
        case K::FloatType:
          return GenericArg::Kind::kFloatList;
        case K::BoolType:
          return GenericArg::Kind::kBoolList;
        default:
          return GenericArg::Kind::kOther;
      }
    }
    default:
      return GenericArg::Kind::kOther;
  }
}

// Required string arguments the generator can fill in (ops/ picks the value).
bool KnownString(absl::string_view name) { return name == "reduce"; }

std::string Family(absl::string_view base) {
  struct Rule {
    absl::string_view part, family;
  };
  static constexpr Rule kRules[] = {
      {"fft", "fft"},
      {"linalg", "linalg"},
      {"special", "special"},
      {"conv", "conv"},
      {"pool", "pooling"},
      {"loss", "loss"},
      {"norm", "norm"},
      {"bitwise", "bitwise"},
      {"softmax", "softmax"},
      {"upsample", "interpolation"},
      {"interpolate", "interpolation"},
      {"grid_sampler", "interpolation"},
      {"scatter", "indexing"},
      {"gather", "indexing"},
      {"index", "indexing"},
      {"take", "indexing"},
      {"masked", "indexing"},
      {"cum", "scan"},
      {"sort", "sort"},
      {"topk", "sort"},
      {"kthvalue", "sort"},
      {"matmul", "matmul"},
      {"dot", "matmul"},
      {"mv", "matmul"},
      {"addr", "matmul"},
      {"einsum", "matmul"},
      {"complex", "complex"},
      {"real", "complex"},
      {"imag", "complex"},
      {"angle", "complex"},
      {"conj", "complex"},
      {"polar", "complex"},
      {"pad", "padding"},
      {"lu", "linalg"},
      {"chol", "linalg"},
      {"det", "linalg"},
      {"solve", "linalg"},
      {"inverse", "linalg"},
      {"eig", "linalg"},
      {"svd", "linalg"},
      {"qr", "linalg"},
      {"lstsq", "linalg"},
      {"pinv", "linalg"},
      {"matrix", "linalg"},
      {"elu", "activation"},
      {"relu", "activation"},
      {"sigmoid", "activation"},
      {"tanh", "activation"},
      {"shrink", "activation"},
      {"glu", "activation"},
      {"softplus", "activation"},
      {"threshold", "activation"},
      {"prelu", "activation"},
      {"sum", "reduction"},
      {"mean", "reduction"},
      {"prod", "reduction"},
      {"var", "reduction"},
      {"std", "reduction"},
      {"max", "reduction"},
      {"min", "reduction"},
      {"all", "reduction"},
      {"any", "reduction"},
      {"median", "reduction"},
      {"mode", "reduction"},
      {"count", "reduction"},
      {"eq", "compare"},
      {"ne", "compare"},
      {"lt", "compare"},
      {"gt", "compare"},
      {"le", "compare"},
      {"ge", "compare"},
      {"isclose", "compare"},
      {"log", "exp_log"},
      {"exp", "exp_log"},
      {"sin", "trig"},
      {"cos", "trig"},
      {"tan", "trig"},
      {"round", "rounding"},
      {"floor", "rounding"},
      {"ceil", "rounding"},
  };
  // "mm" names a matrix product only as a word end (mm, bmm, addmm, _mm):
  // inside a word it is gamma's (lgamma, polygamma, mvlgamma, igamma).
  if (absl::StrContains(base, "gamma")) return "special";
  if (absl::EndsWith(base, "mm") || absl::StrContains(base, "mm_")) return "matmul";
  for (const Rule& r : kRules) {
    if (absl::StrContains(base, r.part)) return std::string(r.family);
  }
  return "generic";
}

std::optional<ops::GenericOp> Describe(const c10::FunctionSchema& schema) {
  const std::string& full = schema.name();
  if (!absl::StartsWith(full, "aten::")) return std::nullopt;
  const absl::string_view base = absl::string_view(full).substr(6);
  if (Excluded(base) || schema.is_mutable() || schema.is_vararg() || schema.is_varret()) {
    return std::nullopt;
  }
  if (absl::StrContains(schema.overload_name(), "out") ||
      absl::StrContains(schema.overload_name(), "generator") ||
      absl::StrContains(schema.overload_name(), "dimname") ||
      absl::StrContains(schema.overload_name(), "names")) {
    return std::nullopt;
  }
  if (schema.returns().empty()) return std::nullopt;
  for (const c10::Argument& r : schema.returns()) {
    if (r.type()->kind() != c10::TypeKind::TensorType) return std::nullopt;
  }
  ops::GenericOp op;
  op.name = full;
  op.overload = schema.overload_name();
  op.num_returns = static_cast<int>(schema.returns().size());
  op.family = Family(base);
  bool takes_tensor = false;
  for (const c10::Argument& a : schema.arguments()) {
    const std::string type = a.type()->str();
    if (absl::StrContains(type, "Generator")) return std::nullopt;
    GenericArg g;
    g.name = a.name();
    g.has_default = a.default_value().has_value();
    g.kwarg_only = a.kwarg_only();
    c10::TypePtr t = a.real_type();
    if (t->kind() == c10::TypeKind::OptionalType) {
      g.optional = true;
      t = t->castRaw<c10::OptionalType>()->getElementType();
    }
    g.kind = KindOf(t);
    const bool required = !g.has_default && !g.optional;
    if (required && (g.kind == GenericArg::Kind::kOther ||
                     (g.kind == GenericArg::Kind::kString && !KnownString(g.name)))) {
      return std::nullopt;
    }
    if (g.kind == GenericArg::Kind::kTensor || g.kind == GenericArg::Kind::kTensorList) {
      takes_tensor = takes_tensor || required;
    }
    op.args.push_back(std::move(g));
  }
  if (!takes_tensor) return std::nullopt;  // factories
  return op;
}

at::Tensor MetaTensor(const graph::TensorType& t) {
  return at::empty(t.shape, at::TensorOptions().dtype(ToScalarType(t.dtype)).device(at::kMeta));
}

}  // namespace

std::vector<ops::GenericOp> EnumerateGenericOps() {
  std::vector<ops::GenericOp> out;
  for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
    std::optional<c10::OperatorHandle> handle = c10::Dispatcher::singleton().findOp(name);
    if (!handle.has_value() || !handle->hasSchema()) continue;
    std::optional<ops::GenericOp> op = Describe(handle->schema());
    if (!op) continue;
    op->pointwise = handle->hasTag(at::Tag::pointwise);
    out.push_back(std::move(*op));
  }
  std::sort(out.begin(), out.end(), [](const ops::GenericOp& a, const ops::GenericOp& b) {
    return a.Qualified() < b.Qualified();
  });
  return out;
}

namespace {

// Runs the node on tensors made by `make`; the results' types.
absl::StatusOr<std::vector<graph::TensorType>> InferWith(
    const c10::OperatorHandle& handle, const graph::Node& node, const ops::TypeEnv& env,
    const std::function<at::Tensor(const graph::TensorType&)>& make, bool runs_kernel,
    bool* no_kernel) {
  const ValueLookup lookup = [&](const std::string& name) {
    auto it = env.find(name);
    return it == env.end() ? at::Tensor() : make(it->second);
  };
  try {
    absl::StatusOr<torch::jit::Stack> stack = BuildStack(handle.schema(), node, lookup);
    if (!stack.ok()) return stack.status();
    // A stand-in run is a real CPU kernel in this process: arguments PyTorch
    // does not check (SDPA's key and value of different lengths raise SIGFPE
    // in the CPU's flash attention) would kill the fuzzer during shape
    // inference, before the executor's own check could decline the node.
    if (runs_kernel) {
      if (std::optional<std::string> why = UncheckedRead(handle, *stack, &node, &env)) {
        return absl::InvalidArgumentError(*why);
      }
    }
    handle.callBoxed(&*stack);
    std::vector<graph::TensorType> out;
    for (const c10::IValue& v : *stack) {
      if (!v.isTensor() || !v.toTensor().defined()) {
        return absl::InvalidArgumentError("the op returned something other than a tensor");
      }
      const at::Tensor& t = v.toTensor();
      std::optional<graph::DType> dtype = FromScalarType(t.scalar_type());
      if (!dtype) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the op returns ", c10::toString(t.scalar_type()), ", not a divfuzz dtype"));
      }
      if (t.layout() != at::kStrided) return absl::InvalidArgumentError("non-strided result");
      out.push_back({*dtype, std::vector<int64_t>(t.sizes().begin(), t.sizes().end())});
    }
    return out;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (size_t nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    // No Meta kernel, or a composite that routes Meta tensors to a backend
    // hook (conv2d -> convolution_overrideable).
    *no_kernel = absl::StrContains(msg, "Meta") || absl::StrContains(msg, "overrideable") ||
                 absl::StrContains(msg, "not implemented");
    return absl::InvalidArgumentError(absl::StrCat(node.QualifiedName(), " rejects: ", msg));
  }
}

// Stand-in values where an op has no Meta kernel: ones (inside most
// domains) for floating and complex, zeros (always a valid index) otherwise.
at::Tensor CpuStandIn(const graph::TensorType& t) {
  const auto options = at::TensorOptions().dtype(ToScalarType(t.dtype));
  if (graph::IsFloating(t.dtype) || graph::IsComplex(t.dtype)) return at::ones(t.shape, options);
  return at::zeros(t.shape, options);
}

}  // namespace

absl::StatusOr<std::vector<graph::TensorType>> InferOnMeta(const graph::Node& node,
                                                           const ops::TypeEnv& env) {
  auto handle = c10::Dispatcher::singleton().findSchema({node.op, node.overload});
  if (!handle.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no ATen operator named ", node.QualifiedName()));
  }
  bool no_kernel = false;
  absl::StatusOr<std::vector<graph::TensorType>> out =
      InferWith(*handle, node, env, MetaTensor, /*runs_kernel=*/false, &no_kernel);
  // Many Meta kernels live in Python (torch._meta_registrations), out of
  // libtorch's reach: such ops are typed by a CPU run on stand-in values.
  if (!out.ok() && no_kernel) out = InferWith(*handle, node, env, CpuStandIn, /*runs_kernel=*/true, &no_kernel);
  return out;
}

void InstallGenericOps() {
  static const bool installed = [] {
    ops::SetGenericProvider(&EnumerateGenericOps);
    ops::SetGenericInferHook(&InferOnMeta);
    return true;
  }();
  (void)installed;
}

}  // namespace divfuzz::exec
