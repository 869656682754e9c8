// gradient_attention_logits: scaled_dot_product_attention forms its logits
// S = scale·q·kᵀ as dot products of length d in its accumulation type
// (float32 for f16, bf16 and f32) and its backward rebuilds the weights as
// exp(S - LSE) from them (FlashAttention-2, memory-efficient attention:
// pytorch#125674, closed as "a property of FA/safe softmax's backward"). A
// logit is known to (d + 4)·u·scale·Σ|q||k|; where that reaches 1 the
// exponent is undetermined, and so is the class (and value) of the gradient
// (session 35: logits of 3.5e13, CPU finite and CUDA NaN, judged expected).
// Smaller logit errors (5e4 in f16: CUDA's weight 0.5% off) are not covered:
// a hull of q and k moved by (d + 4)·u does not hold the float32 kernels'
// other roundings (dP - rowsum(dO·O)), so it was left out.
#include <ATen/ATen.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "ops/catalogue.h"
#include "ops/infer.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {

std::optional<RuleMatch> gradient_attention_logits(const GradientContext& c) {
  const ops::OpSpec* spec = ops::FindOp(c.node.QualifiedName());
  if (spec == nullptr || !(spec->cuda_kernels & ops::kCudaAttention)) return std::nullopt;
  if (c.d.cls != DivergenceClass::kTolerance && c.d.cls != DivergenceClass::kClassSplit) {
    return std::nullopt;
  }
  const std::vector<std::string> uses = OperandNames(c.node);
  if (uses.size() < 2) return std::nullopt;
  const double u = c.dtype == graph::DType::kF64 ? graph::Epsilon(graph::DType::kF64)
                                                 : graph::Epsilon(graph::DType::kF32);
  double worst = 0;  // (d + 4)·u·max|S| over both sides
  for (const GradientSide* s : {&c.a, &c.b}) {
    auto q = s->inputs.find(uses[0]), k = s->inputs.find(uses[1]);
    if (q == s->inputs.end() || k == s->inputs.end() || q->second.dim() < 2 ||
        k->second.dim() < 2) {
      return std::nullopt;
    }
    const int64_t d = q->second.size(-1);
    // scale: 1/sqrt(d) unless the call gives one.
    const graph::Literal* given = ops::FindArg(c.node, 1000, "scale");
    const double scale =
        given != nullptr && (given->kind == graph::Literal::Kind::kFloat ||
                             given->kind == graph::Literal::Kind::kInt)
            ? std::abs(given->kind == graph::Literal::Kind::kFloat ? given->f
                                                                   : static_cast<double>(given->i))
            : 1 / std::sqrt(static_cast<double>(std::max<int64_t>(d, 1)));
    // Grouped-query attention (enable_gqa): each key head serves q's heads
    // in groups, as SDPA repeats it.
    at::Tensor keys = k->second.to(at::kDouble).abs();
    if (q->second.dim() >= 3 && keys.dim() >= 3 && keys.size(-3) > 0 &&
        q->second.size(-3) != keys.size(-3) && q->second.size(-3) % keys.size(-3) == 0) {
      keys = keys.repeat_interleave(q->second.size(-3) / keys.size(-3), -3);
    }
    const at::Tensor logits = at::matmul(q->second.to(at::kDouble).abs(),
                                         keys.transpose(-2, -1)) *
                              scale;
    worst = std::max(worst, static_cast<double>(d + 4) * u * logits.max().item<double>());
  }
  if (!std::isfinite(worst)) return std::nullopt;
  if (worst >= 1) {
    return RuleMatch{"gradient_attention_logits",
                     absl::StrCat("the logits of ", c.node.QualifiedName(), " are known only to ",
                                  worst, " in the accumulation type: exp of an exponent "
                                  "undetermined by more than 1 leaves the gradient's class open")};
  }
  return std::nullopt;
}

}  // namespace divfuzz::oracles::rules
