#include "exec/witnesses.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/zeros_like.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/pairwise_distance.h>
#include <ATen/ops/broadcast_tensors.h>
#include <ATen/ops/roll.h>
#include <ATen/ops/scalar_tensor.h>

#include <chrono>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "exec/dtype_convert.h"
#include "exec/exact_reference.h"
#include "exec/executor.h"
#include "exec/scalar_helper.h"
#include "ops/catalogue.h"
#include "ops/infer.h"

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
  // Integer inputs of an op that promotes them to floating, as cpu-f64 has them.
  if (auto result = node.results.empty() ? types.end() : types.find(node.results[0]);
      result != types.end()) {
    for (const std::string& name : IntegerValuesUpcast(node, types)) {
      auto it = up.find(name);
      if (it != up.end() && it->second.defined() &&
          at::isIntegralType(it->second.scalar_type(), /*includeBool=*/false)) {
        it->second = it->second.to(ToScalarType(result->second.dtype)).to(at::kDouble);
      }
    }
  }
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

std::optional<std::pair<std::string, at::Tensor>> AbsSpacing(
    const graph::Node& node, const std::map<std::string, at::Tensor>& inputs) {
  // The terms are |dx|·(|y_i| + |y_i+1|)/2, where dx = diff(x): |x| has
  // differences of either sign, which telescope (trapz(|x|, |x|) is
  // (x_n^2 - x_0^2)/2, however large the terms). Sample points spaced by |dx|
  // give sum|terms|.
  const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
  const graph::Literal* x = ops::FindArg(node, 1, "x");
  if (spec == nullptr || !(spec->hints & ops::kSpacingDifferences) || x == nullptr ||
      x->kind != graph::Literal::Kind::kValue || !inputs.count(x->s) ||
      !inputs.at(x->s).defined() || inputs.at(x->s).dim() == 0) {
    return std::nullopt;
  }
  const at::Tensor points = UpcastF64(inputs.at(x->s));
  const graph::Literal* d = ops::FindArg(node, 2, "dim");
  int64_t dim = d != nullptr && d->kind == graph::Literal::Kind::kInt ? d->i : -1;
  if (points.dim() == 1) dim = 0;  // 1-D x runs along y's dim
  if (dim < 0) dim += points.dim();
  if (dim < 0 || dim >= points.dim() || points.size(dim) < 1) return std::nullopt;
  const at::Tensor steps = points.diff(1, dim).abs();
  return std::make_pair(
      x->s, at::cat({at::zeros_like(points.narrow(dim, 0, 1)), steps.cumsum(dim)}, dim));
}

