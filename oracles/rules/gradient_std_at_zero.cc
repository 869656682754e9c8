// gradient_std_at_zero: std at a group of equal inputs is sqrt(0), a kink.
// FunctionsManual.cpp's std_backward takes the subgradient there,
// (g / (2·result)).masked_fill_(result == 0, 0), so it depends on the
// forward's result being exactly 0. A side whose forward std of equal inputs
// rounds to a tiny nonzero value (its mean summed in the dtype lands an ulp off
// x: the CPU's std of 16 × -0.2412f is 1.5e-8; pytorch#87171, closed) skips the
// mask and multiplies g/(2·std), possibly inf, by rounding residues of
// x − mean. Session 35's StdBackward0 f32 class split (judged expected): CUDA
// gave the subgradient 0, the CPU −inf. The autograd notes, "Gradients for
// non-differentiable functions". A side whose forward std is 0 and whose
// gradient is not 0 is not excused: that is the mask failing.
#include <ATen/ATen.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/printer.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {
namespace {

struct SideAtZero {
  at::Tensor equal;  // x's shape: the element's group holds equal finite inputs
  at::Tensor std;    // x's shape: the side's forward std of the element's group
};

std::optional<SideAtZero> Groups(const GradientContext& c, const GradientSide& s,
                                 const std::string& input) {
  auto it = s.inputs.find(input);
  if (it == s.inputs.end() || !it->second.defined() || !it->second.is_floating_point() ||
      it->second.numel() == 0 || s.results.empty() || !s.results[0].defined() ||
      s.results[0].is_complex() || !s.outgoing.defined()) {
    return std::nullopt;
  }
  const at::Tensor x = it->second.to(at::kDouble);
  std::vector<int64_t> dims = ReducedDims(c.node, x);
  for (int64_t d : dims) {
    if (d < 0 || d >= x.dim()) return std::nullopt;
  }
  at::Tensor equal = (x.amax(dims, true) == x.amin(dims, true)) & at::isfinite(x).all();
  at::Tensor sd = s.results[0].to(at::kDouble);
  if (sd.dim() < x.dim()) {
    std::sort(dims.begin(), dims.end());
    for (int64_t d : dims) sd = sd.unsqueeze(d);
  }
  if (sd.dim() != x.dim()) return std::nullopt;
  if (s.outgoing.sizes() != x.sizes()) return std::nullopt;
  return SideAtZero{equal.expand(x.sizes()), sd.expand(x.sizes())};
}

}  // namespace

std::optional<RuleMatch> gradient_std_at_zero(const GradientContext& c) {
  const std::string op = c.node.QualifiedName();
  if (!absl::StartsWith(op, "aten::std") || c.out != 0 || c.a.outgoing.is_complex()) {
    return std::nullopt;
  }
  const graph::Literal* first = ops::FindArg(c.node, 0, "input");
  if (first == nullptr || first->kind != graph::Literal::Kind::kValue) return std::nullopt;
  std::optional<SideAtZero> ga = Groups(c, c.a, first->s), gb = Groups(c, c.b, first->s);
  if (!ga || !gb) return std::nullopt;
  const at::Tensor va = c.a.outgoing.to(at::kDouble), vb = c.b.outgoing.to(at::kDouble);
  if (va.sizes() != vb.sizes()) return std::nullopt;
  const at::Tensor differ = (va != vb) & (at::isnan(va) & at::isnan(vb)).logical_not();
  if (!differ.any().item<bool>()) return std::nullopt;
  // Every differing element lies in a group of equal inputs on both sides.
  if ((differ & (ga->equal & gb->equal).logical_not()).any().item<bool>()) return std::nullopt;
  // A side gives the subgradient 0 there, or its own forward std was not 0.
  double rounded = 0;
  for (const auto& [v, g] : {std::pair{va, *ga}, std::pair{vb, *gb}}) {
    if ((differ & (v != 0) & (g.std == 0)).any().item<bool>()) return std::nullopt;
    const at::Tensor off = at::where(differ & (v != 0), g.std.abs(), at::zeros_like(g.std));
    rounded = std::max(rounded, off.max().item<double>());
  }
  if (!(rounded > 0)) return std::nullopt;
  return RuleMatch{"gradient_std_at_zero",
                   absl::StrCat("std of equal inputs is sqrt(0), a kink: std_backward masks "
                                "g/(2·std) where the forward's std is exactly 0, and a side whose "
                                "forward std rounded to ",
                                graph::FormatFloat(rounded),
                                " instead (pytorch#87171) scales rounding residues of x - mean "
                                "by it")};
}

}  // namespace divfuzz::oracles::rules
