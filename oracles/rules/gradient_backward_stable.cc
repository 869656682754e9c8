// gradient_backward_stable: a backward kernel sees its forward inputs, the
// values it saved (a softmax's or logcumsumexp's own output) and the incoming
// gradient rounded to the dtype. PyTorch's numerical-accuracy notes:
// "floating point provides limited accuracy ... CPU and GPU results can be
// different even for bitwise-identical inputs". A side whose gradient lies
// within the hull of the float64 backward at inputs and incoming gradients
// moved by 4 eps of their dtypes (six sampled directions, and each judged
// element's worst first-order direction: the sign of its derivative with
// respect to every value read), with the forward's results
// both exact and rounded to their dtypes and moved by 4 eps like the inputs
// (what a kernel that saves its output reads: log_ndtr's backward cancels its
// saved f32 result against x²/2),
// computed the backward
// correctly from values a correct forward could have rounded to; an
// ill-conditioned point amplifies that. The forward's backward_stable, for
// the backward.
#include <ATen/ATen.h>

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "ops/catalogue.h"
#include "oracles/compare.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {

namespace {

// For one judged element, the sign of its float64 derivative with respect to
// every value the backward reads: moving each value 4 eps that way moves the
// element furthest, to first order. Six sampled directions reach only a
// fraction of that where many values feed one element (a softmax row's sum,
// layer_norm's statistics): session 39's layer_norm double backward lay at
// 20.5 where the sampled hull ended at 8.4.
struct WorstDirection {
  std::map<std::string, at::Tensor> inputs;
  std::vector<at::Tensor> incoming;
};

std::vector<WorstDirection> WorstDirections(const GradientContext& c, const GradientSide& s) {
  std::vector<WorstDirection> dirs;
  for (const ElementDerivative& d : JudgedElementDerivatives(c, s)) {
    WorstDirection w;
    for (const auto& [name, t] : d.inputs) w.inputs[name] = t.sign();
    for (const at::Tensor& t : d.incoming) w.incoming.push_back(t.defined() ? t.sign() : t);
    dirs.push_back(std::move(w));
  }
  return dirs;
}

// `t` as float64 moved by `scale` x 4 eps of its magnitude along `sign`
// (the smallest normal float where it is 0, as MovedBy4Eps).
at::Tensor MovedAlong(const at::Tensor& t, const at::Tensor& sign, double eps) {
  at::Tensor x = t.to(at::kDouble);
  if (!sign.defined() || sign.sizes() != x.sizes()) return x;
  const at::Tensor step = FourEpsStep(x, eps);
  return at::where(at::isfinite(x), x + sign.to(at::kDouble) * step, x);
}

// The hull [lo, hi] of the float64 backward around one side's own inputs and
// incoming gradients: as given (-1) and moved six ways, each with the
// forward's results exact and rounded to their dtypes (a kernel that saves
// its output works from the rounded one), and the side's own saved outputs
// where known. nullopt: a point could not run. `enough` is asked after each
// point: the hull only grows, so once the side lies within it the rest cannot
// change the answer, and the points left (the worst directions' derivatives
// above all) are not computed (issue 35: the hull was two thirds of a
// gradient program's triage).
using Enough = std::function<bool(const at::Tensor& lo, const at::Tensor& hi)>;
std::optional<std::pair<at::Tensor, at::Tensor>> Hull(const GradientContext& c,
                                                      const GradientSide& s,
                                                      const Enough& enough) {
  const at::Tensor at_witness = s.witness.to(at::kDouble);
  at::Tensor lo = at_witness, hi = lo.clone();
  // The float64 gradient at one point: moved in direction `dir` (-1: not
  // moved) by `scale` times 4 eps.
  // `worst` (with `dir` 0 or 1: along it or against it) replaces the
  // sampled direction for the inputs and incoming gradients.
  // grid_sampler's grid is read as given: a correct kernel forms its
  // coordinates from it in opmath (CUDA's since pytorch#90427), and 4 eps of a
  // bf16 grid is 4 ulps of a coordinate, which excused the CPU's bf16
  // coordinates that cross a cell (session 46's 3b30062b, judged real).
  const graph::Node* fwd = exec::VjpInner(c.node);
  if (fwd == nullptr) fwd = &c.node;
  const ops::OpSpec* spec = ops::FindOp(fwd->QualifiedName());
  std::string exact_input;
  if (spec != nullptr && spec->grid.arg >= 0 &&
      fwd->args.size() > static_cast<size_t>(spec->grid.arg) &&
      fwd->args[spec->grid.arg].value.kind == graph::Literal::Kind::kValue) {
    exact_input = fwd->args[spec->grid.arg].value.s;
  }
  auto point = [&](int round, int dir, double scale,
                   const WorstDirection* worst = nullptr) -> std::optional<at::Tensor> {
    std::map<std::string, at::Tensor> inputs;
    for (const auto& [name, t] : s.inputs) {
      auto it = c.types.find(name);
      const bool floating = t.defined() && t.is_floating_point() && it != c.types.end() &&
                            name != exact_input;
      if (floating && worst != nullptr) {
        auto w = worst->inputs.find(name);
        inputs[name] = w == worst->inputs.end()
                           ? t
                           : MovedAlong(t, dir ? -w->second : w->second,
                                        scale * graph::Epsilon(it->second.dtype));
        continue;
      }
      inputs[name] = floating && dir >= 0
                         ? MovedBy4Eps(t, scale * graph::Epsilon(it->second.dtype), dir, 2000)
                         : t;
    }
    std::vector<at::Tensor> incoming;
    for (size_t i = 0; i < s.incoming.size(); ++i) {
      const at::Tensor& v = s.incoming[i];
      const bool floating = v.defined() && v.is_floating_point();
      if (floating && worst != nullptr) {
        const at::Tensor& w = i < worst->incoming.size() ? worst->incoming[i] : at::Tensor();
        incoming.push_back(w.defined() ? MovedAlong(v, dir ? -w : w, scale * graph::Epsilon(c.dtype))
                                       : v);
        continue;
      }
      incoming.push_back(floating && dir >= 0
                             ? MovedBy4Eps(v, scale * graph::Epsilon(c.dtype), dir + 1, 2000)
                             : v);
    }
    // Saved outputs rounded, and moved by 4 eps of their dtype like the
    // inputs: a kernel's own forward is not always correctly rounded, and
    // a formula that cancels it (log_ndtr's result + x²/2) amplifies that.
    // Round 2 reads the side's own saved outputs, as its kernel did, at the
    // side's own inputs: the forward may round them otherwise than a correct
    // rounding (session 38's CPU f16 log_softmax gave 0 where the rounded
    // result is -7e-6, within the forward's tolerance, and its double
    // backward cancels against it).
    const graph::Node* inner = exec::VjpInner(c.node);
    const std::vector<std::string>& saved = inner ? inner->results : c.node.results;
    auto move = [&](size_t i, const at::Tensor& t) {
      if (i >= saved.size() || !t.is_floating_point()) return t;
      at::Tensor base = t;
      if (round == 2) {
        if (i >= s.results.size() || !s.results[i].defined() ||
            s.results[i].sizes() != t.sizes() || !s.results[i].is_floating_point()) {
          return t;
        }
        base = s.results[i].to(at::kDouble);
      }
      if (dir < 0 || worst != nullptr) return base;
      auto it = c.types.find(saved[i]);
      if (it == c.types.end()) return base;
      return MovedBy4Eps(base, scale * graph::Epsilon(it->second.dtype), dir + 2, 2000);
    };
    exec::VjpResult w = exec::RunNodeVjp(c.node, inputs, incoming, c.types,
                                         exec::Target::kCpuF64, round >= 1, move);
    if (w.result.error || c.out >= w.result.exact.size()) return std::nullopt;
    const at::Tensor& g = w.result.exact[c.out];
    if (g.sizes() != lo.sizes() || g.is_complex()) return std::nullopt;
    return g;
  };
  // Round 2 only where the side's own saved outputs are known.
  const int rounds = s.results.empty() ? 2 : 3;
  // The sampled points first (no derivatives needed), then each judged
  // element's worst direction: the union is the same in any order.
  for (int round = 0; round < rounds; ++round) {
    // The side's own saved outputs are taken as they are, nothing moved: a
    // move of x apart from the output it saved can excuse a formula that
    // amplifies that output's rounding past every digit (session 38's
    // logcumsumexp at 2^24 in f32, CUDA 1/73 of the exact gradient).
    for (int dir = round ? -1 : 0; dir < (round == 2 ? 0 : 6); ++dir) {
      std::optional<at::Tensor> g = point(round, dir, 1.0);
      if (!g) return std::nullopt;
      // A move past the edge of the domain (erfinv at 1 - 2^-24 moved by 4
      // eps crosses 1) gives no gradient there, and the hull would collapse
      // onto the unmoved point: such elements move by half as much, down to
      // 1/64, staying inside the rounding ball (session 33's ErfinvBackward0).
      at::Tensor out = at::isfinite(*g).logical_not() & at::isfinite(at_witness);
      for (double scale = 0.5; dir >= 0 && scale >= 1.0 / 64 && out.any().item<bool>();
           scale /= 2) {
        std::optional<at::Tensor> nearer = point(round, dir, scale);
        if (!nearer) break;
        *g = at::where(out, *nearer, *g);
        out = at::isfinite(*g).logical_not() & at::isfinite(at_witness);
      }
      lo = at::fmin(lo, *g);
      hi = at::fmax(hi, *g);
      if (enough(lo, hi)) return std::make_pair(lo, hi);
    }
  }
  const std::vector<WorstDirection> worst = WorstDirections(c, s);
  for (int round = 0; round < rounds; ++round) {
    // Each judged element's own worst direction, both ways, saved outputs
    // as the round takes them but not moved.
    for (const WorstDirection& w : worst) {
      for (int dir = 0; dir < 2; ++dir) {
        std::optional<at::Tensor> g = point(round, dir, 1.0, &w);
        if (!g) return std::nullopt;
        at::Tensor out = at::isfinite(*g).logical_not() & at::isfinite(at_witness);
        for (double scale = 0.5; scale >= 1.0 / 64 && out.any().item<bool>(); scale /= 2) {
          std::optional<at::Tensor> nearer = point(round, dir, scale, &w);
          if (!nearer) break;
          *g = at::where(out, *nearer, *g);
          out = at::isfinite(*g).logical_not() & at::isfinite(at_witness);
        }
        lo = at::fmin(lo, *g);
        hi = at::fmax(hi, *g);
        if (enough(lo, hi)) return std::make_pair(lo, hi);
      }
    }
  }
  return std::make_pair(lo, hi);
}

}  // namespace

