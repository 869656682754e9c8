#include "exec/index_precheck.h"

#include <cmath>
#include <cstdlib>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "exec/dtype_convert.h"
#include "ops/kernel_classes.h"

namespace divfuzz::exec {
namespace {

bool TakesIndexTensors(const c10::FunctionSchema& schema, const torch::jit::Stack& stack) {
  // masked_scatter's CUDA kernel asserts on the device that the source has
  // as many elements as the mask has ones; the CPU raises.
  if (schema.name() == "aten::masked_scatter" || schema.name() == "aten::masked_scatter_") {
    return true;
  }
  static const std::set<std::string> kIndexNames = {"index", "indices", "target", "targets",
                                                    "offsets"};
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size() && i < stack.size(); ++i) {
    if (!kIndexNames.count(args[i].name())) continue;
    const c10::IValue& v = stack[i];
    if (v.isTensor() && v.toTensor().defined() && !v.toTensor().is_floating_point()) return true;
    if (v.isList()) return true;  // index_put's List[Optional[Tensor]] indices
  }
  return false;
}

// A copy on the CPU (in-place ops must not touch the caller's tensors).
at::Tensor CpuCopy(const at::Tensor& t) {
  if (!t.defined()) return t;
  return t.is_cpu() ? t.clone() : t.cpu();
}

c10::IValue ToCpu(const c10::IValue& v) {
  if (v.isTensor()) return CpuCopy(v.toTensor());
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorList()) out.push_back(CpuCopy(t));
    return out;
  }
  if (v.isList()) {
    c10::impl::GenericList out(v.toList().elementType());
    for (const c10::IValue& item : v.toList()) out.push_back(ToCpu(item));
    return out;
  }
  return v;
}

}  // namespace

std::optional<std::string> IndexRejectedOnCpu(const c10::OperatorHandle& op,
                                              const torch::jit::Stack& stack) {
  if (!TakesIndexTensors(op.schema(), stack)) return std::nullopt;
  torch::jit::Stack cpu;
  for (const c10::IValue& v : stack) cpu.push_back(ToCpu(v));
  try {
    op.callBoxed(&cpu);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    // max_unpool's CPU kernel says "Found an invalid max index".
    // index_select's: "INDICES element is out of DATA bounds"; masked_scatter's:
    // "Number of elements of source < number of ones in mask".
    if (absl::StrContains(what, "out of bounds") || absl::StrContains(what, "out of range") ||
        absl::StrContains(what, "out of DATA bounds") ||
        absl::StrContains(what, "invalid max index") ||
        absl::StrContains(what, "number of ones in mask")) {
      return what.substr(0, what.find('\n'));
    }
  }
  return std::nullopt;
}

