// gradient_intermediate_underflow: the other end of
// gradient_intermediate_overflow. A backward formula composed of ATen ops
// can fall below the dtype's normal range in an intermediate though the
// gradient is an ordinary number: atan2's backward divides by x² + y², and
// y = 1e-36 squares to 0 in float32, so the zero denominator is masked to a
// gradient of 0 where the exact one is 1e36 (session 48's 6828ad12 and
// session 50's judges: expected); hypot's grad·self at f16's smallest
// subnormal flushes to 0; log10's x·ln 10 at 2^-149 keeps one bit. The
// side's own backward is rerun under libtorch's RecordFunction observer
// (exec::OpRecorder) in its dtype and in float64: an op whose float64 output
// is nonzero and below the dtype's smallest normal where the side is off its
// float64 backward, whose own output there lost that value, and which reads
// an operand at the small end of the range (a subnormal or tiny input, not a
// formula that cancels at ordinary inputs), is an intermediate below the
// range. Only for an elementwise op (ops::kPointwise: an intermediate shaped
// like the gradient is that element's), judged where each side is off; in f16, only where the same
// formula in float32 does not miss as well (then it is the formula).
// The numerical-accuracy notes, "Extremal values" (intermediate results that
// leave the range of the used datatype), at the range's small end, as
// sessions 48 and 50's judges applied it.
#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "exec/dtype_convert.h"
#include "exec/executor.h"
#include "exec/overflow_recorder.h"
#include "oracles/compare.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {

std::optional<RuleMatch> gradient_intermediate_underflow(const GradientContext& c) {
  // Elementwise ops only (ops::kPointwise): there an element's intermediates
  // are its own. A normalization's formula mixes elements, and one of its
  // tiny products says nothing of the term it dropped elsewhere (the judged
  // real rms_norm of corpus/regressions, MulBackward0-f32-tolerance-rms_norm).
  if ((c.d.cls != DivergenceClass::kTolerance && c.d.cls != DivergenceClass::kClassSplit) ||
      c.accumulation || !c.pointwise) {
    return std::nullopt;
  }
  if (c.dtype != graph::DType::kF16 && c.dtype != graph::DType::kBF16 &&
      c.dtype != graph::DType::kF32) {
    return std::nullopt;
  }
  const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
  std::string seen;  // the ops below the range, for the reason
  bool any_off = false;
  for (const GradientSide* s : {&c.a, &c.b}) {
    if (!s->outgoing.defined() || !s->witness.defined() || s->outgoing.is_complex() ||
        s->witness.is_complex() || s->outgoing.sizes() != s->witness.sizes()) {
      return std::nullopt;
    }
    // Where this side is off its float64 backward (an upcast side is the
    // float64 run itself).
    if (s->upcast) continue;
    const at::Tensor rounded = exec::ToDTypeKeepingNaNs(s->witness, s->outgoing.scalar_type());
    const at::Tensor off = DifferingElements(s->outgoing, rounded, c.dtype, tol);
    if (!off.defined() || !off.any().item<bool>()) continue;
    any_off = true;
    const std::optional<RecordedBackward> rec = RecordBackward(c, *s);
    if (!rec || rec->gradient.sizes() != s->outgoing.sizes()) return std::nullopt;
    // The rerun is off where the side was: it reproduces the side.
    const at::Tensor off_again = DifferingElements(rec->gradient, rounded, c.dtype, tol);
    if (!off_again.defined() ||
        !(off_again.reshape(-1) | off.reshape(-1).logical_not()).all().item<bool>()) {
      return std::nullopt;
    }
    const std::string op = exec::UnderflowBelowTheRange(rec->mine, rec->wide, c.dtype, off);
    if (op.empty()) return std::nullopt;
    // f16's normal range starts at 6.1e-5: an ordinary small input squares
    // below it. Where the same formula in float32 (f32's range, f16's
    // inputs) misses too, the formula keeps no digits at these inputs and
    // the range is not why (session 50's SincBackward0 f16 at z = 3e-4,
    // judged real: float32 is 4.4% off there too).
    if (c.dtype == graph::DType::kF16) {
      std::map<std::string, at::Tensor> wider;
      for (const auto& [name, t] : s->inputs) {
        wider[name] = t.defined() && t.scalar_type() == at::kHalf ? t.to(at::kFloat) : t;
      }
      std::vector<at::Tensor> incoming;
      for (const at::Tensor& t : s->incoming) {
        incoming.push_back(t.defined() && t.scalar_type() == at::kHalf ? t.to(at::kFloat) : t);
      }
      const exec::VjpResult r =
          exec::RunNodeVjp(c.node, wider, incoming, c.types, exec::Target::kCpu);
      if (r.result.error || c.out >= r.result.outputs.size()) return std::nullopt;
      const at::Tensor f32 = r.result.outputs[c.out].cpu();
      if (f32.sizes() != s->witness.sizes()) return std::nullopt;
      const at::Tensor w = s->witness.to(at::kDouble).reshape(-1).masked_select(off.reshape(-1));
      const at::Tensor v = f32.to(at::kDouble).reshape(-1).masked_select(off.reshape(-1));
      if (!((v - w).abs() <= tol.atol + tol.rtol * w.abs()).all().item<bool>()) {
        return std::nullopt;
      }
    }
    if (seen.find(op) == std::string::npos) absl::StrAppend(&seen, seen.empty() ? "" : ", ", op);
  }
  if (!any_off || seen.empty()) return std::nullopt;
  return RuleMatch{"gradient_intermediate_underflow",
                   absl::StrCat("inside the backward of ", c.node.QualifiedName(), ", ", seen,
                                " reads an operand at the small end of ",
                                std::string(graph::DTypeName(c.dtype)),
                                "'s range and gives a value below its smallest normal (its "
                                "float64 rerun too) that the dtype flushes or keeps a few bits "
                                "of, where the gradient is off: an intermediate below the range "
                                "of the used datatype")};
}

}  // namespace divfuzz::oracles::rules
