// scan_carry: scans that carry their running value in the dtype.
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html):
// "floating point addition and multiplication are not
// associative, so the order of the operations affects the results."
#include "oracles/rules/rule.h"

#include <ATen/ops/all.h>
#include <ATen/ops/any.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/isinf.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/logical_xor.h>
#include <ATen/ops/where.h>

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"

namespace divfuzz::oracles::rules {

// A scan that carries its running value in the dtype: position k may be off
// by about k eps relative to |y| + 1 where the other side carries it wider.
std::optional<RuleMatch> scan_carry(const Context& c) {
  if (!(c.spec.hints & ops::kScanCarry) || (c.d.cls != DivergenceClass::kTolerance &&
                                            c.d.cls != DivergenceClass::kClassSplit)) {
    return std::nullopt;
  }
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  const at::Tensor x = c.Input(0);
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || !x.defined()) {
    return std::nullopt;
  }
  // The scan's length: at most the output's largest dim (vander's N columns
  // are not a dim argument of its input).
  int64_t n = 1;
  for (int64_t s : ya.sizes()) n = std::max(n, s);
  const at::Tensor bound = yb.abs().add(1).mul(2.0 * n * graph::Epsilon(c.dtype));
  const at::Tensor both_finite = at::logical_and(at::isfinite(ya), at::isfinite(yb));
  at::Tensor ok = at::logical_or(ya.sub(yb).abs().le(bound), both_finite.logical_not());
  if (c.d.cls == DivergenceClass::kClassSplit) {
    // inf on one side, finite on the other: expected only where the finite
    // value is within the carry's bound of the dtype's largest value (the
    // exact result sits at the overflow threshold; rounding decides the side).
    const at::Tensor fa = at::isfinite(ya), fb = at::isfinite(yb);
    const at::Tensor one_inf = at::logical_xor(fa, fb).logical_and(
        at::logical_or(at::isinf(ya), at::isinf(yb)));
    const at::Tensor finite = at::where(fa, ya, yb).abs();
    const at::Tensor near_max =
        finite.add(finite.add(1).mul(2.0 * n * graph::Epsilon(c.dtype))).ge(graph::MaxFinite(c.dtype));
    const at::Tensor nan_split = at::logical_xor(at::isnan(ya), at::isnan(yb));
    if (at::any(nan_split).item<bool>() ||
        !at::all(at::logical_or(one_inf.logical_not(), near_max)).item<bool>()) {
      return std::nullopt;
    }
    ok = at::logical_or(ok, one_inf);
  }
  if (!at::all(ok).item<bool>()) return std::nullopt;
  if (c.d.cls == DivergenceClass::kClassSplit) {
    return RuleMatch{"scan_carry",
                     absl::StrCat("inf against a finite value within 2 n eps (|y| + 1) of ",
                                  std::string(graph::DTypeName(c.dtype)), "'s largest value (n = ",
                                  n, "): a running value carried in the dtype decides which side "
                                  "of the overflow threshold it lands")};
  }
  return RuleMatch{"scan_carry", absl::StrCat("|A - B| <= 2 n eps (|B| + 1) (n = ", n,
                                              "): one side carries the running value in ",
                                              std::string(graph::DTypeName(c.dtype)))};
}

}  // namespace divfuzz::oracles::rules
