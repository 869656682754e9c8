// scalar_rounding: a side right once the Python scalar is rounded to the dtype.
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html):
// "In particular, CPU and GPU results can be different even for
// bitwise-identical inputs and even after controlling for the sources of
// randomness."
// (eager PyTorch rounds a Python scalar to the tensor's dtype on some device
// paths and not on others; no sentence documents which).
#include "oracles/rules/rule.h"

#include <optional>

#include "absl/strings/str_cat.h"

namespace divfuzz::oracles::rules {

std::optional<RuleMatch> scalar_rounding(const Context& c) {
  if (!c.d.scalar_rounding) return std::nullopt;
  return RuleMatch{"scalar_rounding",
                   absl::StrCat("a side matches the reference once the number literal is rounded "
                                "to ", c.d.dtype, " first: eager PyTorch rounds Python scalars to "
                                "the tensor's dtype on some paths")};
}

}  // namespace divfuzz::oracles::rules
