// gradient_attention_rounding: scaled_dot_product_attention's backward (the
// fused flash and memory-efficient kernels, or the math path's softmax
// backward) forms dS = P∘(dP - D), dP = g·vᵀ and D = rowsum(g∘O), in its
// float32 accumulation type: dP - D cancels (session 35: terms of 6e4 in
// f32, spacing 0.0039, leaving results near 1), and the float64 backward,
// one fused kernel on the CPU, shows none of it. The terms' magnitudes are
// computed in float64 from each side's own q, k, v and g: T = P∘(|g|·|v|ᵀ +
// rowsum(P∘(|g|·|v|ᵀ))), A = scale·T·|k| (for q), scale·Tᵀ·|q| (for k),
// Pᵀ·|g| (for v). Each side within u·(4·(keys + d + 8) + 2·(d + 4)·max|S|)·A
// (sums of those lengths, and the weights' relative error from logits S
// known to (d + 4)·u·|S|, max|S| over each query row's keys), plus its own rounding to the dtype and atol, of its
// float64 backward is expected. A mask enters P as SDPA's math path applies
// it; grouped-query heads (enable_gqa) repeat k and v over q's heads, and k's
// and v's magnitudes sum over each group (session 38's masked GQA f16
// backward: exact gradient 0, both sides 1e-5 of dP - D residue).
#include <ATen/ATen.h>

#include <algorithm>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "ops/catalogue.h"
#include "ops/infer.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {

