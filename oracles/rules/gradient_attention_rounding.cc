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
// known to (d + 4)·u·|S|), plus its own rounding to the dtype and atol, of its
// float64 backward is expected. Calls with a mask or grouped-query heads are
// not modelled.
#include <ATen/ATen.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "ops/catalogue.h"
#include "ops/infer.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {

std::optional<RuleMatch> gradient_attention_rounding(const GradientContext& c) {
  const ops::OpSpec* spec = ops::FindOp(c.node.QualifiedName());
  if (spec == nullptr || !(spec->cuda_kernels & ops::kCudaAttention) ||
      c.d.cls != DivergenceClass::kTolerance || c.out > 2) {
    return std::nullopt;
  }
  const std::vector<std::string> uses = c.node.Uses();
  if (uses.size() != 3 || c.a.incoming.size() != 1) return std::nullopt;  // no mask
  const graph::Literal* gqa = ops::FindArg(c.node, 1000, "enable_gqa");
  if (gqa != nullptr && gqa->kind == graph::Literal::Kind::kBool && gqa->b) return std::nullopt;
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
    const at::Tensor q = qi->second.to(at::kDouble), k = ki->second.to(at::kDouble),
                     v = vi->second.to(at::kDouble), g = s->incoming[0].to(at::kDouble);
    if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2) return std::nullopt;
    const int64_t d = q.size(-1), keys = k.size(-2);
    const double sc = scale ? std::abs(*scale) : 1 / std::sqrt(static_cast<double>(std::max<int64_t>(d, 1)));
    const at::Tensor p = std::get<1>(at::_scaled_dot_product_attention_math(
        q, k, v, std::nullopt, 0.0, is_causal, std::nullopt, scale));
    const at::Tensor dp = at::matmul(g.abs(), v.abs().transpose(-2, -1));
    const at::Tensor t = p * (dp + (p * dp).sum(-1, /*keepdim=*/true));
    at::Tensor a;
    if (c.out == 0) a = at::matmul(t, k.abs()) * sc;
    if (c.out == 1) a = at::matmul(t.transpose(-2, -1), q.abs()) * sc;
    if (c.out == 2) a = at::matmul(p.transpose(-2, -1), g.abs());
    const at::Tensor& self = c.out == 0 ? qi->second : c.out == 1 ? ki->second : vi->second;
    a = a.sum_to_size(self.sizes());
    const double logits =
        sc * at::matmul(q.abs(), k.abs().transpose(-2, -1)).max().item<double>();
    const double eps = u * (4.0 * static_cast<double>(keys + d + 8) +
                            2.0 * static_cast<double>(d + 4) * logits);
    const at::Tensor w = s->witness.to(at::kDouble);
    if (a.sizes() != w.sizes() || s->outgoing.sizes() != w.sizes()) return std::nullopt;
    const at::Tensor bound = a * eps + w.abs() * (2 * graph::Epsilon(c.dtype)) + atol;
    const at::Tensor off = (s->outgoing.to(at::kDouble) - w).abs();
    if (!((off <= bound) | at::isfinite(off).logical_not()).all().item<bool>()) {
      return std::nullopt;
    }
    worst = std::max(worst, eps);
  }
  return RuleMatch{"gradient_attention_rounding",
                   absl::StrCat("each side's gradient of ", c.node.QualifiedName(), " is within ",
                                worst, " times its terms' magnitudes (P∘(|g|·|v|ᵀ + D) carried "
                                "through |k|, |q| or P) of its float64 backward: the float32 "
                                "dP - D of the attention backward cancels")};
}

}  // namespace divfuzz::oracles::rules
