#include "oracles/gradient.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <regex>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "exec/backward_probe.h"
#include "exec/dtype_convert.h"
#include "exec/exact_reference.h"
#include "exec/executor.h"
#include "graph/gradient.h"
#include "graph/printer.h"
#include "oracles/attribution.h"
#include "ops/catalogue.h"
#include "ops/kernel_classes.h"
#include "oracles/compare.h"
#include "oracles/expected_rules.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles {
namespace {

using exec::Target;

graph::DType DTypeOf(const ops::TypeEnv& types, const std::string& name) {
  auto it = types.find(name);
  return it == types.end() ? graph::DType::kF32 : it->second.dtype;
}

// What one side's backward of forward node k took in and gave out.
struct Step {
  // The program's run built this backward differentiable (a later gradient
  // statement differentiates it again): PyTorch then takes other backward
  // routines (group_norm's infinitely_differentiable_native_group_norm_backward
  // rounds in f16 and overflows where the fused kernel does not), so reruns do
  // too.
  bool create_graph = false;
  graph::Node pseudo;  // a step inside an earlier statement: its exec::MakeVjpNode node
  std::map<std::string, at::Tensor> inputs;  // node k's forward inputs on this side
  std::vector<at::Tensor> incoming;          // dL/d(result j), undefined where none
  exec::VjpResult vjp;                       // rerun alone on this side's target
};

// Node k's forward inputs on one side, in the layouts the run held them.
std::map<std::string, at::Tensor> RunInputs(const graph::Program& program, int k,
                                            const exec::RunResult& run) {
  std::map<std::string, at::Tensor> inputs = NodeInputs(program, k, run);
  for (auto& [name, t] : inputs) t = exec::InRunFormat(run.formats, name, t);
  return inputs;
}

Step StepOf(const graph::Program& program, const ops::TypeEnv& types, const exec::RunResult& run,
            const exec::NodeResult& grad, int k) {
  Step s;
  // In the layouts the run held them: a kernel's path follows the layout
  // (hardswish_backward's vector lanes and scalar tail give different
  // gradients at a NaN, pytorch#195075), so a contiguous rerun is not the
  // run's kernel.
  s.inputs = RunInputs(program, k, run);
  for (const std::string& r : program.nodes[k].results) {
    auto it = grad.value_grads.find(r);
    s.incoming.push_back(it == grad.value_grads.end()
                             ? at::Tensor()
                             : exec::InRunFormat(grad.value_grad_formats, r, it->second));
  }
  return s;
}

// The backward step of forward node k2 inside statement g1, which the
// statement being judged differentiates again, as each side's Step (its node
// an exec::MakeVjpNode): node k2's inputs and the first-order gradients g1
// sent into its results are the step's inputs, dL2/d(dL1/dx) for each
// floating input x its incoming gradients. Adds the step's values to types.
std::optional<std::pair<Step, Step>> StepsInside(const graph::Program& program,
                                                 const exec::RunResult& a, const exec::RunResult& b,
                                                 const exec::NodeResult& ga,
                                                 const exec::NodeResult& gb, int g1, int k2,
                                                 ops::TypeEnv* types) {
  const graph::Node& first = program.nodes[g1];
  const exec::NodeResult &fa = a.nodes[g1], &fb = b.nodes[g1];
  if (first.results.empty() || fa.error || fb.error) return std::nullopt;
  const std::string& s1 = first.results[0];
  const graph::Node& inner = program.nodes[k2];
  std::vector<std::string> incoming;
  bool any = false;
  for (const std::string& r : inner.results) {
    const bool here = fa.value_grads.count(r) && fb.value_grads.count(r) && types->count(r);
    incoming.push_back(here ? graph::FirstOrderName(r, s1) : "");
    if (here) (*types)[incoming.back()] = types->at(r);
    any = any || here;
  }
  if (!any) return std::nullopt;
  std::vector<std::string> wrt, results;
  for (const std::string& x : inner.Uses()) {
    auto t = types->find(x);
    if (t == types->end() || !(graph::IsFloating(t->second.dtype) || graph::IsComplex(t->second.dtype))) {
      continue;
    }
    wrt.push_back(x);
    results.push_back(absl::StrCat(graph::FirstOrderName(x, s1), ".", k2));
    (*types)[results.back()] = t->second;
  }
  if (wrt.empty()) return std::nullopt;
  const graph::Node pseudo = exec::MakeVjpNode(inner, incoming, wrt, results);
  auto side = [&](const exec::RunResult& run, const exec::NodeResult& first_run,
                  const exec::NodeResult& grad) {
    Step s;
    s.pseudo = pseudo;
    s.inputs = RunInputs(program, k2, run);
    for (size_t j = 0; j < incoming.size(); ++j) {
      if (incoming[j].empty()) continue;
      const std::string& r = inner.results[j];
      s.inputs[incoming[j]] =
          exec::InRunFormat(first_run.value_grad_formats, r, first_run.value_grads.at(r));
    }
    bool on_path = false;
    for (const std::string& x : wrt) {
      auto it = grad.value_grads.find(graph::FirstOrderName(x, s1));
      s.incoming.push_back(it == grad.value_grads.end() ? at::Tensor() : it->second);
      on_path = on_path || s.incoming.back().defined();
    }
    return s;
  };
  return std::make_pair(side(a, fa, ga), side(b, fb, gb));
}

bool SameIncoming(const Step& a, const Step& b, const graph::Node& node, const ops::TypeEnv& types,
                  const Policy& policy) {
  for (size_t j = 0; j < a.incoming.size() && j < b.incoming.size(); ++j) {
    const at::Tensor &x = a.incoming[j], &y = b.incoming[j];
    if (x.defined() != y.defined()) return false;
    if (!x.defined()) continue;
    const graph::DType dt = DTypeOf(types, node.results[j]);
    if (CompareTensors(x, y, dt, policy.For(node.QualifiedName(), dt))) return false;
  }
  return true;
}

bool AnyIncoming(const Step& s) {
  return std::any_of(s.incoming.begin(), s.incoming.end(),
                     [](const at::Tensor& t) { return t.defined(); });
}

std::string ErrorOf(const exec::NodeResult& r) { return r.error ? r.error->message : "ok"; }

// The float64 backward of node k from one side's own step: the witness.
exec::VjpResult WitnessOf(const graph::Node& node, const Step& s, const ops::TypeEnv& types,
                          Target target) {
  return exec::RunNodeVjp(node, s.inputs, s.incoming, types, target, false, nullptr, nullptr,
                          s.create_graph);
}

// The results forward node `root` gave on one side, which its backward (or,
// for a step inside an earlier statement, the step's inner forward) saves;
// none where they do not line up with the node's results.
std::vector<at::Tensor> SavedResults(const exec::RunResult& run, int root, const graph::Node& node) {
  const graph::Node* inner = exec::VjpInner(node);
  const size_t n = inner ? inner->results.size() : node.results.size();
  if (root < 0 || static_cast<size_t>(root) >= run.nodes.size() ||
      run.nodes[root].outputs.size() != n) {
    return {};
  }
  return run.nodes[root].outputs;
}

bool WithinTolerance(const at::Tensor& x, const at::Tensor& ref, graph::DType dt,
                     const Policy& policy, const std::string& op) {
  return !CompareTensors(x, ref, dt, policy.For(op, dt)).has_value();
}

// Element e of t (its `component` of a complex one: 0 real, 1 imaginary).
std::string At(const at::Tensor& t, long long e, int component = 0) {
  if (!t.defined() || e < 0 || e >= t.numel()) return "?";
  at::Tensor flat = t.reshape(-1);
  if (flat.is_complex()) {
    flat = at::view_as_real(flat.contiguous()).reshape(-1), e = 2 * e + (component == 1 ? 1 : 0);
  }
  return absl::StrCat(flat[e].to(at::kDouble).item<double>());
}

// <u, J^T v> against <J u, v> on one side, u a fixed pseudo-random direction
// in the input `wrt`: reverse and forward mode are separate code in PyTorch,
// so a side whose two modes disagree convicts itself. nullopt: no evidence
// (forward mode not implemented, non-finite values, complex).
std::optional<bool> ModesDisagree(const graph::Node& node, const Step& s, const std::string& wrt,
                                  size_t out, const ops::TypeEnv& types, Target target,
                                  graph::DType dt) {
  auto x = s.inputs.find(wrt);
  if (x == s.inputs.end() || !x->second.is_floating_point() ||
      out >= s.vjp.result.outputs.size()) {
    return std::nullopt;
  }
  at::Generator gen = at::detail::createCPUGenerator(7);
  const at::Tensor u =
      at::normal(0.0, 1.0, x->second.sizes(), gen, at::TensorOptions().dtype(at::kDouble))
          .to(x->second.scalar_type());
  exec::NodeResult jvp = exec::RunNodeJvp(node, s.inputs, {{wrt, u}}, types, target);
  if (jvp.error) return std::nullopt;
  const at::Tensor vjp = s.vjp.result.outputs[out].to(at::kDouble);
  const at::Tensor ud = u.to(at::kDouble);
  if (vjp.sizes() != ud.sizes()) return std::nullopt;
  double lhs = (ud * vjp).sum().item<double>(), terms = (ud * vjp).abs().sum().item<double>();
  double rhs = 0;
  int64_t n = ud.numel();
  for (size_t j = 0; j < jvp.outputs.size() && j < s.incoming.size(); ++j) {
    const at::Tensor &t = jvp.outputs[j], &v = s.incoming[j];
    if (!t.defined() || !v.defined() || t.sizes() != v.sizes() || t.is_complex() ||
        v.is_complex()) {
      continue;
    }
    const at::Tensor prod = t.to(at::kDouble) * v.to(at::kDouble);
    rhs += prod.sum().item<double>();
    terms += prod.abs().sum().item<double>();
    n = std::max<int64_t>(n, v.numel());
  }
  if (!std::isfinite(lhs) || !std::isfinite(rhs) || !std::isfinite(terms)) return std::nullopt;
  const double bound = 8.0 * static_cast<double>(n) * graph::Epsilon(dt) * terms + 1e-300;
  return std::abs(lhs - rhs) > bound;
}

// The exact gradient v * f'(x) of an elementwise node with an exact witness
// (MPFR central differences, exec::ExactOptions::derivative_wrt), or the
// exact backward of an op that has one (OpSpec::exact_vjp), from one side's
// own inputs, as float64 over the output; NaN where the derivative is
// unknown (a kink, a pole). Undefined when the node has none: several
// results, a broadcast input, complex values, an op MPFR does not model.
at::Tensor ExactGradient(const graph::Node& node, const Step& s, const std::string& wrt,
                         const ops::TypeEnv& types, const at::Tensor& only,
                         const std::vector<at::Tensor>& saved = {}) {
  if (node.results.size() != 1 || s.incoming.size() != 1 || !s.incoming[0].defined() ||
      s.incoming[0].is_complex()) {
    return at::Tensor();
  }
  // An op with an exact backward (not elementwise: a scan) gives it whole.
  if (std::optional<at::Tensor> vjp = exec::RunExactVjp(
          node, s.inputs, s.incoming[0], wrt, saved.size() == 1 ? saved[0] : at::Tensor())) {
    return *vjp;
  }
  exec::ExactOptions options;
  options.only = only;
  options.derivative_wrt = wrt;
  std::optional<exec::ExactResult> e = exec::RunExact(node, s.inputs, types, options);
  if (!e || e->result.error || e->result.exact.empty() || !e->result.exact[0].defined()) {
    return at::Tensor();
  }
  const at::Tensor d = e->result.exact[0].to(at::kDouble);
  const at::Tensor v = s.incoming[0].to(at::kDouble);
  if (d.sizes() != v.sizes()) return at::Tensor();
  return d * v;
}

// The largest distance of `mine` from `ref` in the dtype's ulps (relative, in
// units of eps; subnormals in their fixed spacing), over the `differing`
// elements where ref is finite and not 0.
double UlpsOff(const at::Tensor& mine, const at::Tensor& ref, const at::Tensor& differing,
               graph::DType dt) {
  if (!mine.defined() || !ref.defined() || mine.numel() != ref.numel() || mine.is_complex() ||
      ref.is_complex()) {
    return 0;
  }
  at::Tensor m = mine.reshape(-1).to(at::kDouble), r = ref.reshape(-1).to(at::kDouble);
  if (differing.defined() && differing.numel() == m.numel()) {
    m = m.masked_select(differing), r = r.masked_select(differing);
  }
  // Below the smallest normal the dtype's spacing is fixed: an f16 -1.19e-7
  // for an exact -1.0e-7 is a third of a subnormal step, not 195 eps of it
  // (session 36's sinc f16 bucket blamed on both).
  const at::Tensor rel =
      (m - r).abs() / (r.abs().clamp_min(graph::SmallestNormal(dt)) * graph::Epsilon(dt));
  const at::Tensor counted = rel.masked_select(at::isfinite(rel) & r.ne(0));
  return counted.numel() == 0 ? 0.0 : counted.max().item<double>();
}

// Inside a composite op's backward (cosine_similarity's DivBackward0,
// LinalgVectorNormBackward0, ...): the first of the op's own kernels, in the
// order side a's engine ran them, whose outputs part the two sides, matched
// by place in the op's graph. "" when the backward is one kernel, the graphs
// differ, or no kernel's outputs part them (the sum of agreeing
// contributions does).
std::string InnerKernel(const graph::Node& node, const Step& sa, const Step& sb,
                        const ops::TypeEnv& types, Target ta, Target tb, const Policy& policy) {
  exec::BackwardProbeOptions record;
  record.record = true;
  const exec::VjpResult ra =
      exec::RunNodeVjp(node, sa.inputs, sa.incoming, types, ta, false, nullptr, &record);
  const exec::VjpResult rb =
      exec::RunNodeVjp(node, sb.inputs, sb.incoming, types, tb, false, nullptr, &record);
  if (ra.result.error || rb.result.error || ra.computing_nodes < 2 ||
      ra.steps.size() != rb.steps.size()) {
    return "";
  }
  std::map<uint64_t, const exec::BackwardStep*> by_place;
  for (const exec::BackwardStep& s : rb.steps) by_place[s.seq] = &s;
  for (const exec::BackwardStep& s : ra.steps) {
    auto it = by_place.find(s.seq);
    if (it == by_place.end() || it->second->name != s.name) return "";
    for (size_t j = 0; j < s.outputs.size() && j < it->second->outputs.size(); ++j) {
      const at::Tensor &x = s.outputs[j], &y = it->second->outputs[j];
      if (!x.defined() || !y.defined() || x.sizes() != y.sizes()) continue;
      const std::optional<graph::DType> dt = exec::FromScalarType(x.scalar_type());
      if (!dt) continue;
      if (CompareTensors(x, y, *dt, policy.For(node.QualifiedName(), *dt))) {
        return exec::MovesOnly(s.name) ? "" : s.name;
      }
    }
  }
  return "";
}

// The gradients each value receives from its uses on the way back, per side,
// for the engine's sums (InputBuffer::add): the cotangents of the outputs it
// is, and each use's rerun backward output for it (float64 on a float64
// side). A value some use of which was not rerun (its incoming gradients
// differ, an earlier gradient statement reads it) is `unknown`.
struct UseGradients {
  bool tracked = true;  // off where an in-place node aliases values, or a node returns its input
  std::map<std::string, std::vector<at::Tensor>> a, b;
  std::set<std::string> unknown;

