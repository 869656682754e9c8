#include "exec/witnesses.h"

#include <ATen/ops/scalar_tensor.h>

#include <chrono>

#include "exec/dtype_convert.h"
#include "exec/exact_reference.h"
#include "exec/executor.h"
#include "exec/scalar_helper.h"

namespace divfuzz::exec {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

at::Tensor UpcastF64(const at::Tensor& t) {
  if (!t.defined()) return t;
  if (at::isComplexType(t.scalar_type())) return t.to(at::kComplexDouble);
  if (at::isFloatingType(t.scalar_type())) return t.to(at::kDouble);
  return t;
}

// ATen's scalar kernels on float64 inputs, rounded back to the node's dtypes.
NodeResult ScalarF64(const graph::Node& node, const std::map<std::string, at::Tensor>& inputs,
                     const ops::TypeEnv& types) {
  std::map<std::string, at::Tensor> up;
  for (const auto& [name, t] : inputs) up[name] = UpcastF64(t);
  NodeResult r = RunNode(node, up, types, Target::kCpuScalar);
  if (r.error) return r;
  r.exact = r.outputs;
  for (size_t i = 0; i < r.outputs.size() && i < node.results.size(); ++i) {
    auto it = types.find(node.results[i]);
    if (r.outputs[i].defined() && it != types.end()) {
      r.outputs[i] = r.outputs[i].to(ToScalarType(it->second.dtype));
    }
  }
  return r;
}

graph::Node RoundedScalars(graph::Node node, graph::DType dtype) {
  for (graph::Argument& a : node.args) {
    graph::Literal& l = a.value;
    if (l.kind == graph::Literal::Kind::kFloat) {
      l.f = RoundToDType(l.f, dtype);
    }
  }
  return node;
}

}  // namespace

WitnessPlan PlanFor(Target a, Target b) {
  WitnessPlan plan;
  if (a == Target::kCuda || b == Target::kCuda) {
    plan.second_f64 = Target::kCudaF64;
  } else if (a == Target::kCpuScalar || b == Target::kCpuScalar) {
    plan.second_f64 = Target::kCpuScalar;
  }
  return plan;
}

std::vector<Witness> NodeWitnesses(const graph::Node& node,
                                   const std::map<std::string, at::Tensor>& inputs,
                                   const ops::TypeEnv& types, graph::DType dtype,
                                   const WitnessPlan& plan) {
  std::vector<Witness> out;
  const bool roundable = plan.scalars_rounded && HasRoundableScalars(node, dtype);
  auto t0 = Clock::now();
  bool has_exact = false;
  ExactOptions exact_options;
  exact_options.only = plan.only;
  if (std::optional<ExactResult> e = RunExact(node, inputs, types, exact_options)) {
    Witness w{Witness::Kind::kExact, "exact", std::move(e->result), e->rounding_free, Since(t0)};
    out.push_back(std::move(w));
    has_exact = true;
    if (roundable) {
      t0 = Clock::now();
      ExactOptions o = exact_options;
      o.round_scalars = true;
      if (std::optional<ExactResult> r = RunExact(node, inputs, types, o)) {
        out.push_back({Witness::Kind::kScalarsRounded, "exact-scalars-rounded",
                       std::move(r->result), false, Since(t0)});
      }
    }
  }
  t0 = Clock::now();
  out.push_back({Witness::Kind::kF64, "cpu-f64", RunNode(node, inputs, types, Target::kCpuF64),
                 false, Since(t0)});
  // The exact witness decides alone: a second float64 opinion adds nothing.
  if (!has_exact && (plan.second_f64 || plan.second_f64_runner)) {
    t0 = Clock::now();
    Witness w;
    w.kind = Witness::Kind::kSecondF64;
    if (plan.second_f64_runner) {
      w.name = plan.second_f64 ? std::string(TargetName(*plan.second_f64)) + "-f64" : "second-f64";
      if (plan.second_f64 == Target::kCudaF64) w.name = "cuda-f64";
      w.result = plan.second_f64_runner(node, inputs, types);
    } else if (*plan.second_f64 == Target::kCudaF64) {
      w.name = "cuda-f64";
      w.result = RunNode(node, inputs, types, Target::kCudaF64);
    } else {
      w.name = "cpu-scalar-f64";
      w.result = ScalarF64(node, inputs, types);
    }
    w.seconds = Since(t0);
    out.push_back(std::move(w));
  }
  if (roundable && !has_exact) {
    t0 = Clock::now();
    out.push_back({Witness::Kind::kScalarsRounded, "cpu-f64-scalars-rounded",
                   RunNode(RoundedScalars(node, dtype), inputs, types, Target::kCpuF64), false,
                   Since(t0)});
  }
  return out;
}

}  // namespace divfuzz::exec
