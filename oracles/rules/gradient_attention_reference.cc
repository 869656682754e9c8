// gradient_attention_reference: PyTorch's own acceptance test for attention
// kernels (test/test_transformers.py, check_out_and_grad / get_tolerances)
// compares a kernel's gradients with a float64 reference at tolerances it
// derives from the math path run in the low precision: atol = fudge ·
// max(max|ref - lp|, default atol) (and an rtol from the largest relative
// deviation, left out here: see below), with fudge factors grad_query 160, grad_key 25, grad_value
// 8, grad_attn_mask 45 (the memory-efficient kernel's test; 5 by default,
// which a double backward takes). Here `lp` is the math path (the reference
// composite, forced as enable_math_sdp alone would) on the CPU in the dtype
// from each side's inputs, `ref` that side's float64 backward; a side within
// those tolerances passes the test PyTorch holds its kernels to.
// Session 39's G3: f32 double backwards of the math path (MulBackward1) off
// by 3.5e-5 where four-eps moves of the inputs reach 1.4e-4 of it, and a
// broadcast-key f16 backward (ToCopyBackward0), judged expected.
// max|ref - lp| is taken over the math path at 8 orders of the head
// dimension (q's and k's columns permuted alike: the logits S = q·kᵀ are the
// same function, summed in another order). One order is one sample of the
// math path's rounding, and an exponential in S amplifies it: session 41's
// f32 double backward (logits to 233) deviated 3.3e8 at a 2.7e15 element in
// the run's own order, 1.0e10 in others, and CUDA's 6.7e9 had been vetoed.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "exec/cuda_variant_guard.h"
#include "exec/cuda_variants.h"
#include "exec/executor.h"
#include "ops/catalogue.h"
#include "oracles/compare.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {
namespace {

// test_transformers.py's default_atol and default_rtol.
std::pair<double, double> Defaults(graph::DType dt) {
  switch (dt) {
    case graph::DType::kF16: return {1e-3, 1e-3};
    case graph::DType::kBF16: return {1e-3, 1.6e-2};
    case graph::DType::kF32: return {1e-5, 1.3e-6};
    default: return {0, 0};
  }
}

}  // namespace