std::optional<RuleMatch> gradient_attention_rounding(const GradientContext& c) {
  const ops::OpSpec* spec = ops::FindOp(c.node.QualifiedName());
  if (spec == nullptr || !(spec->cuda_kernels & ops::kCudaAttention) ||
      c.d.cls != DivergenceClass::kTolerance) {
    return std::nullopt;
  }
  const std::vector<std::string> uses = OperandNames(c.node);
  if (uses.size() < 3 || c.a.incoming.size() != 1) return std::nullopt;
  // One value in two roles: its gradient sums the roles' terms, which the
  // bound below takes one at a time.
  if (uses[0] == uses[1] || uses[0] == uses[2] || uses[1] == uses[2]) return std::nullopt;
  // The gradient's role (0 q, 1 k, 2 v) is its operand's position, not c.out
  // (an index among the inputs the statement differentiated: session 49's
  // ac1c7afb differentiated v alone, read as q's, and the bound collapsed).
  const size_t role =
      static_cast<size_t>(std::find(uses.begin(), uses.begin() + 3, c.wrt) - uses.begin());
  if (role > 2) return std::nullopt;
  const graph::Literal* gqa_arg = ops::FindArg(c.node, 1000, "enable_gqa");
  const bool gqa = gqa_arg != nullptr && gqa_arg->kind == graph::Literal::Kind::kBool && gqa_arg->b;
  const graph::Literal* causal = ops::FindArg(c.node, 5, "is_causal");
  const bool is_causal =
      causal != nullptr && causal->kind == graph::Literal::Kind::kBool && causal->b;
  const graph::Literal* given = ops::FindArg(c.node, 1000, "scale");
  std::optional<double> scale;
  if (given != nullptr && given->kind == graph::Literal::Kind::kFloat) scale = given->f;
  const double u = c.dtype == graph::DType::kF64 ? graph::Epsilon(graph::DType::kF64)
                                                 : graph::Epsilon(graph::DType::kF32);
  const double atol = c.policy.For(c.node.QualifiedName(), c.dtype).atol;
  double worst = 0;
  for (const GradientSide* s : {&c.a, &c.b}) {
    auto qi = s->inputs.find(uses[0]), ki = s->inputs.find(uses[1]), vi = s->inputs.find(uses[2]);
    if (qi == s->inputs.end() || ki == s->inputs.end() || vi == s->inputs.end() ||
        !s->incoming[0].defined() || !s->witness.defined() || s->witness.is_complex()) {
      return std::nullopt;
    }
    const at::Tensor q = qi->second.to(at::kDouble), k0 = ki->second.to(at::kDouble),
                     v0 = vi->second.to(at::kDouble), g = s->incoming[0].to(at::kDouble);
    if (q.dim() < 2 || k0.dim() < 2 || v0.dim() < 2) return std::nullopt;
    std::optional<at::Tensor> mask;
    if (uses.size() > 3) {
      auto mi = s->inputs.find(uses[3]);
      if (mi == s->inputs.end() || !mi->second.defined()) return std::nullopt;
      mask = mi->second.scalar_type() == at::kBool ? mi->second : mi->second.to(at::kDouble);
    }
    // Grouped-query heads: k's and v's heads repeated over q's, as SDPA does.
    int64_t group = 1;
    if (gqa) {
      if (q.dim() < 3 || k0.dim() < 3 || k0.size(-3) == 0 || q.size(-3) % k0.size(-3) != 0) {
        return std::nullopt;
      }
      group = q.size(-3) / k0.size(-3);
    }
    const at::Tensor k = group > 1 ? k0.repeat_interleave(group, -3) : k0;
    const at::Tensor v = group > 1 ? v0.repeat_interleave(group, -3) : v0;
    const int64_t d = q.size(-1), keys = k.size(-2);
    const double sc = scale ? std::abs(*scale) : 1 / std::sqrt(static_cast<double>(std::max<int64_t>(d, 1)));
    const at::Tensor p = std::get<1>(at::_scaled_dot_product_attention_math(
        q, k, v, mask, 0.0, is_causal, std::nullopt, scale)).nan_to_num(0.0);
    const at::Tensor dp = at::matmul(g.abs(), v.abs().transpose(-2, -1));
    const at::Tensor t = p * (dp + (p * dp).sum(-1, /*keepdim=*/true));
    // The logits' bound per query row, over that row's keys: one row's inf
    // (another batch's) made a single maximum infinite for every element
    // (session 45's audit of C3's BmmBackward0 bf16, 076007ac). A row whose
    // logits are not finite has no bound here (NaN): other rules judge it.
    at::Tensor logits = sc * at::matmul(q.abs(), k.abs().transpose(-2, -1)).amax(-1, true);
    logits = at::where(at::isfinite(logits), logits, at::full_like(logits, NAN));
    const at::Tensor eps = u * (4.0 * static_cast<double>(keys + d + 8) +
                                2.0 * static_cast<double>(d + 4) * logits);
    at::Tensor a;
    if (role == 0) a = at::matmul(t * eps, k.abs()) * sc;
    if (role == 1) a = at::matmul((t * eps).transpose(-2, -1), q.abs()) * sc;
    if (role == 2) a = at::matmul((p * eps).transpose(-2, -1), g.abs());
    if (role > 0 && group > 1) a = a.unflatten(-3, {a.size(-3) / group, group}).sum(-3);
    const at::Tensor& self = role == 0 ? qi->second : role == 1 ? ki->second : vi->second;
    a = a.sum_to_size(self.sizes());
    const at::Tensor w = s->witness.to(at::kDouble);
    if (a.sizes() != w.sizes() || s->outgoing.sizes() != w.sizes()) return std::nullopt;
    const at::Tensor bound = a + w.abs() * (2 * graph::Epsilon(c.dtype)) + atol;
    const at::Tensor off = (s->outgoing.to(at::kDouble) - w).abs();
    if (!((off <= bound) | at::isfinite(off).logical_not()).all().item<bool>()) {
      return std::nullopt;
    }
    const at::Tensor finite_eps = eps.masked_select(at::isfinite(eps));
    if (finite_eps.numel() > 0) worst = std::max(worst, finite_eps.max().item<double>());
  }
  return RuleMatch{"gradient_attention_rounding",
                   absl::StrCat("each side's gradient of ", c.node.QualifiedName(), " is within ",
                                worst, " times its terms' magnitudes (P∘(|g|·|v|ᵀ + D) carried "
                                "through |k|, |q| or P) of its float64 backward: the float32 "
                                "dP - D of the attention backward cancels")};
}

}  // namespace divfuzz::oracles::rules
