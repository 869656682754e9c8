// reference_upcast: the float64 reference side did not make the same call.
//
// No PyTorch sentence: the rule excuses divfuzz's own float64 reference
// target (cpu-f64, cuda-f64) where it did not make the same call as the other
// side, a defect of the reference rather than a PyTorch policy.
#include "oracles/rules/rule.h"

#include <ATen/ops/any.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/isinf.h>

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "exec/dtype_convert.h"
#include "exec/target.h"
#include "exec/witnesses.h"
#include "graph/printer.h"
#include "oracles/attribution.h"

namespace divfuzz::oracles::rules {

using graph::DType;

namespace {

// An input the reference holds finite in float64 where its declared,
// narrower dtype overflows (an f32 product past FLT_MAX): the program's value
// is +-inf there, so the reference ran another call. Keeping the float64
// value elsewhere is what lets the reference expose a kernel (j0(inf) is NaN
// on the CPU, 0 exactly), so it only absolves the reference itself.
std::optional<std::string> InputBeyondItsDType(const Context& c, const exec::RunResult& reference) {
  for (const auto& [name, t] : NodeInputs(c.program, c.d.node_index, reference)) {
    auto declared = c.types.find(name);
    if (!t.defined() || t.scalar_type() != at::kDouble || declared == c.types.end() ||
        !graph::IsFloating(declared->second.dtype) || declared->second.dtype == DType::kF64) {
      continue;
    }
    const at::Tensor narrowed = t.to(exec::ToScalarType(declared->second.dtype)).to(at::kDouble);
    const at::Tensor beyond = at::isinf(narrowed).logical_and(at::isfinite(t));
    if (!at::any(beyond).item<bool>()) continue;
    const double v = t.masked_select(beyond).flatten()[0].item<double>();
    return absl::StrCat("%", name, " is ", graph::FormatFloat(v), " in float64, past ",
                        std::string(graph::DTypeName(declared->second.dtype)),
                        "'s range where the program's value is ", v > 0 ? "inf" : "-inf");
  }
  return std::nullopt;
}

}  // namespace

// The float64 reference target is a side here, and its upcast changed the
// call (exec::UpcastChangesCall), or the reference is blamed for an input
// past its dtype's range (InputBeyondItsDType): the sides did not run the
// same call.
std::optional<RuleMatch> reference_upcast(const Context& c) {
  auto upcasts = [](exec::Target t) {
    return t == exec::Target::kCpuF64 || t == exec::Target::kCudaF64;
  };
  if (upcasts(c.a.target) == upcasts(c.b.target) || c.d.node_index < 0) return std::nullopt;
  const exec::RunResult& other = upcasts(c.a.target) ? c.b : c.a;
  const exec::RunResult& reference = upcasts(c.a.target) ? c.a : c.b;
  const auto& raised = reference.nodes[c.d.node_index].error;
  std::optional<std::string> why = exec::UpcastChangesCall(
      c.node, NodeInputs(c.program, c.d.node_index, other),
      c.d.cls == DivergenceClass::kErrorSplit,
      raised ? std::optional<std::string>(raised->message) : std::nullopt);
  if (!why && c.d.wrong_side == exec::TargetName(reference.target)) {
    why = InputBeyondItsDType(c, reference);
  }
  if (!why) return std::nullopt;
  return RuleMatch{"reference_upcast",
                   absl::StrCat(*why, ": the float64 reference side did not make the same call")};
}

}  // namespace divfuzz::oracles::rules
