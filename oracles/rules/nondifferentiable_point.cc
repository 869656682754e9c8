// nondifferentiable_point: the autograd notes, "Gradients for
// non-differentiable functions": at a kink a convex function takes a
// subgradient, and "If multiple values are possible, pick one arbitrarily"
// (relu, abs, clamp, hardtanh at their kinks; max, min, sort, topk, median,
// max_pool at ties; norms at 0). Found without a list: the float64 gradient
// of the forward node at inputs moved by 4 eps in several directions jumps
// (the node is not differentiable there), and each side gives a value within
// the hull of those one-sided gradients (exact where the op has an exact
// backward, exec::RunExactVjp). A jump is what does not shrink with
// the move: at moves 64 times smaller a kink or tie still spans the same
// one-sided gradients, while a smooth but steep gradient (linalg_vander's
// x^(N-1), a tanh cell's, logdet's near a singular matrix) spans 64 times
// less, and is left to the conditioning and stability rules.
#include <ATen/ATen.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "exec/exact_reference.h"
#include "exec/executor.h"
#include "oracles/compare.h"
#include "oracles/rules/gradient_rule.h"
#include "ops/op_spec.h"

namespace divfuzz::oracles::rules {
namespace {

std::optional<std::pair<at::Tensor, at::Tensor>> Hull(const GradientContext& c, double scale) {
  if (!c.a.witness.defined() || c.a.witness.is_complex()) return std::nullopt;
  // The float64 backward at `inputs`; the exact backward where the op has
  // one: a float64 formula that rounds badly jumps between neighbouring
  // inputs as a kink does (session 49's 8c799968: logcumsumexp's unshifted
  // exponent at 1e15 moved the float64 gradient by 0.045 within 4 eps, and
  // excused its own 1% error).
  auto gradient_at = [&](const std::map<std::string, at::Tensor>& inputs) -> at::Tensor {
    exec::VjpResult w =
        exec::RunNodeVjp(c.node, inputs, c.a.incoming, c.types, exec::Target::kCpuF64);
    if (w.result.error || c.out >= w.result.exact.size()) return at::Tensor();
    at::Tensor g = w.result.exact[c.out];
    if (g.sizes() != c.a.witness.sizes() || g.is_complex()) return at::Tensor();
    if (c.a.incoming.size() == 1) {
      if (std::optional<at::Tensor> e = exec::RunExactVjp(c.node, inputs, c.a.incoming[0], c.wrt);
          e && e->sizes() == g.sizes()) {
        g = at::where(at::isfinite(*e), *e, g);
      }
    }
    return g.to(at::kDouble);
  };
  // From the same computation at the inputs themselves, not the witness: an
  // exact witness beside a float64 kernel that is off by a constant share
  // would read as a jump (a sigmoid backward 1% high).
  const at::Tensor here = gradient_at(c.a.inputs);
  if (!here.defined()) return std::nullopt;
  at::Tensor lo = here, hi = here.clone();
  for (int dir = 0; dir < 6; ++dir) {
    std::map<std::string, at::Tensor> moved;
    for (const auto& [name, t] : c.a.inputs) {
      if (!t.defined() || !t.is_floating_point()) {
        moved[name] = t;
        continue;
      }
      auto it = c.types.find(name);
      const double eps = graph::Epsilon(it == c.types.end() ? c.dtype : it->second.dtype);
      moved[name] = MovedBy4Eps(t, eps * scale, dir, 1000);
    }
    const at::Tensor g = gradient_at(moved);
    if (!g.defined()) return std::nullopt;
    lo = at::fmin(lo, g);
    hi = at::fmax(hi, g);
  }
  return std::make_pair(lo, hi);
}

bool Within(const at::Tensor& x, const std::pair<at::Tensor, at::Tensor>& hull, double slack) {
  at::Tensor v = x.to(at::kDouble);
  return ((v >= hull.first - slack * hull.first.abs()) &
          (v <= hull.second + slack * hull.second.abs()))
      .all()
      .item<bool>();
}

// Each tensor's values sorted within each group of equal `x` (NaNs one
// group), in one order for both: a gradient routed to another tied position
// becomes the same tensor.
at::Tensor SortedWithinTies(const at::Tensor& g, const at::Tensor& x) {
  at::Tensor key = at::where(at::isnan(x), at::full({}, INFINITY, x.options()), x);
  // Ties first by value, then by gradient: a stable sort by gradient, then by key.
  at::Tensor by_g = std::get<1>(at::sort(g, /*stable=*/true, 0, false));
  at::Tensor by_key = std::get<1>(at::sort(key.index_select(0, by_g), /*stable=*/true, 0, false));
  return g.index_select(0, by_g.index_select(0, by_key));
}

// A selecting op (ops::kSelectsInputs) at ties: the two sides' gradients are
// the same values routed to different tied positions of the input.
std::optional<RuleMatch> RoutedWithinTies(const GradientContext& c, const Tolerance& tol) {
  if (!(c.hints & ops::kSelectsInputs)) return std::nullopt;
  auto xa = c.a.inputs.find(c.wrt), xb = c.b.inputs.find(c.wrt);
  if (xa == c.a.inputs.end() || xb == c.b.inputs.end() || !xa->second.defined() ||
      !xb->second.defined() || !c.a.outgoing.defined() || !c.b.outgoing.defined() ||
      xa->second.is_complex() || c.a.outgoing.is_complex()) {
    return std::nullopt;
  }
  const at::Tensor x = xa->second.to(at::kDouble).reshape(-1);
  const at::Tensor x_b = xb->second.to(at::kDouble).reshape(-1);
  const at::Tensor ga = c.a.outgoing.to(at::kDouble).reshape(-1);
  const at::Tensor gb = c.b.outgoing.to(at::kDouble).reshape(-1);
  // One gradient element per input element, and inputs that agree (the
  // incoming gradients agree too: this backward kernel is the root). Not
  // bit for bit: a softmax before the sort rounds differently on each
  // device, and a tie on one side is then a near-tie on the other
  // (session 38's msort of 13 equal f16 probabilities).
  if (x.numel() != ga.numel() || x.numel() != gb.numel() || x.numel() != x_b.numel()) {
    return std::nullopt;
  }
  const at::Tensor inputs_differ = DifferingElements(x, x_b, c.dtype, tol);
  if (!inputs_differ.defined() || inputs_differ.any().item<bool>()) return std::nullopt;
  // Where the sides differ, the input must be tied: elsewhere a different
  // gradient is no routing choice.
  const at::Tensor differing = DifferingElements(ga, gb, c.dtype, tol);
  if (!differing.defined() || !differing.any().item<bool>()) return std::nullopt;
  // Ties as either side saw them, joined: a division rounded another way on
  // one device ties two inputs there only, and each side routes within its
  // own ties (session 43's msort: element 19 tied on CUDA alone, element 23
  // on the CPU alone). Element i and j share a group where either side has
  // them equal, transitively.
  const size_t n = static_cast<size_t>(x.numel());
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), size_t{0});
  const auto root = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (const at::Tensor& side_x : {x, x_b}) {
    const at::Tensor key = at::where(at::isnan(side_x), at::full({}, INFINITY, side_x.options()), side_x);
    const at::Tensor inverse = std::get<1>(at::_unique2(key, /*sorted=*/true,
                                                        /*return_inverse=*/true,
                                                        /*return_counts=*/false))
                                   .reshape(-1).to(at::kLong).contiguous();
    const int64_t* value = inverse.data_ptr<int64_t>();
    std::vector<size_t> first(n, n);  // the first element of each distinct value
    for (size_t i = 0; i < n; ++i) {
      size_t& f = first[static_cast<size_t>(value[i])];
      if (f == n) {
        f = i;
      } else {
        parent[root(i)] = root(f);
      }
    }
  }
  std::vector<size_t> size(n, 0);
  for (size_t i = 0; i < n; ++i) ++size[root(i)];
  std::vector<double> group(n);
  std::vector<int64_t> in_tie(n);
  for (size_t i = 0; i < n; ++i) {
    group[i] = static_cast<double>(root(i));
    in_tie[i] = size[root(i)] > 1;
  }
  const at::Tensor groups = at::tensor(group, at::kDouble);
  const at::Tensor tied = at::tensor(in_tie, at::kLong).gt(0);
  if (!tied.index({differing}).all().item<bool>()) return std::nullopt;
  const at::Tensor sa = SortedWithinTies(ga, groups), sb = SortedWithinTies(gb, groups);
  const at::Tensor still = DifferingElements(sa, sb, c.dtype, tol);
  if (!still.defined() || still.any().item<bool>()) return std::nullopt;
  return RuleMatch{"nondifferentiable_point",
                   absl::StrCat(c.node.QualifiedName(), " selects among tied inputs (",
                                tied.sum().item<int64_t>(), " of ", n,
                                " elements equal another on either side): the two sides route the "
                                "same gradient values to different tied positions, each a valid "
                                "choice")};
}

}  // namespace

