// gradient_summation: a backward kernel sums its terms (the backward of a
// reduction, a matrix product, a convolution, pooling or a broadcast sums
// the incoming gradient): PyTorch's numerical-accuracy notes, "floating point
// ... is not associative, so the order of the operations affects the
// results": the sides may differ by the summation-order bound 2·n·eps·sum|terms|.
#include <ATen/ATen.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "exec/witnesses.h"
#include "oracles/compare.h"
#include "oracles/rules/gradient_rule.h"
#include "oracles/rules/rule.h"

namespace divfuzz::oracles::rules {
namespace {

// softmax's and log_softmax's backward cancel by structure, whatever the
// signs: dx = p·g - p·Σ(p·g) and dx = g - p·Σg along `dim`, p the saved
// probabilities (exp of log_softmax's output), which sum to 1; the float64
// backward of |inputs| cancels as well. Their terms, p·|g| + p·Σ(p·|g|) and
// |g| + p·Σ|g| (session 43's LogSoftmaxBackward0 f32, p = 0.99999: CUDA's
// expf 1 ulp off moved the result 0.76% within 2·n·eps of them; judged
// expected). nullopt for other ops.
std::optional<at::Tensor> SimplexTerms(const GradientContext& c, const GradientSide& s) {
  const std::string op = c.node.op;
  const bool log = absl::StrContains(op, "log_softmax");
  if (!absl::StrContains(op, "softmax") || absl::StrContains(op, "backward") ||
      s.results.empty() || !s.results[0].defined() || s.incoming.empty() ||
      !s.incoming[0].defined() || s.results[0].is_complex() ||
      s.results[0].sizes() != s.incoming[0].sizes() || s.results[0].dim() == 0) {
    return std::nullopt;
  }
  const int64_t dim = at::maybe_wrap_dim(IntArgOr(c.node, 1, "dim", -1), s.results[0].dim());
  const at::Tensor y = s.results[0].to(at::kDouble);
  const at::Tensor p = log ? y.exp() : y;
  const at::Tensor g = s.incoming[0].to(at::kDouble).abs();
  const at::Tensor t = log ? g + p * g.sum(dim, /*keepdim=*/true)
                           : p * g + p * (p * g).sum(dim, /*keepdim=*/true);
  return at::where(at::isfinite(t), t, at::zeros_like(t));
}

// log_softmax's double backward (the step back through its first-order
// backward dx = g - p·Σg): its exact value cancels as the first order's does,
// by Σ_i dx_i = 0, so the float64 backward of |inputs| cancels too. Its terms:
// with respect to x, Σ|g|·(p·|c| + p·Σ(p·|c|)); with respect to g, |c| +
// Σ(p·|c|); c the incoming gradient. Session 51's 21d02fd6 and ba8f3bfb
// (judged expected): an exact 0 from terms of 3e13 (a cotangent of 1e15),
// both devices off by 1e7, within the bound 2.4e8.
std::optional<at::Tensor> LogSoftmaxDoubleBackwardTerms(const GradientContext& c,
                                                        const GradientSide& s) {
  const graph::Node* inner = exec::VjpInner(c.node);
  if (inner == nullptr || !absl::StrContains(inner->op, "log_softmax") ||
      absl::StrContains(inner->op, "backward") || inner->Uses().empty() || s.results.empty() ||
      !s.results[0].defined() || s.results[0].is_complex() || s.results[0].dim() == 0 ||
      s.incoming.empty() || !s.incoming[0].defined() || c.node.args.empty()) {
    return std::nullopt;
  }
  // The step's first-order incoming gradient: its grad_outputs argument.
  const graph::Literal& outs = c.node.args.back().value;
  if (outs.list.size() != 1 || outs.list[0].kind != graph::Literal::Kind::kValue) {
    return std::nullopt;
  }
  const std::string g_name = outs.list[0].s;
  auto g_it = s.inputs.find(g_name);
  if (g_it == s.inputs.end() || !g_it->second.defined() ||
      g_it->second.sizes() != s.results[0].sizes() ||
      s.incoming[0].sizes() != s.results[0].sizes()) {
    return std::nullopt;
  }
  const int64_t dim = at::maybe_wrap_dim(IntArgOr(*inner, 1, "dim", -1), s.results[0].dim());
  const at::Tensor p = s.results[0].to(at::kDouble).exp();
  const at::Tensor g = g_it->second.to(at::kDouble).abs();
  const at::Tensor v = s.incoming[0].to(at::kDouble).abs();
  const at::Tensor pv = (p * v).sum(dim, /*keepdim=*/true);
  at::Tensor t;
  if (c.wrt == inner->Uses()[0]) {
    t = g.sum(dim, /*keepdim=*/true) * (p * v + p * pv);
  } else if (c.wrt == g_name) {
    t = v + pv;
  } else {
    return std::nullopt;
  }
  return at::where(at::isfinite(t), t, at::zeros_like(t));
}

}  // namespace

std::optional<RuleMatch> gradient_summation(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kTolerance) return std::nullopt;
  // sum|terms|: the float64 backward of |inputs| with |incoming|.
  std::map<std::string, at::Tensor> inputs = c.a.inputs;
  for (auto& [name, t] : inputs) {
    if (t.defined() && (t.is_floating_point() || t.is_complex())) t = t.abs();
  }
  // Trapezoid's sample points: their differences scale the terms, whatever
  // x's dtype (session 49's 8b7f82b5: cumulative_trapezoid over int64 x with
  // steps of +-6, whose signed steps cancelled the bound to 30 where the
  // reverse sums it bounds are near 1e8; judged expected).
  if (std::optional<std::pair<std::string, at::Tensor>> spaced = exec::AbsSpacing(c.node, c.a.inputs)) {
    inputs[spaced->first] = spaced->second;
  }
  std::vector<at::Tensor> incoming = c.a.incoming;
  int64_t n = 1;
  for (at::Tensor& t : incoming) {
    if (!t.defined()) continue;
    // An elementwise op's backward sums only what broadcasting folded into
    // one element (sum_to_size), plus the few roundings of its formula.
    const int64_t terms = c.pointwise ? (t.numel() + std::max<int64_t>(1, c.a.outgoing.numel()) - 1) /
                                            std::max<int64_t>(1, c.a.outgoing.numel()) + 4
                                      : t.numel();
    n = std::max<int64_t>(n, terms);
    t = t.abs();
  }
  // A node reading one value in several slots (x / x): autograd sums each
  // use's partial, which cancel in the float64 backward of |inputs| too
  // (|x|/|x|'s two partials are +-|g|/|x|), so sum|terms| adds each use's
  // partial apart (session 37's DivBackward0 bf16 of gh / gh, judged
  // expected: -8 from partials of +-1734).
  at::Tensor sum_terms;
  int64_t extra = 0;  // the partials of a value read in several slots
  if (std::optional<SplitUses> split = SplitRepeatedUses(c.node, inputs, c.types)) {
    exec::VjpResult parts =
        exec::RunNodeVjp(split->node, split->inputs, incoming, split->types, exec::Target::kCpuF64);
    if (parts.result.error) return std::nullopt;
    std::vector<std::string> names = {c.wrt};
    if (auto it = split->copies.find(c.wrt); it != split->copies.end()) {
      names.insert(names.end(), it->second.begin(), it->second.end());
    }
    for (size_t o = 0; o < parts.wrt.size() && o < parts.result.exact.size(); ++o) {
      if (std::find(names.begin(), names.end(), parts.wrt[o]) == names.end()) continue;
      const at::Tensor t = parts.result.exact[o].abs();
      sum_terms = sum_terms.defined() ? sum_terms + t : t;
    }
    extra = static_cast<int64_t>(names.size()) - 1;
    n += extra;
  } else {
    exec::VjpResult terms =
        exec::RunNodeVjp(c.node, inputs, incoming, c.types, exec::Target::kCpuF64);
    if (terms.result.error || c.out >= terms.result.exact.size()) return std::nullopt;
    sum_terms = terms.result.exact[c.out].abs();
  }
  if (!sum_terms.defined()) return std::nullopt;
  std::optional<at::Tensor> simplex = SimplexTerms(c, c.a);
  if (!simplex) simplex = LogSoftmaxDoubleBackwardTerms(c, c.a);
  if (simplex && simplex->sizes() == sum_terms.sizes()) sum_terms = at::fmax(sum_terms, *simplex);
  // The bound holds while n·eps is well below 1 (Higham's gamma_n =
  // n u / (1 - n u)); past that it allows any value of the right sign,
  // a sum that stalled included (session 40's G6: CUDA's bilinear upsample
  // backward atomically adding 143 bf16 terms stopped at 128 where the exact
  // sum is 143, pytorch#104157; the rubric calls accumulating in bf16 until
  // the sum saturates real). The terms a judged element sums are the
  // nonzeros of its derivative with respect to the incoming gradients (the
  // backward is linear in them).
  // The bound takes the most terms a judged element sums, not the incoming
  // gradient's size: session 45's rms_norm over 32 of 128 bf16 incoming
  // elements had 2·n·eps = 2 from the size, a bound that allowed anything.
  if (!c.pointwise) {
    int64_t most = 0;
    for (const ElementDerivative& d : JudgedElementDerivatives(c, c.a)) {
      int64_t terms = 0;
      for (const at::Tensor& t : d.incoming) {
        if (t.defined()) terms += t.ne(0).sum().item<int64_t>();
      }
      if (2.0 * static_cast<double>(terms) * c.ProductEps() >= 1.0) return std::nullopt;
      most = std::max(most, terms);
    }
    if (most > 0) n = std::min(n, most + extra);
  }
  if (2.0 * static_cast<double>(n) * c.ProductEps() >= 1.0) return std::nullopt;
  const at::Tensor bound = sum_terms * (2.0 * static_cast<double>(n) * c.ProductEps());
  const at::Tensor diff = (c.a.outgoing.to(at::kDouble) - c.b.outgoing.to(at::kDouble)).abs();
  if (bound.sizes() != diff.sizes()) return std::nullopt;
  // Where both sides are finite (a tolerance divergence has its non-finite
  // elements in the same class on both sides; their terms may be inf).
  const at::Tensor finite = at::isfinite(c.a.outgoing) & at::isfinite(c.b.outgoing);
  // Or each side within the bound of its own float64 backward: the sides'
  // inputs may differ by what they inherited from upstream (judged there),
  // so their exact answers differ too (session 46's LogSoftmaxBackward0 f32:
  // 0.037 of the 0.053 gap came from the two log_softmax outputs; each side
  // was within 0.0083 of its own float64 backward, the bound 0.026).
  at::Tensor within = diff <= bound;
  if (c.a.witness.defined() && c.b.witness.defined() &&
      c.a.witness.sizes() == diff.sizes() && c.b.witness.sizes() == diff.sizes()) {
    const at::Tensor own_a = (c.a.outgoing.to(at::kDouble) - c.a.witness.to(at::kDouble)).abs();
    const at::Tensor own_b = (c.b.outgoing.to(at::kDouble) - c.b.witness.to(at::kDouble)).abs();
    within = within.logical_or((own_a <= bound).logical_and(own_b <= bound));
  }
  // A summing backward's elements are judged where they differ beyond
  // tolerance only (session 51's ba8f3bfb: log_softmax's subnormal
  // probabilities moved elements of 4e-29 by 2% beside the judged
  // 1e15 - (1e15 + 1); 76161434: cumulative_trapezoid's reverse scan). Not
  // an elementwise op's nor logcumsumexp's (gradient_scan_carry's): there
  // the other elements kept judged-real bf16 gelu and f16 logcumsumexp
  // backwards (the GeluBackward0 regression, session 48's p012) out of this
  // bound, loose where the formula is no sum. None beyond tolerance (a
  // caller's own check): all are judged.
  const bool sums = simplex || (!c.pointwise && !c.ScanCarryKernel());
  const at::Tensor differing =
      sums ? DifferingElements(c.a.outgoing, c.b.outgoing, c.dtype,
                               c.policy.For(c.node.QualifiedName(), c.dtype))
           : at::Tensor();
  if (differing.defined() && differing.numel() == within.numel() &&
      differing.any().item<bool>()) {
    within = within.logical_or(differing.reshape(within.sizes()).logical_not());
  }
  if (!within.logical_or(finite.logical_not()).all().item<bool>()) return std::nullopt;
  return RuleMatch{"gradient_summation",
                   absl::StrCat("the backward of ", c.node.QualifiedName(),
                                " sums its terms: the sides differ within 2·n·eps·sum|terms| (n = ",
                                n, ")")};
}

}  // namespace divfuzz::oracles::rules