at::Tensor AbsTermsWitness(const graph::Node& node, const std::map<std::string, at::Tensor>& inputs,
                           const ops::TypeEnv& types, size_t output) {
  std::map<std::string, at::Tensor> abs_inputs;
  for (const auto& [name, t] : inputs) abs_inputs[name] = t.defined() ? t.abs() : t;
  if (std::optional<std::pair<std::string, at::Tensor>> spaced = AbsSpacing(node, inputs)) {
    abs_inputs[spaced->first] = spaced->second;
  }
  const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
  // A cross product: component i is a_j·b_k - a_k·b_j ((j, k) = (i+1, i+2)
  // mod 3 along its dim), so its terms are |a_j·b_k| + |a_k·b_j|; the op on
  // |inputs| cancels them to 0 for cross(a, a) (session 48's f74a7273: the
  // CPU's FMA left 620 of terms near 1e11, judged expected).
  const graph::Literal* lhs = ops::FindArg(node, 0, "self");
  const graph::Literal* rhs = ops::FindArg(node, 1, "other");
  auto is_input = [&](const graph::Literal* l) {
    return l != nullptr && l->kind == graph::Literal::Kind::kValue && inputs.count(l->s) &&
           inputs.at(l->s).defined();
  };
  if (spec != nullptr && (spec->hints & ops::kCrossTerms) && output == 0 && is_input(lhs) &&
      is_input(rhs)) {
    try {
      std::vector<at::Tensor> ab = at::broadcast_tensors(
          {UpcastF64(inputs.at(lhs->s)).abs(), UpcastF64(inputs.at(rhs->s)).abs()});
      const graph::Literal* d = ops::FindArg(node, 2, "dim");
      int64_t dim = -1;
      if (d != nullptr && d->kind == graph::Literal::Kind::kInt) {
        dim = d->i;
      } else if (node.op == "aten::cross") {  // dim=None: the first dim of size 3
        dim = -2;
        for (int64_t k = 0; k < ab[0].dim(); ++k) {
          if (ab[0].size(k) == 3) {
            dim = k;
            break;
          }
        }
        if (dim == -2) return at::Tensor();
      }
      if (ab[0].dim() == 0) return at::Tensor();
      if (dim < 0) dim += ab[0].dim();
      if (dim < 0 || dim >= ab[0].dim() || ab[0].size(dim) != 3) return at::Tensor();
      const at::Tensor a1 = at::roll(ab[0], -1, dim), a2 = at::roll(ab[0], -2, dim);
      const at::Tensor b1 = at::roll(ab[1], -1, dim), b2 = at::roll(ab[1], -2, dim);
      return a1.mul(b2).add(a2.mul(b1));
    } catch (const std::exception&) {
      return at::Tensor();
    }
  }
  // A loss of distances (triplet_margin_loss): each row's terms are the
  // margin and its distances, which margin + d(a, p) - d(a, n) cancels
  // (session 47's 333477ea: distances of 1212 leaving 1.1, judged expected).
  if (spec != nullptr && (spec->hints & ops::kDistanceTerms) && output == 0) {
    auto value = [&](size_t pos, const char* name) -> at::Tensor {
      const graph::Literal* l = ops::FindArg(node, pos, name);
      if (l == nullptr || l->kind != graph::Literal::Kind::kValue || !inputs.count(l->s)) {
        return at::Tensor();
      }
      return UpcastF64(inputs.at(l->s));
    };
    auto number = [&](size_t pos, const char* name, double fallback) {
      const graph::Literal* l = ops::FindArg(node, pos, name);
      if (l == nullptr) return fallback;
      if (l->kind == graph::Literal::Kind::kFloat) return l->f;
      if (l->kind == graph::Literal::Kind::kInt) return static_cast<double>(l->i);
      return fallback;
    };
    const at::Tensor a = value(0, "anchor"), p = value(1, "positive"), n = value(2, "negative");
    if (!a.defined() || !p.defined() || !n.defined() || a.is_complex()) return at::Tensor();
    const double pnorm = number(4, "p", 2), eps = number(5, "eps", 1e-6);
    const graph::Literal* swap = ops::FindArg(node, 6, "swap");
    const graph::Literal* red = ops::FindArg(node, 7, "reduction");
    const int64_t reduction = red != nullptr && red->kind == graph::Literal::Kind::kInt ? red->i : 1;
    try {
      at::Tensor terms = at::pairwise_distance(a, p, pnorm, eps)
                             .add(at::pairwise_distance(a, n, pnorm, eps))
                             .add(std::abs(number(3, "margin", 1.0)));
      if (swap != nullptr && swap->kind == graph::Literal::Kind::kBool && swap->b) {
        terms = terms.add(at::pairwise_distance(p, n, pnorm, eps));
      }
      if (reduction == 1) return terms.mean().abs();
      if (reduction == 2) return terms.sum().abs();
      return terms.abs();
    } catch (const std::exception&) {
      return at::Tensor();
    }
  }
  const NodeResult s = RunNode(node, abs_inputs, types, Target::kCpuF64);
  if (s.error || s.exact.size() <= output || !s.exact[output].defined() ||
      s.exact[output].is_complex()) {
    return at::Tensor();
  }
  return s.exact[output].to(at::kDouble).abs();
}

std::optional<std::pair<at::Tensor, at::Tensor>> InputBoxWitness(
    const graph::Node& node, const std::map<std::string, at::Tensor>& inputs,
    const ops::TypeEnv& types, size_t output, const std::function<double(graph::DType)>& rel_of) {
  std::map<std::string, at::Tensor> own;
  std::vector<std::string> floating;
  for (const auto& [name, t] : inputs) {
    const bool f = t.defined() && at::isFloatingType(t.scalar_type());
    own[name] = f ? t.to(at::kDouble) : t;
    if (f && floating.size() < 3) floating.push_back(name);
  }
  if (floating.empty()) return std::nullopt;
  at::Tensor lo, hi;
  for (int corner = 0; corner < (1 << floating.size()); ++corner) {
    std::map<std::string, at::Tensor> moved = own;
    for (size_t i = 0; i < floating.size(); ++i) {
      auto it = types.find(floating[i]);
      const graph::DType dt = it != types.end() ? it->second.dtype : graph::DType::kF32;
      const double e = rel_of(dt), top = graph::MaxFinite(dt);
      moved[floating[i]] = own[floating[i]].mul((corner >> i) & 1 ? 1 + e : 1 - e).clamp(-top, top);
    }
    const NodeResult r = RunNode(node, moved, types, Target::kCpuF64);
    if (r.error || r.exact.size() <= output || !r.exact[output].defined()) return std::nullopt;
    const at::Tensor y = r.exact[output].to(at::kDouble);
    if (lo.defined() && y.sizes() != lo.sizes()) return std::nullopt;
    lo = lo.defined() ? at::minimum(lo, y) : y;
    hi = hi.defined() ? at::maximum(hi, y) : y;
  }
  return std::make_pair(lo, hi);
}