std::optional<RuleMatch> gradient_backward_stable(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kTolerance) return std::nullopt;
  // logcumsumexp's backward is judged by gradient_scan_carry, which models
  // its formula: four eps of x at 2e7 in f32 move its exponent by 9, so this
  // hull holds any value there, and cleared a CPU that kept no digit of the
  // exact 2.6 (sessions 38 and 39: judged real on both devices, only CUDA
  // blamed).
  if (c.ScanCarryKernel()) return std::nullopt;
  for (const GradientSide* s : {&c.a, &c.b}) {
    if (!s->witness.defined() || s->witness.is_complex()) return std::nullopt;
  }
  const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
  // Judged where the sides differ only: elsewhere they agree, and the hull
  // of an element the function is not defined at (a pole) is NaN. Each side
  // against the hull around its own inputs: they may differ within tolerance
  // upstream, and an ill-conditioned backward (acosh near 1) amplifies that.
  const at::Tensor differing = DifferingElements(c.a.outgoing, c.b.outgoing, c.dtype, tol);
  auto within = [&](const GradientSide& s) {
    const at::Tensor v = s.outgoing.to(at::kDouble);
    auto inside = [&](const at::Tensor& lo, const at::Tensor& hi) {
      if (v.sizes() != lo.sizes()) return false;
      at::Tensor ok = (v >= lo - tol.atol) & (v <= hi + tol.atol);
      ok = ok.logical_or(at::isfinite(v).logical_not()).reshape(-1);
      if (differing.defined() && differing.numel() == ok.numel()) {
        ok = ok.logical_or(differing.logical_not());
      }
      return ok.all().item<bool>();
    };
    const auto hull = Hull(c, s, inside);
    return hull && inside(hull->first, hull->second);
  };
  if (!within(c.a) || !within(c.b)) return std::nullopt;
  return RuleMatch{"gradient_backward_stable",
                   absl::StrCat("each side's gradient is the float64 backward of ",
                                c.node.QualifiedName(), " at inputs and incoming gradients within "
                                "4 eps of its own, with its saved outputs exact, rounded, or as its "
                                "forward gave them (the values its kernel works from)")};
}

}  // namespace divfuzz::oracles::rules
