#include "oracles/trigger.h"

#include <ATen/ops/view_as_real.h>

#include <cmath>
#include <limits>
#include <vector>

#include "exec/dtype_convert.h"
#include "ops/catalogue.h"
#include "oracles/attribution.h"

namespace divfuzz::oracles {
namespace {

enum Trigger { kNaN, kInf, kInt64Range, kNearMax, kSubnormal, kOrdinary };
constexpr const char* kNames[] = {"nan", "inf", "int64_range", "near_max", "subnormal", "ordinary"};

// `casts`: the op casts values to int64 (then 2^63 is the threshold that matters).
Trigger Classify(double x, graph::DType d, bool casts) {
  if (std::isnan(x)) return kNaN;
  if (std::isinf(x)) return kInf;
  const double a = std::fabs(x);
  if (casts && a >= 9223372036854775808.0) return kInt64Range;
  if (a > std::sqrt(graph::MaxFinite(d))) return kNearMax;
  if (a != 0 && a < graph::SmallestNormal(d)) return kSubnormal;
  return kOrdinary;
}

Trigger Worst(const at::Tensor& t, bool casts, Trigger best) {
  if (!t.defined() || t.numel() == 0) return best;
  const at::ScalarType st = t.scalar_type();
  if (!at::isFloatingType(st) && !at::isComplexType(st)) return best;
  graph::DType dtype = exec::FromScalarType(st).value_or(graph::DType::kF32);
  if (dtype == graph::DType::kC64) dtype = graph::DType::kF32;
  if (dtype == graph::DType::kC128) dtype = graph::DType::kF64;
  at::Tensor v = at::isComplexType(st) ? at::view_as_real(t.contiguous()) : t;
  v = v.to(at::kDouble).contiguous().reshape({-1});
  const double* p = v.data_ptr<double>();
  for (int64_t i = 0; i < v.numel() && best != kNaN; ++i) best = std::min(best, Classify(p[i], dtype, casts));
  return best;
}

}  // namespace

std::string TensorsTrigger(const std::vector<at::Tensor>& tensors, bool casts) {
  Trigger best = kOrdinary;
  try {
    for (const at::Tensor& t : tensors) best = Worst(t, casts, best);
  } catch (const std::exception&) {
  }
  return kNames[best];
}

std::string TriggerClass(const graph::Program& program, const exec::RunResult& run,
                         const Divergence& d) {
  Trigger best = kOrdinary;
  if (d.node_index < 0 || static_cast<size_t>(d.node_index) >= program.nodes.size()) {
    return kNames[best];
  }
  const ops::OpSpec* spec = ops::FindOp(program.nodes[d.node_index].QualifiedName());
  const bool casts = spec != nullptr && ((spec->hints & ops::kInternalIntCast) ||
                                         spec->rule == ops::Rule::kCast);
  try {
    for (const auto& [name, t] : NodeInputs(program, d.node_index, run)) {
      best = Worst(t, casts, best);
    }
    for (const graph::Argument& a : program.nodes[d.node_index].args) {
      if (a.value.kind == graph::Literal::Kind::kFloat) {
        best = std::min(best, Classify(a.value.f, graph::DType::kF64, casts));
      }
    }
  } catch (const std::exception&) {
  }
  return kNames[best];
}

}  // namespace divfuzz::oracles
