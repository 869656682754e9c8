#include "exec/index_precheck.h"

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace divfuzz::exec {
namespace {

bool TakesIndexTensors(const c10::FunctionSchema& schema, const torch::jit::Stack& stack) {
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
    if (absl::StrContains(what, "out of bounds") || absl::StrContains(what, "out of range") ||
        absl::StrContains(what, "invalid max index")) {
      return what.substr(0, what.find('\n'));
    }
  }
  return std::nullopt;
}

std::optional<std::string> UncheckedIndexRead(const c10::OperatorHandle& op,
                                              const torch::jit::Stack& stack) {
  const std::string& name = op.schema().name();
  if (name != "aten::ctc_loss" && name != "aten::_ctc_loss") return std::nullopt;
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
                      "); PyTorch does not check them and reads memory out of bounds (divfuzz "
                      "does not run it)");
}

}  // namespace divfuzz::exec