  void Add(const std::string& v, const at::Tensor& ga, const at::Tensor& gb) {
    if (!ga.defined() || !gb.defined()) {
      unknown.insert(v);
      return;
    }
    a[v].push_back(ga), b[v].push_back(gb);
  }
  void Unknown(const graph::Node& node) {
    for (const std::string& v : node.Uses()) unknown.insert(v);
  }
  // A VjpResult's gradient for input o, float64 where the side kept it.
  static at::Tensor Of(const exec::VjpResult& r, size_t o) {
    if (o < r.result.exact.size() && r.result.exact[o].defined()) return r.result.exact[o];
    return o < r.result.outputs.size() ? r.result.outputs[o] : at::Tensor();
  }
};

UseGradients StartUses(const graph::Program& program, const exec::RunResult& a,
                       const exec::RunResult& b, int g) {
  UseGradients u;
  for (int k = 0; k < g; ++k) {
    const std::string& op = program.nodes[k].op;
    if (!op.empty() && op.back() == '_') u.tracked = false;
    // One autograd value under two names: the engine sums their uses together.
    const size_t i = static_cast<size_t>(k);
    if ((i < a.nodes.size() && a.nodes[i].returns_input) || (i < b.nodes.size() && b.nodes[i].returns_input)) {
      u.tracked = false;
    }
  }
  graph::GradCallOrError call = graph::ParseGradCall(program.nodes[g]);
  if (!call.call) {
    u.tracked = false;
    return u;
  }
  const std::map<std::string, at::Tensor> ia = NodeInputs(program, g, a), ib = NodeInputs(program, g, b);
  for (size_t i = 0; i < call.call->outputs.size() && i < call.call->cotangents.size(); ++i) {
    auto x = ia.find(call.call->cotangents[i]), y = ib.find(call.call->cotangents[i]);
    u.Add(call.call->outputs[i], x == ia.end() ? at::Tensor() : x->second,
          y == ib.end() ? at::Tensor() : y->second);
  }
  return u;
}

// Where one side is finite and the other not, before any rounding to the
// dtype: a class split.
std::optional<Divergence> RawClassSplit(const at::Tensor& x, const at::Tensor& y) {
  if (x.sizes() != y.sizes() || x.is_complex() || y.is_complex()) return std::nullopt;
  const at::Tensor fx = at::isfinite(x).reshape(-1), fy = at::isfinite(y).reshape(-1);
  const at::Tensor split = fx != fy;
  if (!split.any().item<bool>()) return std::nullopt;
  Divergence d;
  d.cls = DivergenceClass::kClassSplit;
  d.element = split.nonzero().reshape(-1)[0].item<int64_t>();
  d.value_a = graph::FormatFloat(x.reshape(-1)[d.element].to(at::kDouble).item<double>());
  d.value_b = graph::FormatFloat(y.reshape(-1)[d.element].to(at::kDouble).item<double>());
  return d;
}

// Where the gradients of `values` (a node's results, or the program inputs
// differentiated against) differ though every use of one agreed when rerun:
// the engine's sum of those uses' gradients parts the sides. Returns that
// value's index, or -1.
int AccumulationRoot(const std::vector<std::string>& values, const std::string& op,
                     const ops::TypeEnv& types, const exec::NodeResult& ga,
                     const exec::NodeResult& gb, const UseGradients& uses, const Policy& policy,
                     Divergence* diff_out, at::Tensor* sum_a, at::Tensor* sum_b) {
  if (!uses.tracked) return -1;
  // Each side's sum as its run held it: float64 on a float64 side.
  auto raw = [](const exec::NodeResult& n, const std::string& v) {
    if (auto it = n.value_grads_exact.find(v); it != n.value_grads_exact.end()) return it->second;
    auto it = n.value_grads.find(v);
    return it == n.value_grads.end() ? at::Tensor() : it->second;
  };
  auto rounded = [](const exec::NodeResult& n, const std::string& v) {
    auto it = n.value_grads.find(v);
    return it == n.value_grads.end() ? at::Tensor() : it->second;
  };
  for (size_t j = 0; j < values.size(); ++j) {
    const std::string& r = values[j];
    const at::Tensor x = raw(ga, r), y = raw(gb, r);
    const at::Tensor xr = rounded(ga, r), yr = rounded(gb, r);
    if (!xr.defined() || !yr.defined() || uses.unknown.count(r)) continue;
    auto ca = uses.a.find(r), cb = uses.b.find(r);
    if (ca == uses.a.end() || cb == uses.b.end() || ca->second.size() < 2 ||
        ca->second.size() != cb->second.size()) {
      continue;
    }
    const graph::DType dt = DTypeOf(types, r);
    const Tolerance tol = policy.For(op, dt);
    std::optional<Divergence> diff = CompareTensors(xr, yr, dt, tol);
    // A float64 side's sum past the dtype's range compares equal to the
    // other side's inf, but is carried on finite (a later 1/6 brings it back).
    if (!diff) diff = RawClassSplit(x, y);
    if (!diff) continue;
    bool agree = true;
    for (size_t i = 0; i < ca->second.size() && agree; ++i) {
      const at::Tensor &p = ca->second[i], &q = cb->second[i];
      agree = p.sizes() == q.sizes() && p.sizes() == xr.sizes() &&
              !CompareTensors(exec::ToDTypeKeepingNaNs(p, exec::ToScalarType(dt)),
                              exec::ToDTypeKeepingNaNs(q, exec::ToScalarType(dt)), dt, tol);
    }
    if (!agree) continue;
    *diff_out = *diff;
    *sum_a = x, *sum_b = y;
    return static_cast<int>(j);
  }
  return -1;
}


// |x - r| in units of the tolerance, per element (flat, float64; 0 where not
// finite): how far a side is off a reference, to find its worst element.
// A float64 target: its inputs upcast, its recorded results rounded back.
bool Upcasts(Target t) { return t == Target::kCpuF64 || t == Target::kCudaF64; }

at::Tensor OffInTolerances(const at::Tensor& x, const at::Tensor& r, const Tolerance& tol) {
  const at::Tensor xd = x.to(at::kDouble).reshape(-1), rd = r.to(at::kDouble).reshape(-1);
  const at::Tensor ratio = (xd - rd).abs() / (rd.abs() * tol.rtol + tol.atol);
  return at::where(at::isfinite(ratio), ratio, at::zeros_like(ratio));
}

}  // namespace

