// forced_kernel_unsupported: a CUDA side whose switches leave one attention
// kernel raises because that kernel cannot run the call.
//
// It rests on torch.nn.attention.sdpa_kernel's documentation: "backends
// (Union[List[SDPBackend], SDPBackend]): A backend or list of backends for
// scaled dot product attention", and scaled_dot_product_attention's: the
// fused kernels have input constraints (FlashAttention: float16 and bfloat16
// only), and with every other backend disabled a call none of the enabled
// ones supports raises "No available kernel" (session 34's rotation filed
// 'Invalid backend' error splits under cuda+sdpa_flash and +sdpa_efficient
// as bugs).
#include "oracles/rules/rule.h"

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "exec/cuda_variants.h"
#include "exec/target.h"

namespace divfuzz::oracles::rules {

std::optional<RuleMatch> forced_kernel_unsupported(const Context& c) {
  if (c.d.cls != DivergenceClass::kErrorSplit || c.d.node_index < 0 ||
      !(c.spec.cuda_kernels & ops::kCudaAttention)) {
    return std::nullopt;
  }
  auto error = [&](const exec::RunResult& r) -> const exec::NodeError* {
    if (static_cast<size_t>(c.d.node_index) >= r.nodes.size()) return nullptr;
    const auto& e = r.nodes[c.d.node_index].error;
    return e ? &*e : nullptr;
  };
  const exec::NodeError* ea = error(c.a);
  const exec::NodeError* eb = error(c.b);
  if ((ea == nullptr) == (eb == nullptr)) return std::nullopt;
  const exec::RunResult& side = ea != nullptr ? c.a : c.b;
  const exec::NodeError& e = ea != nullptr ? *ea : *eb;
  if (side.target != exec::Target::kCuda) return std::nullopt;
  // The switches that leave some attention kernels out (sdpa_math keeps
  // the composite, which runs every call).
  bool forced = false;
  for (const char* name : {"sdpa_flash", "sdpa_efficient", "sdpa_cudnn"}) {
    const exec::CudaVariant* v = exec::FindCudaVariant(name);
    forced = forced || (v != nullptr && (side.target.variants() & exec::VariantBit(*v)) != 0);
  }
  if (!forced) return std::nullopt;
  if (!absl::StrContains(e.message, "No available kernel") &&
      !absl::StrContains(e.message, "Invalid backend")) {
    return std::nullopt;
  }
  return RuleMatch{"forced_kernel_unsupported",
                   absl::StrCat(exec::TargetName(side.target),
                                " leaves one attention kernel, and it cannot run this call (",
                                e.message.substr(0, 120), ")")};
}

}  // namespace divfuzz::oracles::rules