WitnessPlan PlanFor(Target a, Target b) {
  WitnessPlan plan;
  if (a == Target::kCuda || b == Target::kCuda) {
    // With one CUDA side, the witness runs that side's switches too (its
    // float64 kernels come from the same library); two CUDA sides that differ
    // in them leave it on the defaults.
    const bool one = (a == Target::kCuda) != (b == Target::kCuda) || a.Same(b);
    plan.second_f64 = Target(Target::kCudaF64, one ? (a == Target::kCuda ? a : b).variants() : 0);
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

std::optional<std::string> UpcastChangesCall(const graph::Node& node,
                                             const std::map<std::string, at::Tensor>& inputs,
                                             bool error_split,
                                             const std::optional<std::string>& f64_error) {
  bool narrow = false;  // an input the upcast changes
  std::set<at::ScalarType> floating;
  for (const auto& [name, t] : inputs) {
    if (!t.defined() || !(at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()))) {
      continue;
    }
    floating.insert(t.scalar_type());
    narrow = narrow || (t.scalar_type() != at::kDouble && t.scalar_type() != at::kComplexDouble);
  }
  if (!narrow) return std::nullopt;
  if (const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
      spec != nullptr && !spec->dtype_default_arg.empty()) {
    // Positional or by name: the schema says where it sits.
    size_t position = 1000;
    if (auto handle = c10::Dispatcher::singleton().findSchema({node.op, node.overload})) {
      const auto& params = handle->schema().arguments();
      for (size_t i = 0; i < params.size(); ++i) {
        if (params[i].name() == spec->dtype_default_arg) position = i;
      }
    }
    const graph::Literal* given = ops::FindArg(node, position, spec->dtype_default_arg);
    if (given == nullptr || given->kind == graph::Literal::Kind::kNone) {
      return absl::StrCat("the default of ", spec->dtype_default_arg,
                          " depends on the input's dtype, so upcast it is another value");
    }
  }
  // ATen's type checks name the dtype they refuse; a value's failure (a
  // singular matrix, an index out of range) does not. Some of these checks
  // run only in the CPU kernel, not in the meta kernel (norm's dtype=).
  if (f64_error && (absl::StrContains(*f64_error, "Double") ||
                    absl::StrContains(*f64_error, "float64"))) {
    return absl::StrCat("the float64 call raises on its own dtype (", *f64_error, ")");
  }
  if (error_split && floating.size() > 1) {
    std::vector<std::string> names;
    for (at::ScalarType t : floating) names.push_back(c10::toString(t));
    return absl::StrCat("the call mixes floating dtypes (", absl::StrJoin(names, ", "),
                        ") that the float64 upcast unifies, and one side raised");
  }
  const std::optional<MetaCall> own = CallOnMeta(node, inputs, /*upcast=*/false);
  const std::optional<MetaCall> up = CallOnMeta(node, inputs, /*upcast=*/true);
  if (!own || !up) return std::nullopt;
  if (own->error && !up->error) {
    return absl::StrCat("the meta kernel rejects the call in the program's dtypes (", *own->error,
                        ") and accepts it upcast to float64");
  }
  if (!own->error && up->error) {
    return absl::StrCat("the meta kernel accepts the call in the program's dtypes and rejects it "
                        "upcast to float64 (",
                        *up->error, ")");
  }
  if (own->error) return std::nullopt;
  for (size_t i = 0; i < own->outputs.size() && i < up->outputs.size(); ++i) {
    if (own->outputs[i].first != up->outputs[i].first) {
      return absl::StrCat("upcast to float64, the call's output ", i, " has shape [",
                          absl::StrJoin(up->outputs[i].first, ", "), "] instead of [",
                          absl::StrJoin(own->outputs[i].first, ", "), "] (meta kernel)");
    }
  }
  return std::nullopt;
}

}  // namespace divfuzz::exec
