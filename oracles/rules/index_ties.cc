// index_ties: indices that select equal values (ties), mode's equally frequent values,
// and indexed writes that name one destination twice without accumulate.
//
// It rests on the op docs: torch.kthvalue, "When :attr:`input` is a CUDA
// tensor and there are multiple valid :attr:`k` th values, this function may
// nondeterministically return :attr:`indices` for any of them."; torch.sort,
// "If :attr:`stable` is ``True`` then the sorting routine becomes stable,
// preserving the order of equivalent elements." (not otherwise); and
// Tensor.index_put_, "If accumulate is ``False``, the behavior is undefined if
// indices contain duplicate elements." (Note: torch.argmax/argmin document
// "If there are multiple maximal values then the indices of the first maximal
// value are returned": ties there are no excuse by the docs.)
#include "oracles/invariants.h"
#include "oracles/rules/rule.h"

#include <ATen/ops/all.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/where.h>

#include <optional>
#include <string>

namespace divfuzz::oracles::rules {

using graph::Literal;

namespace {

// mode's value is any of the most frequent values: equal counts are a tie.
std::optional<RuleMatch> ModeValueTies(const Context& c) {
  if (!(c.spec.hints & ops::kValueTies) || c.d.output_index != 0) return std::nullopt;
  at::Tensor x = c.Input(0);
  at::Tensor va = F64(Context::Output(c.a, c.d.node_index, 0));
  at::Tensor vb = F64(Context::Output(c.b, c.d.node_index, 0));
  if (!x.defined() || !va.defined() || !vb.defined() || va.sizes() != vb.sizes()) {
    return std::nullopt;
  }
  x = F64(x);
  if (x.dim() == 0) return std::nullopt;
  int64_t dim = IntArgOr(c.node, ArgPos(c.spec.dim_pos), "dim", -1);
  if (dim < 0) dim += x.dim();
  const Literal* keep = ops::FindArg(c.node, ArgPos(c.spec.keepdim_pos), "keepdim");
  if (keep == nullptr || keep->kind != Literal::Kind::kBool || !keep->b) {
    va = va.unsqueeze(dim);
    vb = vb.unsqueeze(dim);
  }
  // NaN counts as equal to NaN here: mode groups NaNs together.
  auto count = [&](const at::Tensor& v) {
    return at::logical_or(x.eq(v), at::logical_and(at::isnan(x), at::isnan(v))).sum(dim);
  };
  const at::Tensor count_a = count(va), count_b = count(vb);
  if (at::all(count_a.eq(count_b)).item<bool>()) {
    return RuleMatch{"index_ties",
                     "both modes occur equally often: mode may return any most frequent value"};
  }
  // torch.mode does not say how NaNs count (pytorch#46225): the CPU groups
  // them, CUDA's sort counts runs that NaNs break apart. In a row with a NaN,
  // a value that is a most frequent one with NaNs grouped, with each NaN on
  // its own, or with NaNs left out is a mode (session 44's mode bf16
  // 41ec662e: the CPU's NaN, two of them, and CUDA's 0.49, once in a row of
  // five other single values; judged expected). A row without a NaN keeps
  // the test above.
  const std::vector<bool> valid_a =
      ModeValuesValid(c.spec, c.node, x, Context::Output(c.a, c.d.node_index, 0));
  const std::vector<bool> valid_b =
      ModeValuesValid(c.spec, c.node, x, Context::Output(c.b, c.d.node_index, 0));
  const at::Tensor ca = count_a.reshape({-1}), cb = count_b.reshape({-1});
  if (valid_a.size() != static_cast<size_t>(ca.numel()) || valid_b.size() != valid_a.size()) {
    return std::nullopt;
  }
  for (int64_t r = 0; r < ca.numel(); ++r) {
    if (ca[r].item<int64_t>() == cb[r].item<int64_t>()) continue;
    if (!valid_a[r] || !valid_b[r]) return std::nullopt;
  }
  return RuleMatch{"index_ties",
                   "each side's mode is a most frequent value of its row under one way of "
                   "counting NaNs (grouped, each on its own, or left out), which torch.mode "
                   "leaves unsaid (pytorch#46225)"};
}

std::optional<RuleMatch> IndexTies(const Context& c) {
  if (auto m = ModeValueTies(c)) return m;
  if (!(c.spec.hints & ops::kIndicesOutput)) return std::nullopt;
  const size_t idx = IndicesOutput(c.spec);
  if (static_cast<size_t>(c.d.output_index) != idx) return std::nullopt;
  at::Tensor x = c.Input(0);
  at::Tensor ia = Context::Output(c.a, c.d.node_index, idx);
  at::Tensor ib = Context::Output(c.b, c.d.node_index, idx);
  if (!x.defined() || !ia.defined() || !ib.defined() || ia.sizes() != ib.sizes()) {
    return std::nullopt;
  }
  if (x.dim() == 0) return RuleMatch{"index_ties", "a 0-d input has one index"};
  // Indices out of range select nothing: not a tie, a real divergence.
  const at::Tensor va = SelectedValues(c.spec, c.node, x, ia);
  const at::Tensor vb = SelectedValues(c.spec, c.node, x, ib);
  if (!va.defined() || !vb.defined() || va.sizes() != vb.sizes()) return std::nullopt;
  const at::Tensor same = at::logical_or(va.eq(vb), at::logical_and(at::isnan(va), at::isnan(vb)));
  if (!at::all(same).item<bool>()) return std::nullopt;
  return RuleMatch{"index_ties",
                   "the indices differ but select equal values: ties may be broken either way"};
}

// True when `index` names one destination twice along `dim` (for the same
// position in the other dims): with accumulate=False the writes race, and
// which one lands is undefined (and differs between CPU and CUDA).
bool RepeatsAlong(at::Tensor index, int64_t dim, int64_t size) {
  if (!index.defined() || index.dim() == 0 || index.scalar_type() == at::kBool) return false;
  if (dim < 0) dim += index.dim();
  if (dim < 0 || dim >= index.dim() || index.size(dim) < 2) return false;
  index = index.to(at::kLong);
  if (size > 0) index = at::where(index.lt(0), index.add(size), index);
  const at::Tensor sorted = std::get<0>(index.sort(dim));
  const int64_t n = sorted.size(dim);
  return sorted.narrow(dim, 1, n - 1).eq(sorted.narrow(dim, 0, n - 1)).any().item<bool>();
}

std::optional<RuleMatch> DuplicateWrites(const Context& c) {
  const std::string base = BaseName(c.node.op);
  const at::Tensor self = c.Input(0);
  if (!self.defined()) return std::nullopt;
  bool repeats = false;
  if (base == "put" && !Accumulates(c.node, 3)) {
    repeats = RepeatsAlong(c.Input(1).flatten(), 0, self.numel());
  } else if (base == "index_copy" ||
             (base == "scatter" && ops::FindArg(c.node, 4, "reduce") == nullptr)) {
    const int64_t dim = IntArgOr(c.node, 1, "dim", 0);
    const int64_t size = self.dim() == 0 ? 1 : self.size(dim < 0 ? dim + self.dim() : dim);
    repeats = RepeatsAlong(c.Input(2), base == "index_copy" ? 0 : dim, size);
  } else if (base == "index_put" && !Accumulates(c.node, 3) && c.node.args.size() > 1 &&
             c.node.args[1].value.list.size() == 1 && self.dim() > 0) {
    // One index tensor: it picks rows of dim 0.
    const Literal& item = c.node.args[1].value.list[0];
    auto it = c.inputs.find(item.s);
    if (item.kind == Literal::Kind::kValue && it != c.inputs.end()) {
      repeats = RepeatsAlong(it->second.flatten(), 0, self.size(0));
    }
  } else if ((base == "max_unpool2d" || base == "max_unpool3d") && c.Input(1).defined()) {
    // Each index is a flat position in its (batch, channel) output plane.
    const at::Tensor index = c.Input(1);
    const int64_t spatial = base == "max_unpool2d" ? 2 : 3;
    if (index.dim() > spatial && index.numel() > 0) {
      int64_t plane = 1;
      for (int64_t d = index.dim() - spatial; d < index.dim(); ++d) plane *= index.size(d);
      repeats = RepeatsAlong(index.reshape({-1, plane}), 1, 0);
    }
  }
  if (!repeats) return std::nullopt;
  return RuleMatch{"index_ties",
                   "the index names one destination twice and accumulate is off: which write "
                   "lands is undefined"};
}

}  // namespace

std::optional<RuleMatch> index_ties(const Context& c) {
  if (auto m = IndexTies(c)) return m;
  return DuplicateWrites(c);
}

}  // namespace divfuzz::oracles::rules
