// unspecified_strides: view() of an output whose strides PyTorch does not specify.
//
// It rests on Tensor.view's documentation: "When it is unclear whether a
// :meth:`view` can be performed, it is advisable to use :meth:`reshape`, which
// returns a view if the shapes are compatible, and copies (equivalent to
// calling :meth:`contiguous`) otherwise."
#include "oracles/rules/rule.h"

#include <optional>

#include "absl/strings/match.h"

namespace divfuzz::oracles::rules {

// PyTorch does not specify the strides of most ops' outputs (an FFT's differ
// per device), so a view() of them may work on one device only.
std::optional<RuleMatch> unspecified_strides(const Context& c) {
  if (c.d.cls != DivergenceClass::kErrorSplit) return std::nullopt;
  auto says = [&](const exec::RunResult& r) {
    if (c.d.node_index < 0 || static_cast<size_t>(c.d.node_index) >= r.nodes.size()) return false;
    const auto& e = r.nodes[c.d.node_index].error;
    return e && absl::StrContains(e->message, "view size is not compatible with input tensor's size and stride");
  };
  if (!says(c.a) && !says(c.b)) return std::nullopt;
  return RuleMatch{"unspecified_strides",
                   "view() needs strides PyTorch does not specify for this input (they differ per "
                   "device); reshape() is the portable spelling"};
}

}  // namespace divfuzz::oracles::rules
