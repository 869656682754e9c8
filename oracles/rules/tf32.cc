// tf32: CUDA running with TF32 / reduced-precision reductions.
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html),
// "TensorFloat-32(TF32) on Nvidia Ampere (and later) devices": "When an
// operation is performed using TF32 tensor cores, only the first 10 bits of
// the input mantissa are read."
#include "oracles/rules/rule.h"

#include <optional>

namespace divfuzz::oracles::rules {

std::optional<RuleMatch> tf32(const Context& c) {
  if (!c.policy.cuda_tf32 || !(c.spec.hints & ops::kTf32Sensitive)) return std::nullopt;
  if (c.a.target != exec::Target::kCuda && c.b.target != exec::Target::kCuda) return std::nullopt;
  return RuleMatch{"tf32", "CUDA ran with TF32 / reduced-precision reductions enabled"};
}

}  // namespace divfuzz::oracles::rules