std::optional<int> NearbyMiss(const graph::Node& node, const std::map<std::string, at::Tensor>& inputs,
                              const std::vector<at::Tensor>& incoming, bool create_graph,
                              exec::Target target, const ops::TypeEnv& types, size_t out,
                              long long element, graph::DType dt, const Policy& policy,
                              const std::string& op) {
  for (int k : {1, -1, 2, -2, 4, -4}) {
    std::map<std::string, at::Tensor> moved = inputs;
    for (auto& [name, t] : moved) {
      if (!t.defined() || !at::isFloatingType(t.scalar_type())) continue;
      const at::Tensor to = at::full_like(t, k > 0 ? INFINITY : -INFINITY);
      for (int i = 0; i < std::abs(k); ++i) t = at::nextafter(t, to);
    }
    const exec::VjpResult mine = exec::RunNodeVjp(node, moved, incoming, types, target, false,
                                                  nullptr, nullptr, create_graph);
    const exec::VjpResult ref = exec::RunNodeVjp(node, moved, incoming, types, Target::kCpuF64,
                                                 false, nullptr, nullptr, create_graph);
    if (mine.result.error || ref.result.error || out >= mine.result.outputs.size() ||
        out >= ref.result.outputs.size()) {
      return std::nullopt;
    }
    const at::Tensor x = mine.result.outputs[out], r = ref.result.outputs[out];
    if (x.is_complex() || x.sizes() != r.sizes() || element >= x.numel()) return std::nullopt;
    const at::Tensor xe = x.reshape(-1)[element], re = r.reshape(-1)[element];
    if (!at::isfinite(xe).item<bool>() || !at::isfinite(re).item<bool>()) continue;
    if (!WithinTolerance(xe, re, dt, policy, op)) return k;
  }
  return std::nullopt;
}

bool AtGradient(const graph::Program& program, const Divergence& d) {
  return d.node_index >= 0 && static_cast<size_t>(d.node_index) < program.nodes.size() &&
         graph::IsGradNode(program.nodes[d.node_index]);
}