namespace {

// What a decline says of the isolated lane (fuzz/campaign/isolated_lane.h).
constexpr char kOnlyInTheLane[] =
    "divfuzz runs it only in a campaign's isolated lane, a process of its own with a short "
    "timeout (--isolated_share), where a hang or crash is a finding";
constexpr char kNotEvenInTheLane[] =
    "divfuzz does not run it, not even in its isolated lane: what it reads is undefined and "
    "differs from run to run, so no verdict or repro can rest on it";

std::optional<std::string> CtcLabelsOutsideTheClasses(const std::string& name,
                                                      const torch::jit::Stack& stack) {
  // (log_probs, targets, input_lengths, target_lengths, blank, ...) in every overload.
  if (stack.size() < 2 || !stack[0].isTensor() || !stack[1].isTensor()) return std::nullopt;
  const at::Tensor& log_probs = stack[0].toTensor();
  const at::Tensor& targets = stack[1].toTensor();
  if (!log_probs.defined() || log_probs.dim() == 0 || !targets.defined() || targets.numel() == 0) {
    return std::nullopt;
  }
  const int64_t classes = log_probs.size(-1);
  // The kernels read the labels as integers, whatever the tensor's dtype.
  const at::Tensor labels = targets.detach().cpu().to(at::kDouble);
  const double lo = labels.min().item<double>(), hi = labels.max().item<double>();
  if (lo >= 0 && hi < static_cast<double>(classes)) return std::nullopt;
  return absl::StrCat(name, ": target labels span [", lo, ", ", hi,
                      "], outside the classes of log_probs [0, ", classes,
                      "); PyTorch does not check them and reads memory out of bounds (",
                      kNotEvenInTheLane, ")");
}

// (self, weight, kernel_size, ...) in every overload.
std::optional<std::string> WeightSmallerThanKernel(const std::string& name,
                                                   const torch::jit::Stack& stack) {
  if (stack.size() < 3 || !stack[1].isTensor() || !stack[2].isIntList()) return std::nullopt;
  const at::Tensor& weight = stack[1].toTensor();
  const std::vector<int64_t> kernel = stack[2].toIntVector();
  if (!weight.defined() || weight.dim() != static_cast<int64_t>(kernel.size()) + 2) {
    return std::nullopt;  // PyTorch's own checks catch a weight of the wrong rank
  }
  const std::vector<int64_t> spatial(weight.sizes().begin() + 2, weight.sizes().end());
  bool smaller = false, larger = false;
  for (size_t i = 0; i < kernel.size(); ++i) {
    smaller = smaller || spatial[i] < kernel[i];
    larger = larger || spatial[i] > kernel[i];
  }
  if (!smaller && !larger) return std::nullopt;
  // Larger is as unchecked: on the H100, slow_conv_transpose2d with a 5x6
  // weight and kernel_size [2, 2] corrupted CUDA memory, and later sums of
  // unrelated tensors came back NaN (9 bug-tier buckets blaming them).
  return absl::StrCat(name, ": weight's spatial shape [", absl::StrJoin(spatial, ", "), "] is ",
                      smaller ? "smaller than" : "larger than", " kernel_size [",
                      absl::StrJoin(kernel, ", "),
                      "]; PyTorch does not check it and reads or writes memory out of bounds "
                      "(", kNotEvenInTheLane, ")");
}

// The dtype the program declares for positional argument `pos` of `node`
// (the float64 targets hold every value in float64, but must decide as the
// program's dtypes would), else the tensor's own.
c10::ScalarType DeclaredDType(const graph::Node* node, const ops::TypeEnv* types, size_t pos,
                              const at::Tensor& t) {
  if (node != nullptr && types != nullptr && pos < node->args.size()) {
    const graph::Argument& a = node->args[pos];
    if (a.name.empty() && a.value.kind == graph::Literal::Kind::kValue) {
      if (auto it = types->find(a.value.s); it != types->end()) {
        return ToScalarType(it->second.dtype);
      }
    }
  }
  return t.scalar_type();
}

// (self, source, ...): set(self, source) views source's storage with self's
// dtype, unchecked.
std::optional<std::string> SourceOfAnotherDType(const std::string& name,
                                                const torch::jit::Stack& stack,
                                                const graph::Node* node,
                                                const ops::TypeEnv* types) {
  if (stack.size() < 2 || !stack[0].isTensor() || !stack[1].isTensor()) return std::nullopt;
  const at::Tensor& self = stack[0].toTensor();
  const at::Tensor& source = stack[1].toTensor();
  if (!self.defined() || !source.defined()) return std::nullopt;
  const c10::ScalarType self_dtype = DeclaredDType(node, types, 0, self);
  const c10::ScalarType source_dtype = DeclaredDType(node, types, 1, source);
  if (self_dtype == source_dtype) return std::nullopt;
  return absl::StrCat(name, ": source is ", c10::toString(source_dtype), ", self ",
                      c10::toString(self_dtype),
                      "; PyTorch does not check it, reads the source's storage as the other "
                      "dtype and past its end (", kNotEvenInTheLane, ")");
}

// Degrees past this make a node run for minutes on some device (the CPU's
// Legendre recurrence is O(n) per element; CUDA's n = 2^63 never ends).
constexpr double kMaxDegree = 65536;

// The largest |value| of a number or tensor argument (inf for NaN).
std::optional<double> LargestMagnitude(const c10::IValue& v) {
  if (v.isInt()) return std::fabs(static_cast<double>(v.toInt()));
  if (v.isDouble()) return std::isnan(v.toDouble()) ? INFINITY : std::fabs(v.toDouble());
  if (!v.isTensor() || !v.toTensor().defined() || v.toTensor().numel() == 0) return std::nullopt;
  const at::Tensor t = v.toTensor().detach().cpu().to(at::kDouble).abs().nan_to_num(INFINITY);
  return t.max().item<double>();
}

std::optional<std::string> DegreeBeyondBound(const std::string& name,
                                             const torch::jit::Stack& stack) {
  if (stack.size() < 2) return std::nullopt;
  const std::optional<double> n = LargestMagnitude(stack[1]);
  if (!n || *n <= kMaxDegree) return std::nullopt;
  return absl::StrCat(name, ": a degree n of magnitude ", *n, " (inf: NaN or inf) beyond ",
                      kMaxDegree, ": the kernel loops n times for each element, 2^63 times on "
                      "CUDA where the int64 cast of n is undefined (", kOnlyInTheLane, ")");
}

// The 1-norm of each matrix, computed in the input's declared dtype as
// matrix_exp does: where it overflows, the number of squarings is an
// undefined cast.
std::optional<std::string> MatrixNormNotFinite(const std::string& name,
                                               const torch::jit::Stack& stack,
                                               const graph::Node* node,
                                               const ops::TypeEnv* types) {
  if (stack.empty() || !stack[0].isTensor()) return std::nullopt;
  const at::Tensor& a = stack[0].toTensor();
  if (!a.defined() || a.dim() < 2 || a.numel() == 0) return std::nullopt;
  const at::Tensor in_dtype = a.detach().cpu().to(DeclaredDType(node, types, 0, a));
  if (in_dtype.abs().sum(-2).isfinite().all().item<bool>()) return std::nullopt;
  return absl::StrCat(name, ": a matrix whose 1-norm is not finite in its dtype: the number of "
                      "squarings is an undefined cast of it, and CUDA loops for minutes (",
                      kOnlyInTheLane, ")");
}

std::optional<std::string> NonFiniteInput(const std::string& name,
                                          const torch::jit::Stack& stack) {
  if (stack.empty() || !stack[0].isTensor()) return std::nullopt;
  const at::Tensor& a = stack[0].toTensor();
  if (!a.defined() || a.numel() == 0 || a.detach().cpu().isfinite().all().item<bool>()) {
    return std::nullopt;
  }
  return absl::StrCat(name, ": a NaN or inf input, which the kernel does not survive (cuSOLVER's "
                      "SVD and QR iterate without end, LAPACK's geev segfaults; PyTorch gives no "
                      "guarantee for non-finite linear-algebra inputs; ", kOnlyInTheLane, ")");
}

}  // namespace

