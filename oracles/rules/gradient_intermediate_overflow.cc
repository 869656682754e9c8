// gradient_intermediate_overflow: a backward formula composed of ATen ops
// (FunctionsManual's norm_backward: |x|^(p-1)·grad, then ·norm^(1-p)) can
// overflow in an intermediate though the gradient fits: p = 0.5, x = 1e-30
// and grad = 1e25 give 1e40 before the norm brings it to 1e30 (f32's CPU
// gives inf). Session 38's renorm f32 bucket was the same on CUDA, whose
// renorm_backward accumulates in float where the CPU's uses double. No rule
// that reads only the op's inputs sees inside the formula, so the side's own
// backward is rerun on its own device under libtorch's RecordFunction
// observer (exec::OpRecorder), in its dtype and in float64: an op that turns
// finite inputs of the dtype into a non-finite output of that dtype, where
// the float64 run's same op (aligned call by call) is past the dtype's range
// too, is an intermediate past the range. An early overflow (the CPU's cosh
// at 89: in range in float64), an op whose inputs were already wrong
// (log_ndtr's backward: exp of an exponent cancelled in f32, exp(18) exactly;
// session 39's judge), a narrowing cast, or a side whose rerun does not
// reproduce its non-finite values is not; nor is an op with no operand at a
// far end of the range (soft_margin_loss's exp(98.9) in float32: a formula a
// stable one would not form, judged real in session 50), and for an
// elementwise formula the overflow is looked for where the gradient is off
// (pow(0, -1) beside a subnormal base is a pole, not that element's cause).
// At an elementwise op the forward's saved result counts as such an
// intermediate where its own exact value is past the range.
// The numerical-accuracy notes, "Extremal values": intermediates may overflow
// the range of the used datatype though the result is representable.
#include <ATen/ATen.h>


#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "exec/overflow_recorder.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {
namespace {

// At an elementwise op: whether the side's saved result is not finite at
// every element where its gradient is off, while the op's float64 result
// from the side's inputs is finite and past the dtype's range there.
std::string SavedResultPastTheRange(const GradientContext& c, const GradientSide& s,
                                    const at::Tensor& off, double largest) {
  if (!c.pointwise || s.upcast || s.results.size() != 1 || !s.results[0].defined() ||
      s.results[0].numel() != off.numel() || s.results[0].is_complex()) {
    return "";
  }
  const exec::NodeResult f = exec::RunNode(c.node, s.inputs, c.types, exec::Target::kCpuF64);
  if (f.error || f.exact.empty() || !f.exact[0].defined() || f.exact[0].numel() != off.numel() ||
      f.exact[0].is_complex()) {
    return "";
  }
  const at::Tensor mine = s.results[0].reshape(-1);
  const at::Tensor exact = f.exact[0].to(at::kDouble).reshape(-1);
  const at::Tensor past = at::isfinite(mine).logical_not() & at::isfinite(exact) &
                          (exact.abs() > largest);
  const at::Tensor where = off.reshape(-1);
  if (!(past | where.logical_not()).all().item<bool>()) return "";
  return absl::StrCat("the forward result it saved (", c.node.QualifiedName(), "'s own, past the "
                      "range in float64 too)");
}

}  // namespace

std::optional<RuleMatch> gradient_intermediate_overflow(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kClassSplit || c.accumulation) return std::nullopt;
  if (c.dtype != graph::DType::kF16 && c.dtype != graph::DType::kBF16 &&
      c.dtype != graph::DType::kF32) {
    return std::nullopt;
  }
  const double largest = graph::MaxFinite(c.dtype);
  std::string seen;  // the ops past the range, for the reason
  for (const GradientSide* s : {&c.a, &c.b}) {
    if (!s->outgoing.defined() || !s->witness.defined() || s->outgoing.is_complex() ||
        s->witness.is_complex() || s->outgoing.sizes() != s->witness.sizes()) {
      return std::nullopt;
    }
    const at::Tensor w = s->witness.to(at::kDouble);
    // Where this side is not finite though the float64 gradient fits.
    const at::Tensor off = at::isfinite(s->outgoing).logical_not() & at::isfinite(w) &
                           (w.abs() <= largest);
    if (!off.any().item<bool>()) continue;
    // The forward's own result, saved for the backward, past the range where
    // its exact value is too (pow(2, 16) = 65536 is inf in f16, correctly;
    // PowBackward2 then forms 0·inf: session 50's 33508b9d, judged expected).
    if (const std::string saved = SavedResultPastTheRange(c, *s, off, largest); !saved.empty()) {
      if (seen.find(saved) == std::string::npos) {
        absl::StrAppend(&seen, seen.empty() ? "" : ", ", saved);
      }
      continue;
    }
    const std::optional<RecordedBackward> rec = RecordBackward(c, *s);
    if (!rec || rec->gradient.sizes() != off.sizes()) return std::nullopt;
    if (!(at::isfinite(rec->gradient).logical_not() | off.logical_not()).all().item<bool>()) {
      return std::nullopt;  // the rerun does not reproduce the side's non-finite values
    }
    const std::string op = exec::OverflowPastTheRange(rec->mine, rec->wide, c.dtype, off);
    if (op.empty()) return std::nullopt;
    if (seen.find(op) == std::string::npos) absl::StrAppend(&seen, seen.empty() ? "" : ", ", op);
  }
  if (seen.empty()) return std::nullopt;
  return RuleMatch{"gradient_intermediate_overflow",
                   absl::StrCat("inside the backward of ", c.node.QualifiedName(), ", ", seen,
                                " turns finite ", std::string(graph::DTypeName(c.dtype)),
                                " inputs into a value past the dtype's range (its float64 "
                                "rerun is too), though the float64 gradient fits: an "
                                "intermediate that overflows the used datatype")};
}

}  // namespace divfuzz::oracles::rules
