// device_argument: an argument value documented as unsupported on the raising device.
//
// It rests on torch.linalg.lstsq's documentation: "For CUDA input, the only
// valid driver is `'gels'`, which assumes that :attr:`A` is full-rank.", and
// torch.linalg.svd's: "driver (str, optional): name of the cuSOLVER method to
// be used. This keyword argument only works on CUDA inputs."
#include "oracles/rules/rule.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "exec/target.h"

namespace divfuzz::oracles::rules {

using graph::Literal;

// An argument value documented as unsupported on the raising side's device
// (ops/kernel_classes.cc: lstsq's driver on CUDA, svd's driver on the CPU).
std::optional<RuleMatch> device_argument(const Context& c) {
  if (c.d.cls != DivergenceClass::kErrorSplit || c.spec.device_argument == nullptr ||
      c.d.node_index < 0) {
    return std::nullopt;
  }
  const ops::DeviceArgument& da = *c.spec.device_argument;
  const Literal* value = ops::FindArg(c.node, 1000, da.name);
  if (value == nullptr || value->kind != Literal::Kind::kString) return std::nullopt;
  auto raised = [&](const exec::RunResult& r) {
    return static_cast<size_t>(c.d.node_index) < r.nodes.size() &&
           r.nodes[c.d.node_index].error.has_value();
  };
  const exec::RunResult* side = raised(c.a) ? &c.a : raised(c.b) ? &c.b : nullptr;
  if (side == nullptr) return std::nullopt;
  const bool cuda = side->target == exec::Target::kCuda || side->target == exec::Target::kCudaF64;
  const std::vector<absl::string_view> takes = absl::StrSplit(cuda ? da.cuda : da.cpu, ',',
                                                              absl::SkipEmpty());
  if (std::find(takes.begin(), takes.end(), value->s) != takes.end()) return std::nullopt;
  return RuleMatch{"device_argument",
                   absl::StrCat(da.name, "='", value->s, "' is not supported on ",
                                exec::TargetName(side->target), ": ", da.why)};
}

}  // namespace divfuzz::oracles::rules