namespace {

// Key and value of different sequence lengths (dim -2): session 35's
// campaigns crashed workers with it on the CPU (the math backend raises);
// and q, k or v without heads.
std::optional<std::string> KeyValueLengthsDiffer(const std::string& name,
                                                 const torch::jit::Stack& stack) {
  if (stack.size() < 3 || !stack[1].isTensor() || !stack[2].isTensor()) return std::nullopt;
  // Zero heads: the CPU's flash attention divides by the head count
  // (SIGFPE, pytorch#141219; PR #191325). Session 38: workers died of it
  // in the mutator's shape inference, which runs the CPU kernel on stand-ins.
  for (int i = 0; i < 3; ++i) {
    if (!stack[i].isTensor()) continue;
    const at::Tensor& t = stack[i].toTensor();
    if (t.defined() && t.dim() >= 3 && t.size(-3) == 0) {
      return absl::StrCat(name, ": ", i == 0 ? "query" : i == 1 ? "key" : "value",
                          " has no heads (dim -3 is 0), which the CPU's flash attention divides "
                          "by: SIGFPE (pytorch#141219; ", kOnlyInTheLane, ")");
    }
  }
  const at::Tensor& key = stack[1].toTensor();
  const at::Tensor& value = stack[2].toTensor();
  if (!key.defined() || !value.defined() || key.dim() < 2 || value.dim() < 2 ||
      key.size(-2) == value.size(-2)) {
    return std::nullopt;
  }
  return absl::StrCat(name, ": key has ", key.size(-2), " positions and value ", value.size(-2),
                      ", which the CPU's flash attention does not check: it reads past the key "
                      "and its backward writes past the key's gradient (pytorch PR #193728; ",
                      kOnlyInTheLane, ")");
}

}  // namespace

bool IsolatedLaneRuns(const c10::OperatorHandle& op) {
  switch (ops::UncheckedPreconditionOf(op.schema().name())) {
    case ops::UncheckedPrecondition::kKeyValueSameLength:
    case ops::UncheckedPrecondition::kBoundedDegree:
    case ops::UncheckedPrecondition::kFiniteMatrixNorm:
    case ops::UncheckedPrecondition::kFiniteInput:
      return true;
    default:
      return false;
  }
}

namespace {
bool& InLaneFlag() {
  static bool on = [] {
    const char* v = std::getenv(kIsolatedLaneVariable);
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}
}  // namespace

bool InIsolatedLane() { return InLaneFlag(); }

void EnterIsolatedLane() {
  InLaneFlag() = true;
  // The cpu-scalar target's helper process inherits it.
  setenv(kIsolatedLaneVariable, "1", 1);
}

std::optional<std::string> UncheckedRead(const c10::OperatorHandle& op,
                                         const torch::jit::Stack& stack, const graph::Node* node,
                                         const ops::TypeEnv* types) {
  const std::string& name = op.schema().name();
  switch (ops::UncheckedPreconditionOf(name)) {
    case ops::UncheckedPrecondition::kCtcLabelsInClasses:
      return CtcLabelsOutsideTheClasses(name, stack);
    case ops::UncheckedPrecondition::kWeightCoversKernel:
      return WeightSmallerThanKernel(name, stack);
    case ops::UncheckedPrecondition::kSourceOfTheSameDType:
      return SourceOfAnotherDType(name, stack, node, types);
    case ops::UncheckedPrecondition::kBoundedDegree:
      return DegreeBeyondBound(name, stack);
    case ops::UncheckedPrecondition::kFiniteMatrixNorm:
      return MatrixNormNotFinite(name, stack, node, types);
    case ops::UncheckedPrecondition::kFiniteInput:
      return NonFiniteInput(name, stack);
    case ops::UncheckedPrecondition::kKeyValueSameLength:
      return KeyValueLengthsDiffer(name, stack);
    case ops::UncheckedPrecondition::kNone:
      break;
  }
  return std::nullopt;
}

}  // namespace divfuzz::exec
