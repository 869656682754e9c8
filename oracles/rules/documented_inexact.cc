// documented_inexact: ops PyTorch documents as inexact for the dtype.
//
// It rests on torch.round's documentation: "When the :attr:`decimals`
// argument is specified the algorithm used is similar to NumPy's `around`.
// This algorithm is fast but inexact and it can easily overflow for low
// precision dtypes."
#include "oracles/rules/rule.h"

#include <optional>

#include "absl/strings/str_cat.h"

namespace divfuzz::oracles::rules {

using graph::DType;

std::optional<RuleMatch> documented_inexact(const Context& c) {
  if (!(c.spec.hints & ops::kInexactInLowPrecision) ||
      (c.dtype != DType::kF16 && c.dtype != DType::kBF16)) {
    return std::nullopt;
  }
  return RuleMatch{"documented_inexact",
                   absl::StrCat(c.node.QualifiedName(), " is documented as inexact in ",
                                c.d.dtype, " (torch.round: \"fast but inexact and it can easily "
                                "overflow for low precision dtypes\")")};
}

}  // namespace divfuzz::oracles::rules