// The gradient rules of oracles/rules.def, in its order: the first that
// explains the divergence in `c`.
std::optional<RuleMatch> FirstGradientRule(const rules::GradientContext& c, const Policy& policy) {
  std::optional<RuleMatch> m;
  // A rule that cannot be evaluated (libtorch rejects its witness) does not
  // apply, and the later rules are still asked: session 39's masked GQA
  // attention bucket stayed a bug because an earlier rule threw.
  auto ask = [&](std::optional<RuleMatch> (*rule)(const rules::GradientContext&)) {
    try {
      m = rule(c);
    } catch (const std::exception&) {
    }
  };
#define DIVFUZZ_RULE(name, meaning)
#define DIVFUZZ_GRADIENT_RULE(name, meaning)                                         \
  if (!m && policy.rules.name &&                                                     \
      (!c.accumulation || std::string_view(#name) == "gradient_accumulation_overflow")) \
    ask(&rules::name);
#include "oracles/rules.def"
  return m;
}

std::optional<bool> MissesOpmathBackward(const graph::Node& node, const ops::TypeEnv& types,
                                         const std::map<std::string, at::Tensor>& inputs,
                                         const std::vector<at::Tensor>& incoming,
                                         const at::Tensor& judged, size_t out, graph::DType dt,
                                         const Policy& policy, const std::string& opname) {
  // The input gradient only: CUDA's grid gradient keeps gix, giy, giz in
  // scalar_t (2-d and 3-d kernels alike), so the float32 backward rounded is
  // no witness there (session 52's 3b30062b, CUDA 3.7% off in bf16 within
  // the summation of its terms, judged expected); gradient_interpolation_
  // weights bounds it.
  if (out != 0) return std::nullopt;
  std::map<std::string, at::Tensor> in;
  for (const auto& [name, t] : inputs) {
    in[name] = t.defined() && t.is_floating_point() ? t.cpu().to(at::kFloat) : t;
  }
  std::vector<at::Tensor> v;
  for (const at::Tensor& t : incoming) {
    v.push_back(t.defined() && t.is_floating_point() ? t.cpu().to(at::kFloat) : t);
  }
  const exec::VjpResult r = exec::RunNodeVjp(node, in, v, types, exec::Target::kCpu);
  if (r.result.error || out >= r.result.outputs.size() || !judged.defined() ||
      !r.result.outputs[out].defined() || r.result.outputs[out].sizes() != judged.sizes()) {
    return std::nullopt;
  }
  const at::Tensor ref = exec::ToDTypeKeepingNaNs(r.result.outputs[out], judged.scalar_type());
  return CompareTensors(judged.cpu(), ref, dt, policy.For(opname, dt)).has_value();
}

bool ShowWhereTheBlamedSideAloneMisses(Divergence& d, bool a_blamed, const at::Tensor& mine_a,
                                       const at::Tensor& mine_b, const at::Tensor& ref_a,
                                       const at::Tensor& ref_b, const at::Tensor& differing,
                                       const Tolerance& tol, graph::DType dt) {
  if (d.cls != DivergenceClass::kTolerance || d.component >= 0) return false;
  for (const at::Tensor* t : {&mine_a, &mine_b, &ref_a, &ref_b}) {
    if (!t->defined() || t->is_complex() || t->numel() != mine_a.numel()) return false;
  }
  auto ratio = [&](const at::Tensor& mine, const at::Tensor& ref) {
    return OffInTolerances(mine, exec::ToDTypeKeepingNaNs(ref, mine.scalar_type()), tol);
  };
  const at::Tensor blamed = a_blamed ? ratio(mine_a, ref_a) : ratio(mine_b, ref_b);
  const at::Tensor other = a_blamed ? ratio(mine_b, ref_b) : ratio(mine_a, ref_a);
  at::Tensor alone = blamed.gt(1).logical_and(other.le(1));
  if (differing.defined() && differing.numel() == alone.numel()) {
    alone = alone.logical_and(differing.reshape(-1));
  }
  if (!alone.any().item<bool>()) return false;
  const int64_t k = at::where(alone, blamed, at::full_like(blamed, -1)).argmax().item<int64_t>();
  if (k == d.element) return false;
  auto at_k = [k](const at::Tensor& t) { return t.reshape(-1)[k].to(at::kDouble).item<double>(); };
  d.element = k;
  d.value_a = graph::FormatFloat(at_k(mine_a));
  d.value_b = graph::FormatFloat(at_k(mine_b));
  d.abs_error = std::fabs(at_k(mine_a) - at_k(mine_b));
  d.reference_a = absl::StrCat(at_k(ref_a));
  d.reference_b = absl::StrCat(at_k(ref_b));
  ErrorAgainst(at_k(mine_a), at_k(ref_a), dt, &d.ulp_a, &d.rel_a);
  ErrorAgainst(at_k(mine_b), at_k(ref_b), dt, &d.ulp_b, &d.rel_b);
  return true;
}

// Whether a rule explains one side's distance from its own float64 backward
// (as a pair: the side against the witness rounded to the dtype). A side so
// explained is not the wrong one: session 33's batch_norm f16 class split,
// where the CPU's finite values were within its saved statistics' rounding
// of the exact gradient and CUDA's -inf was the bug, had been blamed on both.
bool SideExcused(const rules::GradientContext& c, const rules::GradientSide& s,
                 const Policy& policy, const at::Tensor& exact) {
  if (!s.witness.defined() || !s.outgoing.defined()) return false;
  const Tolerance tol = policy.For(c.node.QualifiedName(), c.dtype);
  // Where the exact gradient is known and the float64 backward misses it,
  // that backward shares the fault or is the side's own kernel (a float64
  // program's): no rule built on it excuses the side, only being within
  // tolerance of the exact gradient does. Session 49's 8c799968, an f64
  // logcumsumexp whose CPU was 1.1% off the exact 4, was excused by its own
  // kernel and CUDA alone blamed.
  if (exact.defined() && exact.sizes() == s.witness.sizes() && !s.witness.is_complex() &&
      !s.outgoing.is_complex()) {
    const at::Tensor known = at::isfinite(exact).reshape(-1);
    if (known.any().item<bool>()) {
      auto on_known = [&](const at::Tensor& t) { return t.reshape(-1).masked_select(known); };
      const at::Tensor e = on_known(exact.to(at::kDouble));
      // Judged by the dtype's tolerance, the witness too: a float64 backward
      // closer to the exact gradient than that is as good as exact here.
      auto off = [&](const at::Tensor& t, graph::DType dt) {
        const at::Tensor mine = on_known(t);
        return CompareTensors(mine, exec::ToDTypeKeepingNaNs(e, mine.scalar_type()), dt, tol)
            .has_value();
      };
      if (off(s.witness.to(at::kDouble), c.dtype)) return !off(s.outgoing, c.dtype);
    }
  }
  const at::Tensor rounded = exec::ToDTypeKeepingNaNs(s.witness, s.outgoing.scalar_type());
  std::optional<Divergence> diff = CompareTensors(s.outgoing, rounded, c.dtype, tol);
  if (!diff) return true;
  Divergence d = c.d;
  d.cls = diff->cls;
  d.element = diff->element;
  // Judged where the side is furthest off, in units of the tolerance, not
  // at the first element off: session 44's logcumsumexp f32 (af2c70f2) had
  // CUDA excused at element 4, 45 ulps within the formula's rounding, and
  // blamed the CPU alone, where at element 9 CUDA gave 0 for an exact 1.9.
  if (d.cls == DivergenceClass::kTolerance && !s.outgoing.is_complex()) {
    const at::Tensor ratio =
        OffInTolerances(s.outgoing, rounded, policy.For(c.node.QualifiedName(), c.dtype));
    if (ratio.numel() > 0 && ratio.max().item<double>() > 1) {
      d.element = ratio.argmax().item<int64_t>();
    }
  }
  rules::GradientSide w{s.inputs, s.incoming, rounded, s.witness, s.results};
  rules::GradientContext one{c.node, c.types, policy, d, c.out, c.wrt, c.dtype, c.pointwise,
                             s, w, c.hints};
  one.tf32 = c.tf32;
  return FirstGradientRule(one, policy).has_value();
}

namespace {

// The engine's sum of one value's gradients, where the sides part.
struct Accumulated {
  std::string value;     // "" when no sum is the root
  at::Tensor a, b;       // each side's sum (float64 on a float64 side)
  Divergence diff;       // the two sums compared
};

// Judges the engine's sum at `acc`: each side's sum against the float64 sum
// of its own contributions, then gradient_accumulation_overflow.
void JudgeAccumulation(const graph::Program& program, const ops::TypeEnv& types,
                       const exec::RunResult& a, const exec::RunResult& b, const Policy& policy,
                       const UseGradients& uses, int producer, const Accumulated& acc,
                       Divergence& d) {
  const std::vector<at::Tensor>& ca = uses.a.at(acc.value);
  const std::vector<at::Tensor>& cb = uses.b.at(acc.value);
  const graph::DType dt = DTypeOf(types, acc.value);
  graph::Node input_node;  // a program input's sum belongs to no forward node
  input_node.op = graph::kGradOp;
  const graph::Node& node = producer >= 0 ? program.nodes[producer] : input_node;
  d.cls = acc.diff.cls;
  d.element = acc.diff.element;
  d.component = acc.diff.component;
  d.value_a = acc.diff.value_a;
  d.value_b = acc.diff.value_b;
  d.abs_error = acc.diff.abs_error;
  d.allowed = acc.diff.allowed;
  d.dtype = std::string(graph::DTypeName(dt));
  d.backward_of = producer;
  d.forward_op = producer >= 0 ? node.QualifiedName() : "";
  // PyTorch's name for the sum: torch/csrc/autograd/input_buffer.cpp.
  d.op = "InputBuffer::add";
  auto sum = [](const std::vector<at::Tensor>& c) {
    at::Tensor s = at::zeros(c[0].sizes(), at::kDouble);
    for (const at::Tensor& t : c) s = s + t.to(at::kDouble);
    return s;
  };
  const at::Tensor sa = sum(ca), sb = sum(cb);
  d.witness = "float64-sum";
  d.reference_a = At(sa, d.element, d.component);
  d.reference_b = At(sb, d.element, d.component);
  d.detail = absl::StrCat("the autograd engine's sum of the ", ca.size(), " gradients of %",
                          acc.value, " (one per use", producer >= 0 ? absl::StrCat(
                          "; node ", producer, ", ", node.QualifiedName(), ", made it") : "",
                          ") gives ", d.value_a, " on ", exec::TargetName(a.target), " and ",
                          d.value_b, " on ", exec::TargetName(b.target),
                          ", though each use's gradient agrees between the sides");
  // Each side's sum against its contributions' float64 sum rounded to the
  // dtype: 0 agrees (within the tolerance or the summation bound
  // n·eps·sum|terms|), 1 off by more, 2 inf or NaN from finite terms whose
  // sum fits: only that blames a side. A float64
  // side's contributions are reruns from its rounded incoming gradients, not
  // the terms its run summed, so they never blame it.
  auto off = [&](const at::Tensor& mine, const std::vector<at::Tensor>& c, const at::Tensor& s,
                 Target t) {
    if (Upcasts(t)) return 0;
    const c10::ScalarType st = exec::ToScalarType(dt);
    const at::Tensor m = exec::ToDTypeKeepingNaNs(mine, st).to(at::kDouble);
    const at::Tensor r = exec::ToDTypeKeepingNaNs(s, st).to(at::kDouble);
    if ((at::isfinite(m) != at::isfinite(r)).any().item<bool>()) {
      // Only inf or NaN from finite terms whose sum fits is the engine's own:
      // a non-finite term is the rerun's, which may not be the run's (a NaN
      // input's gradient depends on the kernel's vector lanes, and reruns
      // read contiguous copies: hardswish's channels_last backward passed
      // the gradient through at a NaN where the rerun gave NaN).
      at::Tensor terms_finite = at::ones_like(m, at::kBool);
      for (const at::Tensor& x : c) terms_finite &= at::isfinite(x.to(at::kDouble));
      return (~at::isfinite(m) & at::isfinite(r) & terms_finite).any().item<bool>() ? 2 : 1;
    }
    if (!CompareTensors(m.to(st), r.to(st), dt, policy.For(node.QualifiedName(), dt))) return 0;
    at::Tensor terms = at::zeros_like(s);
    for (const at::Tensor& x : c) terms = terms + x.to(at::kDouble).abs();
    const at::Tensor within =
        (m - s).abs() <= static_cast<double>(c.size()) * graph::Epsilon(dt) * terms;
    return (within | (m == s) | at::isnan(m)).all().item<bool>() ? 0 : 1;
  };
  const int oa = off(acc.a, ca, sa, a.target), ob = off(acc.b, cb, sb, b.target);
  rules::GradientContext c{node, types, policy, d, 0, acc.value, dt, true,
                           {{}, {}, acc.a, sa, {}, ca}, {{}, {}, acc.b, sb, {}, cb}, 0};
  c.accumulation = true;
  d.reason = absl::StrCat("float64 sum of each side's own contributions: ", d.reference_a, " (",
                          exec::TargetName(a.target), "), ", d.reference_b, " (",
                          exec::TargetName(b.target), ")");
  if (std::optional<RuleMatch> m = FirstGradientRule(c, policy)) {
    d.tier = "expected";
    d.wrong_side = "undecided";
    d.expected_rule = m->rule;
    d.reason = m->reason + "; " + d.reason;
    return;
  }
  if ((oa == 2) != (ob == 2)) {
    d.wrong_side = std::string(exec::TargetName(oa == 2 ? a.target : b.target));
    d.tier = "bug";
    return;
  }
  if (oa == 0 && ob == 0 && policy.rules.inherited_difference) {
    d.tier = "expected";
    d.expected_rule = "inherited_difference";
    d.reason = absl::StrCat("each side's sum is its own contributions' sum (which differ within "
                            "tolerance between the sides); ", d.reason);
    return;
  }
  // A sum off its terms by more than rounding on a side, or on both: a use
  // the walk does not see, or a rerun that differs from the run.
  d.tier = "divergence";
  d.wrong_side = "undecided";
  absl::StrAppend(&d.reason, "; a side's sum is not its contributions' (a use the walk does not "
                             "see, or a kernel that varies between runs): not judged");
}

// PyTorch's dispatch message, `"i1_backward" not implemented for 'BFloat16'`:
// the kernel and the dtype it was asked to run in.
std::optional<std::pair<std::string, graph::DType>> NotImplementedKernel(const std::string& m) {
  static const std::regex kMessage("\"([A-Za-z0-9_:.]+)\" not implemented for '([A-Za-z0-9]+)'");
  std::smatch match;
  if (!std::regex_search(m, match, kMessage)) return std::nullopt;
  for (c10::ScalarType st : {at::kHalf, at::kBFloat16, at::kFloat, at::kDouble, at::kComplexFloat,
                             at::kComplexDouble, at::kLong, at::kInt, at::kShort, at::kChar,
                             at::kByte, at::kBool}) {
    if (match[2].str() == c10::toString(st)) {
      if (std::optional<graph::DType> dt = exec::FromScalarType(st)) {
        return std::make_pair(match[1].str(), *dt);
      }
    }
  }
  return std::nullopt;
}

}  // namespace

// An error split in the backward of linear algebra or an FFT
// (ops::NonFiniteMayFailAnyway) whose raising side read inf or NaN (forward
// inputs or incoming gradients): the notes' "provide no guarantees on their
// behaviour when the inputs have non-finite values like inf or NaN", the
// forward's nonfinite_inputs for the backward (session 40's G6: slogdet's
// backward solves with an inf matrix, where LAPACK's LU gives NaN and
// cuSOLVER raises "singular").
std::optional<std::string> NonFiniteIntoLinalgBackward(
    const graph::Node& node, const std::map<std::string, at::Tensor>& inputs,
    const std::vector<at::Tensor>& incoming, const Policy& policy) {
  if (!policy.rules.nonfinite_inputs) return std::nullopt;
  const graph::Node* inner = exec::VjpInner(node);
  const ops::OpSpec* spec = ops::FindOp((inner != nullptr ? *inner : node).QualifiedName());
  if (spec == nullptr || !ops::NonFiniteMayFailAnyway(*spec)) {
    return std::nullopt;
  }
  auto nonfinite = [](const at::Tensor& t) {
    if (!t.defined() || !(t.is_floating_point() || t.is_complex()) || t.numel() == 0) return false;
    return !at::isfinite(t).all().item<bool>();
  };
  bool any = false;
  for (const auto& [name, t] : inputs) any = any || nonfinite(t);
  for (const at::Tensor& t : incoming) any = any || nonfinite(t);
  if (!any) return std::nullopt;
  return absl::StrCat("the backward of ", spec->name, " reads inf or NaN: PyTorch's "
                      "numerical-accuracy notes: the backends of linear algebra (and FFTs) "
                      "\"provide no guarantees on their behaviour when the inputs have "
                      "non-finite values like inf or NaN. As such, neither does PyTorch.\"");
}

namespace {

// A CUDA runtime error on one side ("CUDA error: invalid argument": session
// 40's group_norm backward of an empty input launches a kernel with no
// blocks) where the float64 backward from that side's own inputs runs and
// the other side agrees with it: the erring side is wrong, as a crash on
// valid input is. So is a backward kernel's own view() that refuses the
// layout it was handed (session 47's CUDA ChannelShuffleBackward0: the math
// path views a transposed gradient, the CPU's kernel takes it; the docs ask
// no contiguity), or a kernel that refuses a memory format, where the same
// side runs once the gradients and inputs are made contiguous. Errors that
// validate arguments (which may differ by device and build), singular solves
// and out-of-memory stay undecided.
constexpr char kViewOfLayout[] = "view size is not compatible with input tensor's size and stride";

std::optional<std::string> RuntimeErrorOnValidInput(
    const graph::Node& node, const ops::TypeEnv& types,
    const std::map<std::string, at::Tensor>& bad_inputs, const std::vector<at::Tensor>& incoming,
    bool create_graph, const exec::VjpResult& bad, const exec::VjpResult& good, Target bad_target,
    Target good_target, const Policy& policy) {
  if (!bad.result.error || good.result.error) return std::nullopt;
  const exec::NodeError& e = *bad.result.error;
  // The forward's JudgeLayoutRefusal (oracles/attribution.cc) reads the same
  // messages: session 49's CPU MaxPool3DWithIndicesBackward0 on a 4-d
  // channels_last gradient ("Unsupported memory format"), judged real.
  const bool layout = absl::StrContains(e.message, kViewOfLayout) ||
                      absl::StrContains(e.message, "memory format") ||
                      absl::StrContains(e.message, "contiguous");
  if (e.kind != exec::NodeError::Kind::kRaised ||
      !(absl::StrContains(e.message, "CUDA error:") || layout) ||
      absl::StrContains(e.message, "out of memory")) {
    return std::nullopt;
  }
  std::map<std::string, at::Tensor> dense;
  std::vector<at::Tensor> dense_in;
  if (layout) {
    for (const auto& [name, t] : bad_inputs) dense[name] = t.defined() ? t.contiguous() : t;
    for (const at::Tensor& t : incoming) dense_in.push_back(t.defined() ? t.contiguous() : t);
    const exec::VjpResult again = exec::RunNodeVjp(node, dense, dense_in, types, bad_target,
                                                   false, nullptr, nullptr, create_graph);
    if (again.result.error) return std::nullopt;
  }
  // A layout refusal's float64 backward runs on the contiguous copies: the
  // CPU's float64 kernel refuses the layout as its float32 one does (session
  // 49's MaxPool3DWithIndicesBackward0 stayed undecided on the H200).
  const exec::VjpResult ref = exec::RunNodeVjp(node, layout ? dense : bad_inputs,
                                               layout ? dense_in : incoming, types,
                                               Target::kCpuF64, false, nullptr, nullptr,
                                               create_graph);
  if (ref.result.error || ref.result.outputs.size() != good.result.outputs.size()) {
    return std::nullopt;
  }
  for (size_t o = 0; o < ref.result.outputs.size(); ++o) {
    const graph::DType dt = o < good.wrt.size() ? DTypeOf(types, good.wrt[o]) : graph::DType::kF64;
    if (CompareTensors(good.result.outputs[o], ref.result.outputs[o], dt,
                       policy.For(node.QualifiedName(), dt))) {
      return std::nullopt;
    }
  }
  const std::string grad_fn = !good.grad_fn.empty() ? good.grad_fn : bad.grad_fn;
  return absl::StrCat(grad_fn.empty() ? node.QualifiedName() : grad_fn,
                      layout ? " refuses the layout of its inputs on " : " raises a CUDA runtime "
                      "error on ", exec::TargetName(bad_target), " (", e.message.substr(0, 120),
                      layout ? "; it runs on the same inputs made contiguous" : "",
                      ") where the float64 backward from its own inputs runs and ",
                      exec::TargetName(good_target), " agrees with it");
}

// Why a backward that raised on one side only refused the mixed dtypes its
// forward took and promoted (mse_loss(f16, f32) is f32; its backward checks
// "Found dtype Float but expected Half"): "" where its message is no dtype
// check or its inputs and incoming gradients hold one floating dtype. The
// other side ran it (the float64 side's inputs are all one dtype). Session
// 48's judge: MseLossBackward0, HuberLossBackward0, AddrBackward0 real
// (pytorch#94086, #76646, #76785, open): what the forward takes, its
// backward must take.
std::string MixedDtypeRefusal(const std::map<std::string, at::Tensor>& bad_inputs,
                              const std::vector<at::Tensor>& incoming, const exec::VjpResult& bad) {
  if (!bad.result.error) return "";
  const std::string& m = bad.result.error->message;
  const bool dtype_check = absl::StrContains(m, "but expected") ||
                           absl::StrContains(m, "expected scalar type") ||
                           absl::StrContains(m, "same dtype");
  if (!dtype_check) return "";
  std::set<std::string> dtypes;
  auto note = [&](const at::Tensor& t) {
    if (t.defined() && (at::isFloatingType(t.scalar_type()) || t.is_complex())) {
      dtypes.insert(std::string(c10::toString(t.scalar_type())));
    }
  };
  for (const auto& [name, t] : bad_inputs) note(t);
  for (const at::Tensor& t : incoming) note(t);
  if (dtypes.size() < 2) return "";
  return absl::StrJoin(dtypes, ", ");
}

// A backward kernel that raised on one side only (`bad`, rerun from
// `bad_inputs` and `incoming`), judged into `d`: expected where linear
// algebra read inf or NaN, a bug on the raising side for a CUDA runtime
// error the float64 backward does not share, or for a dtype check that
// refuses the mixed dtypes its forward took; else left as it is.
void JudgeBackwardErrorSplit(const graph::Node& node, const ops::TypeEnv& types,
                             const std::map<std::string, at::Tensor>& bad_inputs,
                             const std::vector<at::Tensor>& incoming, bool create_graph,
                             const exec::VjpResult& bad, const exec::VjpResult& good,
                             Target bad_target, Target good_target, const Policy& policy,
                             Divergence& d) {
  if (std::optional<std::string> why =
          NonFiniteIntoLinalgBackward(node, bad_inputs, incoming, policy)) {
    d.tier = "expected";
    d.expected_rule = "nonfinite_inputs";
    d.reason = *why + "; " + d.reason;
  } else if (std::optional<std::string> why =
                 RuntimeErrorOnValidInput(node, types, bad_inputs, incoming, create_graph, bad,
                                          good, bad_target, good_target, policy)) {
    d.tier = "bug";
    d.wrong_side = std::string(exec::TargetName(bad_target));
    d.reason = *why;
  } else if (const std::string mixed = MixedDtypeRefusal(bad_inputs, incoming, bad);
             !mixed.empty()) {
    d.tier = "bug";
    d.wrong_side = std::string(exec::TargetName(bad_target));
    d.reason = absl::StrCat(bad.grad_fn.empty() ? node.QualifiedName() : bad.grad_fn,
                            " refuses on ", exec::TargetName(bad_target), " the dtypes (", mixed,
                            ") its forward took and promoted (",
                            bad.result.error->message.substr(0, 120), "), where ",
                            exec::TargetName(good_target),
                            " ran it: a backward must take what its forward takes "
                            "(pytorch#94086, #76646, #76785 for mse_loss, huber_loss, addr)");
  }
}

// One side's gradient statement raised, so it captured no gradients: the
// first forward node on the path, in backward order, whose backward raises
// on that side only when each side reruns it from its own forward inputs and
// the other side's incoming gradients, names the finding (its kernel, and
// the dtype that kernel ran in, not the statement's first output's).
void LocateRaisingKernel(const graph::Program& program, const ops::TypeEnv& types,
                         const exec::RunResult& a, const exec::RunResult& b, int g, bool later,
                         const Policy& policy, Divergence& d) {
  const exec::NodeResult& ran = a.nodes[g].error ? b.nodes[g] : a.nodes[g];
  for (int k = g - 1; k >= 0; --k) {
    const graph::Node& node = program.nodes[k];
    if (graph::IsGradNode(node)) continue;
    std::vector<at::Tensor> incoming;
    bool any = false;
    for (const std::string& r : node.results) {
      auto it = ran.value_grads.find(r);
      // In the layout the run held it: a kernel may refuse one layout only
      // (CUDA's ChannelShuffleBackward0 views a transposed gradient).
      incoming.push_back(it == ran.value_grads.end()
                             ? at::Tensor()
                             : exec::InRunFormat(ran.value_grad_formats, r, it->second));
      any = any || incoming.back().defined();
    }
    if (!any) continue;
    const exec::VjpResult va = exec::RunNodeVjp(node, RunInputs(program, k, a), incoming, types,
                                                a.target, false, nullptr, nullptr, later);
    const exec::VjpResult vb = exec::RunNodeVjp(node, RunInputs(program, k, b), incoming, types,
                                                b.target, false, nullptr, nullptr, later);
    if (static_cast<bool>(va.result.error) == static_cast<bool>(vb.result.error)) continue;
    const exec::NodeError& e = va.result.error ? *va.result.error : *vb.result.error;
    if (e.kind == exec::NodeError::Kind::kCudaFatal) return;
    const std::string grad_fn = !va.grad_fn.empty() ? va.grad_fn : vb.grad_fn;
    d.cls = e.kind == exec::NodeError::Kind::kNotImplemented ? DivergenceClass::kDtypeGap
                                                              : DivergenceClass::kErrorSplit;
    d.backward_of = k;
    d.forward_op = node.QualifiedName();
    d.op = grad_fn.empty() ? absl::StrCat(node.QualifiedName(), ".backward") : grad_fn;
    for (const std::string& u : node.Uses()) {
      auto it = types.find(u);
      if (it != types.end() && (graph::IsFloating(it->second.dtype) || graph::IsComplex(it->second.dtype))) {
        d.dtype = std::string(graph::DTypeName(it->second.dtype));
        break;
      }
    }
    d.value_a = ErrorOf(va.result);
    d.value_b = ErrorOf(vb.result);
    d.detail = absl::StrCat("backward of node ", k, " (", node.QualifiedName(), "): ", d.op,
                            " raises on ", exec::TargetName(va.result.error ? a.target : b.target),
                            " only, rerun from each side's own inputs: ", e.message.substr(0, 200));
    d.tier = d.cls == DivergenceClass::kDtypeGap ? "dtype_gap" : "divergence";
    d.reason = d.cls == DivergenceClass::kDtypeGap
                   ? absl::StrCat("the derivative of ", node.QualifiedName(),
                                  " is implemented on one device only")
                   : absl::StrCat(d.op, " raised on one side only");
    if (d.cls == DivergenceClass::kErrorSplit) {
      const bool a_errs = static_cast<bool>(va.result.error);
      JudgeBackwardErrorSplit(node, types, RunInputs(program, k, a_errs ? a : b), incoming, later,
                              a_errs ? va : vb, a_errs ? vb : va, a_errs ? a.target : b.target,
                              a_errs ? b.target : a.target, policy, d);
    }
    return;
  }
  // No forward node's backward raises alone (the kernel is inside an
  // earlier statement's backward: i0's second derivative, i1_backward, has
  // no bf16): where PyTorch's message names the kernel and dtype, so does
  // the finding, rather than the statement's first output's dtype (session
  // 36 filed that one gap under f32 and bf16).
  const exec::NodeError& e = a.nodes[g].error ? *a.nodes[g].error : *b.nodes[g].error;
  if (auto named = NotImplementedKernel(e.message)) {
    d.op = named->first;
    d.dtype = std::string(graph::DTypeName(named->second));
    absl::StrAppend(&d.reason, ": ", named->first, " has no ", d.dtype, " kernel there");
  }
}

void TriageGradientUnguarded(const graph::Program& program, const ops::TypeEnv& types,
                             const exec::RunResult& a, const exec::RunResult& b,
                             const Policy& policy, Divergence& d,
                             const exec::WitnessPlan* plan_override) {
  const int g = d.node_index;
  const exec::NodeResult& ga = a.nodes[g];
  const exec::NodeResult& gb = b.nodes[g];
  d.tier = "divergence";
  d.wrong_side = "undecided";
  if (d.cls == DivergenceClass::kDtypeGap) d.tier = "dtype_gap";
  // Every rerun of a forward node's backward below differentiates what the
  // run's backward did: the values on this statement's paths. Not where
  // neither side kept a gradient (both raised), and not a step inside an
  // earlier statement (`inside_step`): its first-order gradients need the
  // inputs that statement differentiated, whatever this one does.
  const bool kept = !ga.value_grads.empty() || !gb.value_grads.empty();
  bool inside_step = false;
  const exec::DifferentiateOnly only([&](const std::string& name) {
    return !kept || inside_step || types.count(name) == 0 || ga.value_grads.count(name) > 0 ||
           gb.value_grads.count(name) > 0;
  });
  // As the executor does: a later gradient statement makes this one's
  // backward differentiable.
  bool later = false;
  for (size_t j = g + 1; j < program.nodes.size(); ++j) {
    later = later || graph::IsGradNode(program.nodes[j]);
  }
  if (ga.error || gb.error) {
    d.reason = "the gradient statement raised on one side only";
    LocateRaisingKernel(program, types, a, b, g, later, policy, d);
    return;
  }
  // Backward order: the forward nodes on the path, last first.
  int root = -1;
  Step sa, sb;
  size_t out = 0;
  UseGradients uses;
  if (!ga.error && !gb.error) uses = StartUses(program, a, b, g);
  bool past_range = false;  // the root's sides agree once rounded (see below)
  // Only the kernels on the diverging gradient's path can part it: the
  // nodes that depend on the input it is taken with respect to. A statement
  // over [%x, %h] whose gradient for %x diverges at sinc's backward was
  // rooted at digamma's on %h's path (session 37's judge).
  const std::set<std::string> reach = graph::PathOfGradient(program, g, d.output_index).values;
  auto on_diverging_path = [&](int k) {
    if (reach.empty()) return true;
    for (const std::string& r : program.nodes[k].results) {
      if (reach.count(r)) return true;
    }
    return false;
  };
  Accumulated acc;  // set where the engine's sum is the root
  // One step of the walk: node k's backward (or, `forward` false, a backward
  // step inside an earlier statement, exec::MakeVjpNode) from each side's own
  // inputs and incoming gradients.
  enum Visit { kNext, kRoot, kStop };
  auto visit = [&](const graph::Node& node, int k, Step xa, Step xb, const ops::TypeEnv& env,
                   bool forward) -> Visit {
    if (!AnyIncoming(xa) && !AnyIncoming(xb)) return kNext;  // not on the path
    inside_step = !forward;
    const bool same = SameIncoming(xa, xb, node, env, policy);
    if (forward) {
      Divergence diff;
      at::Tensor x, y;
      const int j = AccumulationRoot(node.results, node.QualifiedName(), env, ga, gb, uses,
                                     policy, &diff, &x, &y);
      if (j >= 0) {
        root = k;
        acc = Accumulated{node.results[j], x, y, diff};
        return kRoot;
      }
    }
    if (!same) {
      uses.Unknown(node);
      return kNext;
    }
    xa.create_graph = xb.create_graph = later;
    xa.vjp = exec::RunNodeVjp(node, xa.inputs, xa.incoming, env, a.target, false, nullptr,
                              nullptr, later);
    xb.vjp = exec::RunNodeVjp(node, xb.inputs, xb.incoming, env, b.target, false, nullptr,
                              nullptr, later);
    const exec::NodeResult &ra = xa.vjp.result, &rb = xb.vjp.result;
    auto fatal = [](const exec::NodeResult& r) {
      return r.error && r.error->kind == exec::NodeError::Kind::kCudaFatal;
    };
    if (fatal(ra) || fatal(rb)) {
      d.cuda_fault_in_triage = true;
      d.reason = "the CUDA context failed while the backward kernels were rerun to judge this";
      return kStop;
    }
    if (ra.error || rb.error) {
      if (ra.error && rb.error) {
        uses.Unknown(node);
        return kNext;
      }
      root = k;
      d.cls = ((ra.error ? *ra.error : *rb.error).kind == exec::NodeError::Kind::kNotImplemented)
                  ? DivergenceClass::kDtypeGap
                  : DivergenceClass::kErrorSplit;
      d.value_a = ErrorOf(ra);
      d.value_b = ErrorOf(rb);
      sa = std::move(xa), sb = std::move(xb);
      return kRoot;
    }
    for (size_t o = 0; o < ra.outputs.size() && o < rb.outputs.size(); ++o) {
      const graph::DType dt = DTypeOf(env, xa.vjp.wrt[o]);
      if (std::optional<Divergence> diff =
              CompareTensors(ra.outputs[o], rb.outputs[o], dt, policy.For(node.QualifiedName(), dt))) {
        root = k;
        out = o;
        d.cls = diff->cls;
        d.element = diff->element;
        d.component = diff->component;
        d.value_a = diff->value_a;
        d.value_b = diff->value_b;
        d.abs_error = diff->abs_error;
        d.allowed = diff->allowed;
        d.dtype = std::string(graph::DTypeName(dt));
        break;
      }
    }
    // Agreeing once rounded, but one side's inf is the other's float64 value
    // past the dtype's range, which its run carries on (mul(g, g)'s two
    // partials of 36928 sum to 73861 in f16: inf, then back into range
    // downstream on the float64 side only; session 36's 269a22ef, judged
    // expected). This kernel is where the sides part.
    for (size_t o = 0; root < 0 && o < xa.vjp.wrt.size(); ++o) {
      if (std::optional<Divergence> split =
              RawClassSplit(UseGradients::Of(xa.vjp, o), UseGradients::Of(xb.vjp, o))) {
        root = k;
        out = o;
        past_range = true;
        d.cls = DivergenceClass::kClassSplit;
        d.element = split->element;
        d.component = 0;
        d.value_a = split->value_a;
        d.value_b = split->value_b;
        d.dtype = std::string(graph::DTypeName(DTypeOf(env, xa.vjp.wrt[o])));
      }
    }
    if (root >= 0) {
      sa = std::move(xa), sb = std::move(xb);
      return kRoot;
    }
    for (size_t o = 0; o < xa.vjp.wrt.size(); ++o) {
      uses.Add(xa.vjp.wrt[o], UseGradients::Of(xa.vjp, o), UseGradients::Of(xb.vjp, o));
    }
    return kNext;
  };
  // The values of the backward steps inside earlier statements (their
  // first-order gradients, graph::FirstOrderName) typed as their bases.
  ops::TypeEnv step_types = types;
  graph::Node root_node;
  const ops::TypeEnv* root_types = &types;
  for (int k = g - 1; k >= 0 && !ga.error && !gb.error && root < 0; --k) {
    const graph::Node& node = program.nodes[k];
    if (graph::IsGradNode(node)) {
      // An earlier statement on this one's path: its backward's graph reads
      // any value its outputs depend on, and those uses are not rerun, so no
      // sum of a value made before it is known.
      bool on_path = false;
      for (const std::string& r : node.results) on_path = on_path || ga.value_grads.count(r) > 0;
      if (!on_path) continue;
      uses.tracked = false;
      // Its backward steps, in the order this statement differentiates them
      // (the reverse of the earlier one's: first forward node first).
      for (int k2 = 0; k2 < k && root < 0; ++k2) {
        if (graph::IsGradNode(program.nodes[k2]) || !on_diverging_path(k2)) continue;
        std::optional<std::pair<Step, Step>> steps =
            StepsInside(program, a, b, ga, gb, k, k2, &step_types);
        if (!steps) continue;
        const graph::Node pseudo = steps->first.pseudo;
        const Visit v = visit(pseudo, k2, std::move(steps->first), std::move(steps->second),
                              step_types, false);
        if (v == kStop) return;
        if (v == kRoot) root_node = pseudo, root_types = &step_types;
        // The step recomputes node k2's forward, so its gradient includes
        // k2's own first-order backward (SoftmaxBackward0 after
        // SoftmaxBackwardDataBackward0). Where that kernel, from the
        // gradient this statement sent its results (agreeing on both
        // sides), is where the sides part, it is the root: session 43's
        // softmax double backwards had bit-identical outputs at the step's
        // own kernel and were blamed there.
        if (v == kRoot && (d.cls == DivergenceClass::kTolerance ||
                           d.cls == DivergenceClass::kClassSplit)) {
          const int kept_root = root;
          const size_t kept_out = out;
          const bool kept_past = past_range;
          const Divergence kept_d = d;
          Step kept_a = std::move(sa), kept_b = std::move(sb);
          const UseGradients kept_uses = uses;
          root = -1;
          const Visit own = visit(program.nodes[k2], k2, StepOf(program, types, a, ga, k2),
                                  StepOf(program, types, b, gb, k2), types, true);
          if (own == kStop) return;
          if (own == kRoot && acc.value.empty() && d.cls != DivergenceClass::kErrorSplit &&
              d.cls != DivergenceClass::kDtypeGap) {
            root_node = program.nodes[k2], root_types = &types;
          } else {
            root = kept_root, out = kept_out, past_range = kept_past, d = kept_d;
            sa = std::move(kept_a), sb = std::move(kept_b), uses = kept_uses;
            acc = Accumulated{};
          }
        }
      }
      continue;
    }
    if (!on_diverging_path(k)) continue;
    const Visit v = visit(node, k, StepOf(program, types, a, ga, k),
                          StepOf(program, types, b, gb, k), types, true);
    if (v == kStop) return;
    if (v == kRoot) root_node = node;
  }
  // Past the first node: the program inputs' gradients are the engine's sums
  // of their uses too.
  if (root < 0 && !ga.error && !gb.error) {
    if (graph::GradCallOrError call = graph::ParseGradCall(program.nodes[g]); call.call) {
      Divergence diff;
      at::Tensor x, y;
      std::vector<std::string> inputs;
      for (const std::string& x : call.call->wrt) {
        inputs.push_back(reach.empty() || reach.count(x) ? x : "");
      }
      const int j = AccumulationRoot(inputs, graph::kGradOp, types, ga, gb, uses, policy, &diff,
                                     &x, &y);
      if (j >= 0) acc = Accumulated{inputs[j], x, y, diff};
    }
  }
  if (!acc.value.empty()) {
    JudgeAccumulation(program, types, a, b, policy, uses, root, acc, d);
    return;
  }
  if (root < 0) {
    if (d.reason.empty()) {
      d.reason = "the gradients differ, but no single backward kernel does when each is rerun "
                 "from its side's own inputs (accumulation order across uses, or a kernel that "
                 "varies between runs)";
    }
    if (d.cls == DivergenceClass::kDtypeGap) d.tier = "dtype_gap";
    return;
  }
  const graph::Node& node = root_node;
  const ops::TypeEnv& rtypes = *root_types;
  // A step inside an earlier statement: named after its forward node.
  const graph::Node* inside = exec::VjpInner(node);
  inside_step = inside != nullptr;
  std::string grad_fn = !sa.vjp.grad_fn.empty() ? sa.vjp.grad_fn : sb.vjp.grad_fn;
  std::string inner_note;
  if (d.cls != DivergenceClass::kErrorSplit && d.cls != DivergenceClass::kDtypeGap) {
    const std::string inner = InnerKernel(node, sa, sb, rtypes, a.target, b.target, policy);
    if (!inner.empty() && inner != grad_fn) {
      inner_note = absl::StrCat(" (inside its backward, ", inner, " is the first of its kernels "
                                "whose outputs part the sides; ", grad_fn, " ends it)");
      grad_fn = inner;
    }
  }
  const std::string forward_name = inside ? inside->QualifiedName() : node.QualifiedName();
  d.backward_of = root;
  d.forward_op = forward_name;
  d.op = grad_fn.empty() ? absl::StrCat(forward_name, inside ? ".double_backward" : ".backward")
                         : grad_fn;
  const std::string wrt = out < sa.vjp.wrt.size() ? sa.vjp.wrt[out] : "";
  // The devices may record different backward nodes for one op: CUDA's fused
  // rms_norm kernel is FusedRmsNormBackward0 where the CPU's composite ends in
  // ToCopyBackward0 (session 43's judge). The bucket keeps side A's name; the
  // finding names both.
  std::string named = d.op;
  if (inner_note.empty() && !sa.vjp.grad_fn.empty() && !sb.vjp.grad_fn.empty() &&
      sa.vjp.grad_fn != sb.vjp.grad_fn) {
    named = absl::StrCat(sa.vjp.grad_fn, " on ", exec::TargetName(a.target), " (",
                         sb.vjp.grad_fn, " on ", exec::TargetName(b.target), ")");
  }
  // Built again where the report moves to another element.
  auto describe = [&] {
    d.detail = absl::StrCat(inside ? "double backward of node " : "backward of node ", root, " (",
                            forward_name, inside ? ", inside an earlier gradient statement" : "",
                            "): ", named, " gives d/d%", wrt, " ", d.value_a, " on ",
                            exec::TargetName(a.target), " and ", d.value_b, " on ",
                            exec::TargetName(b.target), " from the same incoming gradients",
                            inner_note);
  };
  describe();
  if (d.cls == DivergenceClass::kDtypeGap) {
    d.tier = "dtype_gap";
    d.reason = absl::StrCat("the derivative of ", forward_name, " is implemented on one "
                            "device only");
    return;
  }
  if (d.cls == DivergenceClass::kErrorSplit) {
    d.tier = "divergence";
    d.reason = absl::StrCat(d.op, " raised on one side only");
    const bool a_errs = static_cast<bool>(sa.vjp.result.error);
    const Step& bad = a_errs ? sa : sb;
    JudgeBackwardErrorSplit(node, rtypes, bad.inputs, bad.incoming, bad.create_graph, bad.vjp,
                            (a_errs ? sb : sa).vjp, a_errs ? a.target : b.target,
                            a_errs ? b.target : a.target, policy, d);
    return;
  }

  // Witnesses: the float64 backward of node `root` from each side's own
  // inputs, on the CPU and (with a CUDA side) on the GPU.
  const exec::WitnessPlan plan = plan_override ? *plan_override : exec::PlanFor(a.target, b.target);
  const bool second = plan.second_f64 == Target::kCudaF64 && exec::CudaAvailable();
  const graph::DType dt = DTypeOf(rtypes, wrt);
  // Policy and messages name the forward op; a step inside an earlier
  // statement is "the backward of" it.
  const std::string opname =
      inside ? absl::StrCat("the backward of ", forward_name) : node.QualifiedName();
  struct Judged {
    bool cpu_says_wrong = false, cuda_says_wrong = false, have_cuda = false, ok = false;
    at::Tensor ref;
    at::Tensor cuda_ref;  // the GPU's float64 backward, where it ran
  };
  // Blame rests on the elements where the two sides differ only, as at a
  // forward node (oracles::DifferingElements).
  at::Tensor differing = DifferingElements(sa.vjp.result.outputs[out],
                                           sb.vjp.result.outputs[out], dt, policy.For(opname, dt));
  // A class split is judged where the classes differ (inf against a finite
  // value): a side that is finite and right there is not blamed for rounding
  // at elements where both are finite (run D's batch_norm f16: CUDA's -inf
  // is the bug, the CPU's values are within f16 rounding).
  if (d.cls == DivergenceClass::kClassSplit) {
    auto classes = [](at::Tensor t) {
      if (t.is_complex()) t = at::view_as_real(t.contiguous());
      t = t.reshape(-1).to(at::kDouble);
      return at::where(at::isnan(t), 3, at::where(at::isposinf(t), 1, at::where(at::isneginf(t), 2, 0)));
    };
    const at::Tensor ca = classes(sa.vjp.result.outputs[out]);
    const at::Tensor cb = classes(sb.vjp.result.outputs[out]);
    if (ca.sizes() == cb.sizes() && ca.ne(cb).any().item<bool>()) differing = ca.ne(cb);
  }
  auto on_differing = [&](const at::Tensor& t) {
    if (!differing.defined()) return t;
    at::Tensor flat = t.is_complex() ? at::view_as_real(t.contiguous()).reshape(-1) : t.reshape(-1);
    return flat.numel() == differing.numel() ? flat.masked_select(differing) : flat;
  };
  auto judge = [&](const Step& s) {
    Judged j;
    exec::VjpResult wc = WitnessOf(node, s, rtypes, Target::kCpuF64);
    if (wc.result.error || out >= wc.result.outputs.size()) return j;
    j.ok = true;
    j.ref = wc.result.exact[out];
    const at::Tensor mine = on_differing(s.vjp.result.outputs[out]);
    j.cpu_says_wrong =
        !WithinTolerance(mine, on_differing(wc.result.outputs[out]), dt, policy, opname);
    if (second) {
      exec::VjpResult wg = WitnessOf(node, s, rtypes, Target::kCudaF64);
      if (!wg.result.error && out < wg.result.outputs.size()) {
        j.have_cuda = true;
        if (out < wg.result.exact.size()) j.cuda_ref = wg.result.exact[out];
        j.cuda_says_wrong =
            !WithinTolerance(mine, on_differing(wg.result.outputs[out]), dt, policy, opname);
      }
    }
    return j;
  };
  const Judged ja = judge(sa), jb = judge(sb);
  if (!ja.ok || !jb.ok) {
    d.reason = "the float64 backward raised: no witness";
    return;
  }
  d.reference_a = At(ja.ref, d.element, d.component);
  d.reference_b = At(jb.ref, d.element, d.component);
  // A float64 witness running the blamed side's own backward algorithm never
  // vetoes the independent one: the CPU's float64 backward judges CUDA, the
  // GPU's judges the CPU; without a GPU, the CPU's float64 backward judges.
  auto wrong = [&](const Judged& j, Target t) {
    const bool on_cuda = t == Target::kCuda || t == Target::kCudaF64;
    if (on_cuda || !j.have_cuda) return j.cpu_says_wrong;
    return j.cuda_says_wrong;
  };
  // A float64 gradient is its own float64 witness: each device's float64
  // backward is that side's kernel, so it can only restate the divergence.
  bool self_witness = dt == graph::DType::kF64 || dt == graph::DType::kC128;
  bool wa = !self_witness && wrong(ja, a.target), wb = !self_witness && wrong(jb, b.target);
  d.witness = second ? "cpu-f64+cuda-f64" : "cpu-f64";
  // The exact derivative, where MPFR models the op, decides over both float64
  // backwards (which may share a side's formula, or be that side's kernel).
  // From the result each side's forward saved, where the backward reads it
  // (a float64 side's recorded results are rounded to the dtype: not those).
  auto saved = [&](const exec::RunResult& r) {
    return inside || Upcasts(r.target) ? std::vector<at::Tensor>{} : SavedResults(r, root, node);
  };
  const at::Tensor ea = ExactGradient(node, sa, wrt, rtypes, differing, saved(a));
  const at::Tensor eb = ExactGradient(node, sb, wrt, rtypes, differing, saved(b));
  // The exact derivative overruled the float64 backwards: they share a fault
  // and cannot judge a side beside its run's inputs either.
  bool f64_set_aside = false;
  std::string exact_note;
  if (ea.defined() && eb.defined() && !sa.vjp.result.outputs[out].is_complex()) {
    // Judged on the differing elements whose derivative is known on both sides.
    at::Tensor known = at::isfinite(ea).logical_and(at::isfinite(eb)).reshape(-1);
    if (differing.defined() && differing.numel() == known.numel()) known &= differing;
    if (known.any().item<bool>()) {
      auto off = [&](const Step& s, const at::Tensor& e) {
        const at::Tensor mine = s.vjp.result.outputs[out].reshape(-1).masked_select(known);
        const at::Tensor ref = exec::ToDTypeKeepingNaNs(e.reshape(-1).masked_select(known),
                                                        mine.scalar_type());
        return !WithinTolerance(mine, ref, dt, policy, opname);
      };
      const bool xa = off(sa, ea), xb = off(sb, eb);
      if (!self_witness && (xa != wa || xb != wb)) {
        f64_set_aside = true;
        absl::StrAppend(&exact_note, "; the float64 backwards were set aside: the exact "
                                     "derivative disagrees with their verdict");
      }
      wa = xa, wb = xb;
      self_witness = false;
      d.witness = "exact-derivative";
      d.reference_a = At(ea, d.element, d.component);
      d.reference_b = At(eb, d.element, d.component);
    }
  }
  // A side within tolerance of its reference only through atol is still
  // wrong when far from it in ulps at an elementwise backward: that is one
  // formula on both devices (FunctionsManual's sinc_backward cancels on
  // each; sessions 33-35 judged sinc buckets blamed on one side where the
  // other was 490 ulp off), so a blame on one side alone names both.
  // A step inside an earlier statement maps elements as its forward op does
  // (the double backward of an elementwise op is elementwise).
  const ops::OpSpec* spec = ops::FindOp(forward_name);
  const bool pointwise = spec != nullptr && (spec->hints & ops::kPointwise) != 0;
  bool far_both = false;  // blamed on both by the ulps check: no side is excused
  // Each side's error at the element, in its dtype's ulps and relative, as
  // the forward's attribution gives them (the report's headline).
  auto element = [&](const at::Tensor& t) {
    if (!t.defined() || t.is_complex() || d.element < 0 || d.element >= t.numel()) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    return t.reshape(-1)[d.element].item<double>();
  };
  auto errors = [&](const Step& s, const at::Tensor& ref, double* ulp, double* rel) {
    ErrorAgainst(element(s.vjp.result.outputs[out]), element(ref), dt, ulp, rel);
  };
  const bool by_exact = d.witness == "exact-derivative";
  errors(sa, by_exact ? ea : ja.ref, &d.ulp_a, &d.rel_a);
  errors(sb, by_exact ? eb : jb.ref, &d.ulp_b, &d.rel_b);
  if (wa != wb && !self_witness && pointwise) {
    const bool exact = d.witness == "exact-derivative";
    const Step& other = wa ? sb : sa;
    const at::Tensor& ref = exact ? (wa ? eb : ea) : (wa ? jb.ref : ja.ref);
    constexpr double kFarUlps = 64;
    if (ref.defined() && UlpsOff(other.vjp.result.outputs[out], ref, differing, dt) > kFarUlps) {
      absl::StrAppend(&exact_note, "; ", exec::TargetName(wa ? b.target : a.target),
                      " is within tolerance only through atol, more than ", kFarUlps,
                      " ulps from the ", exact ? "exact derivative" : "float64 backward");
      wa = wb = true;
      far_both = true;
    }
    // The side within tolerance by luck: its own kernel, from its inputs
    // moved by 1, 2 or 4 ulps (an elementwise backward: each element on its
    // own), is out of tolerance of the float64 backward there. Its formula
    // then keeps fewer digits than the tolerance asks on this side too (s38's
    // sinc f32: CUDA 39.7 ulps, the CPU 4.7 only because its sin was 1 ulp
    // high; the formula cancels 47-fold on both), so both are blamed.
    if (!far_both && !f64_set_aside && d.cls == DivergenceClass::kTolerance && d.element >= 0) {
      const Target other_target = wa ? b.target : a.target;
      if (std::optional<int> k = NearbyMiss(node, other.inputs, other.incoming, other.create_graph,
                                            other_target, rtypes, out, d.element, dt, policy,
                                            opname)) {
        absl::StrAppend(&exact_note, "; ", exec::TargetName(other_target), "'s own backward from "
                        "its inputs moved by ", *k, " ulp", *k == 1 || *k == -1 ? "" : "s",
                        " is out of tolerance of the float64 backward there: its formula keeps "
                        "fewer digits than the tolerance on that side too");
        wa = wb = true;
        far_both = true;
      }
    }
  }
  if (wa && !wb) {
    d.wrong_side = std::string(exec::TargetName(a.target));
  } else if (wb && !wa) {
    d.wrong_side = std::string(exec::TargetName(b.target));
  } else if (wa && wb) {
    d.wrong_side = "both";
  }
  const ops::OpSpec* exact_spec = ops::FindOp(node.QualifiedName());
  const bool whole_vjp = exact_spec != nullptr && !exact_spec->exact_vjp.empty();
  d.reason = absl::StrCat(d.witness != "exact-derivative" ? "float64 backward of "
                          : whole_vjp ? "exact backward (MPFR, shifted by each prefix's maximum) of "
                                      : "exact derivative (MPFR) times the incoming gradient for ",
                          opname, " from each side's own inputs: ", d.reference_a, " (",
                          exec::TargetName(a.target), "), ", d.reference_b, " (",
                          exec::TargetName(b.target), ")", exact_note);
  if (self_witness) {
    absl::StrAppend(&d.reason, "; the gradient is float64, so these are the sides' own kernels "
                               "and cannot judge them");
  }
  // Where float64 cannot tell, forward mode against reverse mode on each side.
  if (d.wrong_side == "undecided" || d.wrong_side == "both") {
    const std::optional<bool> ma = ModesDisagree(node, sa, wrt, out, rtypes, a.target, dt);
    const std::optional<bool> mb = ModesDisagree(node, sb, wrt, out, rtypes, b.target, dt);
    if (ma && mb && *ma != *mb) {
      d.wrong_side = std::string(exec::TargetName(*ma ? a.target : b.target));
      d.witness = "forward-mode";
      absl::StrAppend(&d.reason, "; float64 cannot tell, but on ", d.wrong_side,
                      " forward mode disagrees with reverse mode (<u, J^T v> != <J u, v>) and on "
                      "the other side they agree");
    }
  }
  // A half grid_sampler's backward both sides miss the float64 backward by:
  // each against the CPU's float32 backward on its own inputs, rounded to the
  // dtype, where that tells them apart (witness opmath). A correct half
  // kernel forms its coordinates in opmath (CUDA's since pytorch#90427; its
  // weights and atomic sums stay in the dtype, "the backward kernels are
  // thus unchanged"); the CPU's rounds them in the dtype (sessions 46 and
  // 47's 3b30062b and 923a5359, judged real on the CPU alone).
  if (d.wrong_side == "both" && !far_both &&
      (dt == graph::DType::kF16 || dt == graph::DType::kBF16) && inside == nullptr &&
      spec != nullptr && spec->grid.arg >= 0 &&
      (d.cls == DivergenceClass::kTolerance || d.cls == DivergenceClass::kClassSplit)) {
    auto opmath_misses = [&](const Step& st) {
      return MissesOpmathBackward(node, rtypes, st.inputs, st.incoming,
                                  st.vjp.result.outputs[out], out, dt, policy, opname);
    };
    const std::optional<bool> ma = opmath_misses(sa), mb = opmath_misses(sb);
    if (ma && mb && *ma != *mb) {
      d.wrong_side = std::string(exec::TargetName(*ma ? a.target : b.target));
      d.witness = "opmath";
      absl::StrAppend(&d.reason, "; both miss the float64 backward, but only ", d.wrong_side,
                      " misses the CPU's float32 backward from its own inputs rounded to ",
                      std::string(graph::DTypeName(dt)),
                      " (coordinates formed in opmath, as a correct half kernel forms them)");
    }
  }

  // The gradient rules of oracles/rules.def, in its order; the first that
  // explains the divergence names it.
  rules::GradientContext c{node, rtypes, policy, d, out, wrt, dt, pointwise,
                           {sa.inputs, sa.incoming, sa.vjp.result.outputs[out], ja.ref,
                            SavedResults(a, root, node)},
                           {sb.inputs, sb.incoming, sb.vjp.result.outputs[out], jb.ref,
                            SavedResults(b, root, node)},
                           spec != nullptr ? static_cast<uint64_t>(spec->hints) : 0};
  c.tf32 = RanTf32(a.target, policy) || RanTf32(b.target, policy);
  c.a.cuda = a.target.base() == Target::kCuda;
  c.b.cuda = b.target.base() == Target::kCuda;
  c.a.upcast = Upcasts(a.target);
  c.b.upcast = Upcasts(b.target);
  // Blamed on both: a side whose own distance from the witness a rule
  // explains is not wrong, when the other's is not explained.
  if (d.wrong_side == "both" && !far_both) {
    const bool xa = SideExcused(c, c.a, policy, by_exact ? ea : at::Tensor());
    const bool xb = SideExcused(c, c.b, policy, by_exact ? eb : at::Tensor());
    if (xa != xb) {
      d.wrong_side = std::string(exec::TargetName(xa ? b.target : a.target));
      absl::StrAppend(&d.reason, "; ", exec::TargetName(xa ? a.target : b.target),
                      "'s distance from its own ",
                      by_exact ? "exact derivative" : "float64 backward",
                      " is within a rule of oracles/rules.def, so only ", d.wrong_side,
                      " is blamed");
    }
  }
  // Blamed on one side, where the sides differ: the other may be as wrong
  // where they agree, one formula on both devices (session 43's
  // logcumsumexp bf16, 8298b42b: exact 1.71 at element 2, 0 on both; only
  // the CPU was blamed, at element 7). Then both are, where the other is
  // off its independent float64 backward (the GPU's for the CPU) by more
  // than ten times the tolerance and no rule explains its distance.
  if (!self_witness && !far_both && !f64_set_aside &&
      (d.wrong_side == exec::TargetName(a.target)) !=
                                        (d.wrong_side == exec::TargetName(b.target))) {
    const bool a_blamed = d.wrong_side == exec::TargetName(a.target);
    const Step& other = a_blamed ? sb : sa;
    const Judged& jo = a_blamed ? jb : ja;
    const Target ot = a_blamed ? b.target : a.target;
    const bool on_cuda = ot == Target::kCuda || ot == Target::kCudaF64;
    const at::Tensor ref = !on_cuda && jo.cuda_ref.defined() ? jo.cuda_ref : jo.ref;
    const at::Tensor mine = other.vjp.result.outputs[out];
    if (ref.defined() && mine.defined() && !mine.is_complex() && ref.sizes() == mine.sizes()) {
      const at::Tensor ratio = OffInTolerances(
          mine, exec::ToDTypeKeepingNaNs(ref, mine.scalar_type()), policy.For(opname, dt));
      if (ratio.numel() > 0 && ratio.max().item<double>() > 10 &&
          !SideExcused(c, a_blamed ? c.b : c.a, policy,
                       by_exact ? (a_blamed ? eb : ea) : at::Tensor())) {
        const int64_t k = ratio.argmax().item<int64_t>();
        d.wrong_side = "both";
        auto at_k = [k](const at::Tensor& t) {
          return graph::FormatFloat(t.reshape(-1)[k].to(at::kDouble).item<double>());
        };
        absl::StrAppend(&d.reason, "; ", exec::TargetName(ot), " is off its float64 backward "
                        "too where the sides agree: element ", k, " gives ", at_k(mine), " for ",
                        at_k(ref));
      }
    }
  }
  // A root whose sides agree once rounded is judged by the range alone: the
  // other rules read rounded values that show no difference.
  std::optional<RuleMatch> m =
      past_range ? (policy.rules.gradient_extremal_values ? rules::gradient_extremal_values(c)
                                                          : std::nullopt)
                 : FirstGradientRule(c, policy);
  if (past_range && !m) {
    d.reason = "a side's float64 gradient is past the dtype's range where the other's is not "
               "finite, and no rule explains it: " + d.reason;
    d.tier = "divergence";
    d.wrong_side = "undecided";
    return;
  }
  if (m) {
    d.tier = "expected";
    d.expected_rule = m->rule;
    d.reason = m->reason + "; " + d.reason;
    return;
  }
  // Each side's backward matches the float64 backward from its own inputs:
  // the kernels are right (their inputs may differ within tolerance upstream).
  if (!wa && !wb && !self_witness && policy.rules.inherited_difference) {
    d.tier = "expected";
    d.expected_rule = "inherited_difference";
    d.reason = absl::StrCat("each side's ", d.op, " is within tolerance of the float64 backward "
                            "from its own inputs (which may differ within tolerance upstream); ",
                            d.reason);
    return;
  }
  d.tier = d.wrong_side == "undecided" ? "divergence" : "bug";
  // Shown where the blamed side alone misses (session 47's 923a5359 named an
  // element where the blamed CPU was the closer side; at element 16 the CPU
  // was 14% off and CUDA 0.2%).
  const bool a_blamed = d.wrong_side == exec::TargetName(a.target);
  if (d.tier == "bug" && (a_blamed || d.wrong_side == exec::TargetName(b.target)) &&
      ShowWhereTheBlamedSideAloneMisses(d, a_blamed, sa.vjp.result.outputs[out],
                                        sb.vjp.result.outputs[out], by_exact ? ea : ja.ref,
                                        by_exact ? eb : jb.ref, differing,
                                        policy.For(opname, dt), dt)) {
    describe();
    absl::StrAppend(&d.reason, "; shown at element ", d.element, ", where only ", d.wrong_side,
                    " is off its reference: ", d.value_a, " (", exec::TargetName(a.target),
                    ") and ", d.value_b, " (", exec::TargetName(b.target), ") against ",
                    d.reference_a, " and ", d.reference_b);
  }
}

}  // namespace

void TriageGradient(const graph::Program& program, const ops::TypeEnv& types,
                    const exec::RunResult& a, const exec::RunResult& b, const Policy& policy,
                    Divergence& d, const exec::WitnessPlan* plan_override) {
  // A witness or rule that libtorch rejects (shapes it cannot mask, a dtype
  // it cannot take) leaves the finding undecided; it never kills the worker.
  try {
    TriageGradientUnguarded(program, types, a, b, policy, d, plan_override);
  } catch (const std::exception& e) {
    d.tier = d.cls == DivergenceClass::kDtypeGap ? "dtype_gap" : "divergence";
    d.wrong_side = "undecided";
    d.expected_rule.clear();
    d.reason = absl::StrCat("the gradient oracle could not judge this backward (",
                            std::string(e.what()).substr(0, 200), ")");
  }
}

}  // namespace divfuzz::oracles