std::optional<RuleMatch> gradient_attention_reference(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kTolerance || c.accumulation) return std::nullopt;
  const auto [default_atol, default_rtol] = Defaults(c.dtype);
  if (default_atol == 0) return std::nullopt;
  const graph::Node* inner = exec::VjpInner(c.node);
  const graph::Node& sdpa = inner != nullptr ? *inner : c.node;
  const ops::OpSpec* spec = ops::FindOp(sdpa.QualifiedName());
  if (spec == nullptr || !(spec->cuda_kernels & ops::kCudaAttention)) return std::nullopt;
  // q, k, v and the mask by name: the fudge factors are per operand, and q's
  // and k's last dims are permuted alike below (their gradients permuted
  // back). Not where q or k is also read as v or the mask (self-attention):
  // the permutation would change the function.
  const std::vector<std::string> uses = OperandNames(sdpa);
  double fudge = 5.0;
  if (inner == nullptr) {
    static constexpr double kFudge[] = {160.0, 25.0, 8.0, 45.0};  // q, k, v, mask
    for (size_t i = 0; i < uses.size() && i < 4; ++i) {
      if (uses[i] == c.wrt) fudge = kFudge[i];
    }
  }
  // Judged where the sides differ: elements both sides give alike (session
  // 40's G5: 101 NaNs on both from cotangents near 3.4e38 in f32, whose
  // float64 reference is finite) are no part of the divergence and had
  // vetoed the test on the element that is.
  const at::Tensor differing = DifferingElements(c.a.outgoing, c.b.outgoing, c.dtype,
                                                 c.policy.For(c.node.QualifiedName(), c.dtype));
  const bool permutable = uses.size() >= 3 && uses[0] != uses[2] && uses[1] != uses[2] &&
                          (uses.size() < 4 || (uses[3] != uses[0] && uses[3] != uses[1]));
  static constexpr int kOrders = 8;
  double widest_atol = 0;
  for (const GradientSide* s : {&c.a, &c.b}) {
    if (!s->witness.defined() || s->witness.is_complex() || !s->outgoing.defined()) {
      return std::nullopt;
    }
    const exec::CudaVariant* math = exec::FindCudaVariant("sdpa_math");
    if (math == nullptr) return std::nullopt;
    const at::Tensor ref = s->witness.to(at::kDouble);
    if (s->outgoing.sizes() != ref.sizes()) return std::nullopt;
    // As get_tolerances' atol: over the elements both hold finite values. Its
    // rtol (the largest relative deviation, fudged) is left out: a reference
    // element near 0 makes it unbounded (their cap is 1e30), which would
    // excuse a gradient off by any factor; the default rtol stands instead.
    double max_dev = 0;
    const auto q_in = s->inputs.find(uses.size() >= 2 ? uses[0] : std::string());
    const auto k_in = s->inputs.find(uses.size() >= 2 ? uses[1] : std::string());
    const bool orders = permutable && q_in != s->inputs.end() && k_in != s->inputs.end() &&
                        q_in->second.dim() >= 1 && k_in->second.dim() >= 1 &&
                        q_in->second.size(-1) == k_in->second.size(-1) &&
                        q_in->second.size(-1) >= 2;
    for (int order = 0; order < (orders ? kOrders : 1); ++order) {
      std::map<std::string, at::Tensor> inputs = s->inputs;
      at::Tensor perm;
      if (order > 0) {
        const int64_t d = q_in->second.size(-1);
        at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(6007 + order);
        perm = order == 1 ? at::arange(d - 1, -1, -1, at::kLong) : at::randperm(d, gen, at::kLong);
        inputs[uses[0]] = q_in->second.index_select(-1, perm);
        inputs[uses[1]] = k_in->second.index_select(-1, perm);
      }
      exec::VjpResult lp;
      {
        // The backend switches are process-wide and read by the CPU's
        // selection too (its flash kernel is off with them).
        exec::CudaVariantGuard only_math(exec::VariantBit(*math));
        lp = exec::RunNodeVjp(c.node, inputs, s->incoming, c.types, exec::Target::kCpu, false,
                              nullptr, nullptr, false);
      }
      if (lp.result.error || c.out >= lp.result.outputs.size()) return std::nullopt;
      at::Tensor low = lp.result.outputs[c.out].to(at::kDouble);
      if (perm.defined() && (c.wrt == uses[0] || c.wrt == uses[1])) {
        low = low.index_select(-1, at::argsort(perm));
      }
      if (low.sizes() != ref.sizes()) return std::nullopt;
      const at::Tensor both = at::isfinite(ref) & at::isfinite(low);
      const at::Tensor dev = (ref - low).abs().masked_select(both);
      if (dev.numel() > 0) max_dev = std::max(max_dev, dev.max().item<double>());
    }
    const double atol = fudge * std::max(max_dev, default_atol);
    const double rtol = default_rtol;
    const at::Tensor mine = s->outgoing.to(at::kDouble);
    // isclose: a non-finite value passes only where the reference has it too,
    // rounded to the dtype (74134 is inf in f16), or NaN where it is NaN (an
    // inf incoming gradient's row).
    const at::Tensor rounded = s->outgoing.is_floating_point()
                                   ? ref.to(s->outgoing.scalar_type()).to(at::kDouble)
                                   : ref;
    const at::Tensor close = ((mine - ref).abs() <= atol + rtol * ref.abs()) |
                             (mine.eq(rounded) & at::isfinite(rounded).logical_not()) |
                             (at::isnan(mine) & at::isnan(ref));
    at::Tensor judged = close.reshape(-1);
    if (differing.defined() && differing.numel() == judged.numel()) {
      judged = judged | differing.logical_not();
    }
    if (!judged.all().item<bool>()) return std::nullopt;
    widest_atol = std::max(widest_atol, atol);
  }
  return RuleMatch{"gradient_attention_reference",
                   absl::StrCat("each side's ", inner != nullptr ? "double backward" : "gradient",
                                " of ", sdpa.QualifiedName(), " passes PyTorch's own attention "
                                "test (test_transformers.py's get_tolerances: fudge ", fudge,
                                " times the math path in ",
                                std::string(graph::DTypeName(c.dtype)), " off its float64 "
                                "reference: atol at most ", widest_atol, ", rtol ", default_rtol,
                                ")")};
}

}  // namespace divfuzz::oracles::rules
