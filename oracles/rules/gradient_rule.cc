#include "oracles/rules/gradient_rule.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "ops/op_spec.h"
#include "oracles/compare.h"

namespace divfuzz::oracles::rules {

at::Tensor FourEpsStep(const at::Tensor& x, double eps) {
  return at::where(x == 0, at::full_like(x, 1.2e-38), x.abs() * (4 * eps));
}

at::Tensor MovedBy4Eps(const at::Tensor& t, double eps, int dir, uint64_t seed) {
  at::Tensor x = t.to(at::kDouble);
  const at::Tensor step = FourEpsStep(x, eps);
  at::Tensor sign = at::ones_like(x);
  if (dir == 1) sign = -sign;
  if (dir == 4 || dir == 5) {
    // Along the flat index, up (4) or down (5): every tie breaks in index
    // order or in reverse, as a sort's kernel may break it.
    sign = at::linspace(-1.0, 1.0, x.numel(), at::TensorOptions().dtype(at::kDouble)).reshape(x.sizes());
    if (dir == 5) sign = -sign;
  } else if (dir >= 2) {
    // Pairs (2, 3), (6, 7), ... draw one pattern and its mirror: every
    // element moves both ways somewhere (session 33's LogSoftmaxBackward0
    // f16: four independent draws left elements moved up only, and a side
    // whose saved output rounded down fell outside a one-sided hull).
    at::Generator gen = at::detail::createCPUGenerator(seed + (dir & ~1));
    sign = at::bernoulli(at::full_like(x, 0.5), gen) * 2 - 1;
    if (dir & 1) sign = -sign;
  }
  return at::where(at::isfinite(x), x + sign * step, x);
}

namespace {

constexpr int kJudgedDerivatives = 8;

std::vector<ElementDerivative> ComputeJudgedElementDerivatives(const GradientContext& c,
                                                               const GradientSide& s) {
  std::vector<ElementDerivative> out;
  const at::Tensor judged = DifferingElements(c.a.outgoing, c.b.outgoing, c.dtype,
                                              c.policy.For(c.node.QualifiedName(), c.dtype));
  if (!judged.defined() || !c.a.outgoing.defined() || !c.b.outgoing.defined() ||
      c.a.outgoing.sizes() != c.b.outgoing.sizes() || judged.numel() != c.a.outgoing.numel()) {
    return out;
  }
  at::Tensor gap = (c.a.outgoing.to(at::kDouble) - c.b.outgoing.to(at::kDouble)).abs().reshape(-1);
  gap = at::where(judged & at::isfinite(gap), gap, at::full_like(gap, -1.0));
  const int64_t k = std::min<int64_t>(kJudgedDerivatives, judged.sum().item<int64_t>());
  if (k <= 0) return out;
  const at::Tensor elements = std::get<1>(gap.topk(k));
  const exec::VjpGraphVisitor visit = [&](const std::vector<std::string>& names,
                                          const std::vector<at::Tensor>& wrt,
                                          const std::vector<at::Tensor>& incoming,
                                          const std::vector<at::Tensor>& grads) {
    if (c.out >= grads.size() || !grads[c.out].defined() || !grads[c.out].requires_grad() ||
        grads[c.out].is_complex()) {
      return;
    }
    std::vector<at::Tensor> leaves(wrt.begin(), wrt.end());
    for (const at::Tensor& t : incoming) {
      if (t.defined()) leaves.push_back(t);
    }
    const at::Tensor flat = grads[c.out].reshape(-1);
    for (int64_t i = 0; i < k; ++i) {
      const int64_t e = elements[i].item<int64_t>();
      if (e < 0 || e >= flat.numel()) continue;
      std::vector<at::Tensor> d = torch::autograd::grad({flat[e]}, leaves, {},
                                                        /*retain_graph=*/true,
                                                        /*create_graph=*/false,
                                                        /*allow_unused=*/true);
      ElementDerivative ed;
      ed.element = e;
      size_t j = 0;
      for (size_t n = 0; n < wrt.size(); ++n, ++j) {
        if (d[j].defined() && !d[j].is_complex()) ed.inputs[names[n]] = d[j].detach().cpu();
      }
      ed.incoming.resize(incoming.size());
      for (size_t n = 0; n < incoming.size(); ++n) {
        if (!incoming[n].defined()) continue;
        if (d[j].defined() && !d[j].is_complex()) ed.incoming[n] = d[j].detach().cpu();
        ++j;
      }
      out.push_back(std::move(ed));
    }
  };
  try {
    // RunNodeVjp catches what the visitor's differentiation raises.
    const exec::VjpResult r = exec::RunNodeVjp(c.node, s.inputs, s.incoming, c.types,
                                               exec::Target::kCpuF64, false, nullptr, nullptr,
                                               false, &visit);
    if (r.result.error) out.clear();  // no derivative of this backward
  } catch (const std::exception&) {
    out.clear();
  }
  return out;
}

}  // namespace

const std::vector<ElementDerivative>& JudgedElementDerivatives(const GradientContext& c,
                                                               const GradientSide& s) {
  if (&s != &c.a && &s != &c.b) {
    static thread_local std::vector<ElementDerivative> other;  // a side not of `c`
    other = ComputeJudgedElementDerivatives(c, s);
    return other;
  }
  std::optional<std::vector<ElementDerivative>>& memo =
      &s == &c.b ? c.derivatives_b : c.derivatives_a;
  if (!memo) memo = ComputeJudgedElementDerivatives(c, s);
  return *memo;
}

bool GradientContext::ScanCarryKernel() const {
  return (hints & ops::kScanCarry) && d.op.rfind("LogcumsumexpBackward", 0) == 0;
}

double GradientContext::ComputeEps() const {
  const bool low = dtype == graph::DType::kF16 || dtype == graph::DType::kBF16;
  return low && (hints & ops::kComputesInOpmath) ? graph::Epsilon(graph::DType::kF32)
                                                 : graph::Epsilon(dtype);
}

double GradientContext::ProductEps() const {
  const double eps = ComputeEps();
  const bool single = dtype == graph::DType::kF32 || dtype == graph::DType::kC64;
  return tf32 && single ? std::max(eps, std::ldexp(1.0, -10)) : eps;
}

std::vector<int64_t> ReducedDims(const graph::Node& node, const at::Tensor& x) {
  std::vector<int64_t> dims;
  const graph::Literal* dim = ops::FindArg(node, 1, "dim");
  if (dim != nullptr && dim->kind == graph::Literal::Kind::kInt) dims.push_back(dim->i);
  if (dim != nullptr && dim->kind == graph::Literal::Kind::kList) {
    for (const graph::Literal& d : dim->list) {
      if (d.kind == graph::Literal::Kind::kInt) dims.push_back(d.i);
    }
  }
  for (int64_t& d : dims) d = d < 0 ? d + x.dim() : d;
  if (dims.empty()) {
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  }
  return dims;
}

std::optional<SplitUses> SplitRepeatedUses(const graph::Node& node,
                                           const std::map<std::string, at::Tensor>& inputs,
                                           const ops::TypeEnv& types) {
  SplitUses s{node, inputs, types, {}};
  std::map<std::string, int> uses;
  for (graph::Argument& arg : s.node.args) {
    if (arg.value.kind != graph::Literal::Kind::kValue) continue;
    const std::string name = arg.value.s;
    if (uses[name]++ == 0) continue;
    auto in = inputs.find(name);
    auto type = types.find(name);
    if (in == inputs.end() || type == types.end()) return std::nullopt;
    const std::string copy = absl::StrCat(name, "__use", uses[name]);
    arg.value.s = copy;
    s.inputs[copy] = in->second;
    s.types[copy] = type->second;
    s.copies[name].push_back(copy);
  }
  if (s.copies.empty()) return std::nullopt;
  return s;
}

double ElementAt(const at::Tensor& t, long long element) {
  if (!t.defined() || t.is_complex() || element < 0 || element >= t.numel()) return NAN;
  return t.reshape(-1)[element].to(at::kDouble).item<double>();
}

std::vector<std::string> OperandNames(const graph::Node& node) {
  std::vector<std::string> names;
  for (const graph::Argument& a : node.args) {
    if (a.value.kind == graph::Literal::Kind::kValue) names.push_back(a.value.s);
  }
  return names;
}

std::optional<double> WithinRoundingSpread(
    const GradientContext& c, const SpreadTest& test,
    const std::function<std::optional<at::Tensor>(const GradientSide&, int)>& draw) {
  for (const GradientSide* s : {&c.a, &c.b}) {
    if (!s->witness.defined() || s->witness.is_complex() || !s->outgoing.defined()) {
      return std::nullopt;
    }
  }
  const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
  const at::Tensor differing = DifferingElements(c.a.outgoing, c.b.outgoing, c.dtype, tol);
  double worst = 0;
  for (const GradientSide* s : {&c.a, &c.b}) {
    const at::Tensor base = s->witness.to(at::kDouble);
    at::Tensor spread = at::zeros_like(base);
    for (int k = 0; k < test.draws; ++k) {
      std::optional<at::Tensor> g = draw(*s, k);
      if (!g || g->sizes() != base.sizes()) return std::nullopt;
      spread = at::fmax(spread, (g->to(at::kDouble) - base).abs());
    }
    const at::Tensor off = (s->outgoing.to(at::kDouble) - base).abs();
    if (off.sizes() != spread.sizes()) return std::nullopt;
    at::Tensor judged = at::ones_like(off, at::kBool).reshape(-1);
    if (differing.defined() && differing.numel() == judged.numel()) judged = differing;
    if (test.keeps_digit) {
      at::Tensor no_bound = (at::isfinite(spread).logical_not() |
                             spread * test.factor >= base.abs()).reshape(-1);
      if ((no_bound & judged).any().item<bool>() && test.float64_draw && test.draw_eps > 0) {
        at::Tensor spread64 = at::zeros_like(base);
        for (int k = 0; k < test.draws; ++k) {
          std::optional<at::Tensor> g = test.float64_draw(*s, k);
          if (!g || g->sizes() != base.sizes()) return std::nullopt;
          spread64 = at::fmax(spread64, (g->to(at::kDouble) - base).abs());
        }
        // And only where the spread is rounding's: in proportion to eps,
        // within 16x either way. One that does not shrink with eps makes or
        // removes whole terms (a sentinel moved), one that shrinks far more
        // picks another algorithm at the dtype's eps (matrix_exp's squaring
        // count read off a moved norm: session 37's CPU backward, judged
        // real), and neither bounds anything.
        const double r = std::ldexp(1.0, -52) / test.draw_eps;
        const at::Tensor unresolved =
            (at::isfinite(spread64) & (spread64 * test.factor >= base.abs()) &
             (spread64 * 16 >= spread * r) & (spread64 <= spread * r * 16))
                .reshape(-1);
        no_bound = no_bound & at::isfinite(spread).reshape(-1).logical_not().logical_or(
                                  unresolved.logical_not());
      }
      if ((no_bound & judged).any().item<bool>()) return std::nullopt;
    }
    at::Tensor ok = off <= spread * test.factor + tol.atol;
    if (test.nonfinite_passes) ok = ok | at::isfinite(off).logical_not();
    if (!(ok.reshape(-1) | judged.logical_not()).all().item<bool>()) return std::nullopt;
    const at::Tensor ratio = (off / (spread + 1e-300)).reshape(-1).masked_select(
        judged & at::isfinite(off).reshape(-1));
    if (ratio.numel() > 0) worst = std::max(worst, ratio.max().item<double>());
  }
  return worst;
}

std::optional<RecordedBackward> RecordBackward(const GradientContext& c, const GradientSide& s) {
  RecordedBackward r;
  {
    exec::OpRecorder recorder;
    const exec::VjpResult v = exec::RunNodeVjp(c.node, s.inputs, s.incoming, c.types,
                                               s.cuda ? exec::Target::kCuda : exec::Target::kCpu);
    if (!recorder.Complete() || v.result.error || c.out >= v.result.outputs.size()) {
      return std::nullopt;
    }
    r.gradient = v.result.outputs[c.out].cpu();
    r.mine = recorder.Calls();
  }
  exec::OpRecorder recorder;
  const exec::VjpResult v =
      exec::RunNodeVjp(c.node, s.inputs, s.incoming, c.types,
                       s.cuda ? exec::Target::kCudaF64 : exec::Target::kCpuF64);
  if (!recorder.Complete() || v.result.error) return std::nullopt;
  r.wide = recorder.Calls();
  return r;
}

}  // namespace divfuzz::oracles::rules