std::optional<RuleMatch> nondifferentiable_point(const GradientContext& c) {
  const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
  if (std::optional<RuleMatch> m = RoutedWithinTies(c, tol)) return m;
  std::optional<std::pair<at::Tensor, at::Tensor>> hull = Hull(c, 1.0);
  if (!hull) return std::nullopt;
  std::optional<std::pair<at::Tensor, at::Tensor>> near = Hull(c, 1.0 / 64);
  if (!near) return std::nullopt;
  const at::Tensor width = hull->second - hull->first;
  const at::Tensor near_width = near->second - near->first;
  at::Tensor jump = (width > tol.atol + tol.rtol * hull->second.abs()) & (near_width > width / 4);
  // Where the sides differ: a kink elsewhere explains nothing here.
  const at::Tensor differing = DifferingElements(c.a.outgoing, c.b.outgoing, c.dtype, tol);
  jump = jump.reshape(-1);
  if (differing.defined() && differing.numel() == jump.numel()) jump &= differing;
  const bool jumps = jump.any().item<bool>();
  const double slack = 4 * graph::Epsilon(c.dtype);
  if (!jumps || !Within(c.a.outgoing, *hull, slack) || !Within(c.b.outgoing, *hull, slack)) {
    return std::nullopt;
  }
  return RuleMatch{"nondifferentiable_point",
                   absl::StrCat(c.node.QualifiedName(), " is not differentiable there (a kink or "
                                "a tie: its float64 gradient jumps by up to ",
                                width.max().item<double>(), " within 4 eps of the inputs, and as "
                                "much within 1/16 eps) and "
                                "each side gives one of its one-sided gradients")};
}

}  // namespace divfuzz::oracles::rules
