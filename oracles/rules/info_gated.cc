// info_gated: outputs of a `*_ex` factorization that reports failure.
//
// It rests on torch.linalg.cholesky_ex's documentation (the *_ex
// factorizations alike): "If :attr:`A` is not a Hermitian positive-definite
// matrix, ... then ``info`` stores a positive integer for the corresponding
// matrix. The positive integer indicates the order of the leading minor that
// is not positive-definite, and the decomposition could not be completed."
#include "oracles/rules/rule.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "exec/target.h"

namespace divfuzz::oracles::rules {

std::optional<RuleMatch> info_gated(const Context& c) {
  if (!(c.spec.hints & ops::kInfoGated)) return std::nullopt;
  const size_t info = c.node.results.size() - 1;
  const at::Tensor ia = Context::Output(c.a, c.d.node_index, info);
  const at::Tensor ib = Context::Output(c.b, c.d.node_index, info);
  if (!ia.defined() || !ib.defined()) return std::nullopt;
  const int64_t fa = ia.ne(0).sum().item<int64_t>(), fb = ib.ne(0).sum().item<int64_t>();
  if (fa == 0 && fb == 0) return std::nullopt;
  return RuleMatch{
      "info_gated",
      absl::StrCat("the factorization reports failure (non-zero info in ", fa, " batch entries on ",
                   exec::TargetName(c.a.target), ", ", fb, " on ", exec::TargetName(c.b.target),
                   "); its other outputs are unspecified there")};
}

}  // namespace divfuzz::oracles::rules
