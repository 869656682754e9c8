#include "oracles/expected_rules.h"

#include <ATen/ops/abs.h>
#include <ATen/ops/all.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/isinf.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/cummax.h>
#include <ATen/ops/linalg_svdvals.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/log2.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/logical_xor.h>
#include <ATen/ops/any.h>
#include <ATen/ops/tril.h>
#include <ATen/ops/triu.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/masked_select.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "absl/strings/str_split.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "exec/dtype_convert.h"
#include "exec/executor.h"
#include "exec/witnesses.h"
#include "oracles/invariants.h"
#include "graph/printer.h"
#include "ops/catalogue.h"
#include "oracles/attribution.h"

namespace divfuzz::oracles {
namespace {

using graph::DType;
using graph::Literal;

struct Context {
  const graph::Program& program;
  const ops::TypeEnv& types;
  const exec::RunResult& a;
  const exec::RunResult& b;
  const Policy& policy;
  const Divergence& d;
  const graph::Node& node;
  const ops::OpSpec& spec;
  std::map<std::string, at::Tensor> inputs;  // the root's inputs as side A had them, float64
  DType dtype;                               // the diverging output's dtype

  at::Tensor Input(size_t i) const {
    if (i >= node.args.size() || node.args[i].value.kind != Literal::Kind::kValue) return {};
    auto it = inputs.find(node.args[i].value.s);
    return it == inputs.end() ? at::Tensor() : it->second;
  }
  // The program dtypes of the node's tensor arguments (list items included).
  std::vector<DType> ArgDTypes() const {
    std::vector<DType> out;
    auto add = [&](const Literal& l) {
      if (l.kind != Literal::Kind::kValue) return;
      auto it = types.find(l.s);
      if (it != types.end()) out.push_back(it->second.dtype);
    };
    for (const graph::Argument& arg : node.args) {
      add(arg.value);
      for (const Literal& item : arg.value.list) add(item);
    }
    return out;
  }
  // The diverging output of side A and of side B, as float64 (or undefined).
  at::Tensor OutA() const { return AsF64(Output(a, d.node_index, d.output_index)); }
  at::Tensor OutB() const { return AsF64(Output(b, d.node_index, d.output_index)); }
  static at::Tensor AsF64(const at::Tensor& t) {
    return t.defined() ? t.to(at::kDouble).contiguous() : t;
  }
  // The output of a side's root node, or undefined.
  static at::Tensor Output(const exec::RunResult& r, int node, size_t o) {
    if (node < 0 || static_cast<size_t>(node) >= r.nodes.size()) return {};
    const exec::NodeResult& n = r.nodes[node];
    return o < n.outputs.size() ? n.outputs[o] : at::Tensor();
  }
};

at::Tensor F64(const at::Tensor& t) { return t.defined() ? t.to(at::kDouble).contiguous() : t; }

// The largest finite |x| (0 when there is none).
double FiniteAbsMax(const at::Tensor& t) {
  const at::Tensor a = at::abs(t.to(at::kDouble));
  const at::Tensor finite = a.masked_select(at::isfinite(a));
  return finite.numel() == 0 ? 0.0 : finite.max().item<double>();
}

// A catalogue position (-1: keyword-only) as FindArg's position.
size_t ArgPos(int pos) { return pos < 0 ? std::numeric_limits<size_t>::max() : static_cast<size_t>(pos); }

int64_t IntArgOr(const graph::Node& node, size_t pos, const char* name, int64_t fallback) {
  const Literal* l = ops::FindArg(node, pos, name);
  return l != nullptr && l->kind == Literal::Kind::kInt ? l->i : fallback;
}

std::optional<RuleMatch> InfoGated(const Context& c) {
  if (!(c.spec.hints & ops::kInfoGated)) return std::nullopt;
  const size_t info = c.node.results.size() - 1;
  const at::Tensor ia = Context::Output(c.a, c.d.node_index, info);
  const at::Tensor ib = Context::Output(c.b, c.d.node_index, info);
  if (!ia.defined() || !ib.defined()) return std::nullopt;
  const int64_t fa = ia.ne(0).sum().item<int64_t>(), fb = ib.ne(0).sum().item<int64_t>();
  if (fa == 0 && fb == 0) return std::nullopt;
  return RuleMatch{
      "info_gated",
      absl::StrCat("the factorization reports failure (non-zero info in ", fa, " batch entries on ",
                   exec::TargetName(c.a.target), ", ", fb, " on ", exec::TargetName(c.b.target),
                   "); its other outputs are unspecified there")};
}

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
  if (!at::all(count_a.eq(count_b)).item<bool>()) return std::nullopt;
  return RuleMatch{"index_ties",
                   "both modes occur equally often: mode may return any most frequent value"};
}

std::optional<RuleMatch> IndexTies(const Context& c) {
  if (auto m = ModeValueTies(c)) return m;
  if (!(c.spec.hints & ops::kIndicesOutput)) return std::nullopt;
  const size_t idx =
      c.spec.rule == ops::Rule::kArgReduce || (c.spec.hints & ops::kIndicesFirst) ? 0 : 1;
  if (static_cast<size_t>(c.d.output_index) != idx) return std::nullopt;
  at::Tensor x = c.Input(0);
  at::Tensor ia = Context::Output(c.a, c.d.node_index, idx);
  at::Tensor ib = Context::Output(c.b, c.d.node_index, idx);
  if (!x.defined() || !ia.defined() || !ib.defined() || ia.sizes() != ib.sizes()) {
    return std::nullopt;
  }
  if (x.dim() == 0) return RuleMatch{"index_ties", "a 0-d input has one index"};
  int64_t dim = IntArgOr(c.node, ArgPos(c.spec.dim_pos), "dim", -1);
  if (dim < 0) dim += x.dim();
  const bool reduces = c.spec.rule == ops::Rule::kArgReduce ||
                       c.spec.rule == ops::Rule::kValuesIndices || (c.spec.hints & ops::kReducesDim);
  const Literal* keep = ops::FindArg(c.node, ArgPos(c.spec.keepdim_pos), "keepdim");
  const bool keepdim = keep != nullptr && keep->kind == Literal::Kind::kBool && keep->b;
  if (reduces && !keepdim) {
    ia = ia.unsqueeze(dim);
    ib = ib.unsqueeze(dim);
  }
  try {
    const at::Tensor va = at::gather(x, dim, ia.to(x.device())), vb = at::gather(x, dim, ib);
    const at::Tensor same =
        at::logical_or(va.eq(vb), at::logical_and(at::isnan(va), at::isnan(vb)));
    if (!at::all(same).item<bool>()) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;  // indices out of range: not a tie, a real divergence
  }
  return RuleMatch{"index_ties",
                   "the indices differ but select equal values: ties may be broken either way"};
}

// "aten::index_put_" -> "index_put": in-place variants race like the others.
std::string BaseName(const std::string& op) {
  std::string base = op.substr(op.rfind(':') + 1);
  if (!base.empty() && base.back() == '_') base.pop_back();
  return base;
}

bool Accumulates(const graph::Node& node, size_t pos) {
  const graph::Literal* a = ops::FindArg(node, pos, "accumulate");
  return a != nullptr && a->kind == graph::Literal::Kind::kBool && a->b;
}

// The lists of torch.use_deterministic_algorithms: CUDA kernels that add with
// atomics in whatever order the threads arrive, or pick among equal values.
bool DocumentedNondeterministicOnCuda(const graph::Node& node) {
  static const std::set<std::string> kAlways = {"scatter_add",
                                                "scatter_reduce",
                                                "index_add",
                                                "index_reduce",
                                                "embedding_bag",
                                                "_embedding_bag",
                                                "histc",
                                                "bincount",
                                                "convolution",
                                                "conv1d",
                                                "conv2d",
                                                "conv3d",
                                                "conv_transpose1d",
                                                "conv_transpose2d",
                                                "conv_transpose3d",
                                                "_convolution",
                                                "cudnn_convolution",
                                                "kthvalue",
                                                "median",
                                                "nanmedian"};
  const std::string base = BaseName(node.op);
  return kAlways.count(base) > 0 ||
         ((base == "index_put" || base == "_index_put_impl" || base == "put") &&
          Accumulates(node, 3));
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

std::optional<RuleMatch> FloatToIntCast(const Context& c) {
  if (c.spec.rule != ops::Rule::kCast) return std::nullopt;
  const at::Tensor x = c.Input(0);
  const Literal* to = ops::FindArg(c.node, 1, "dtype");
  if (!x.defined() || to == nullptr || to->kind != Literal::Kind::kDType ||
      !graph::IsIntegral(to->dtype)) {
    return std::nullopt;
  }
  auto it = c.types.find(c.node.args[0].value.s);
  if (it == c.types.end() || !graph::IsFloating(it->second.dtype)) return std::nullopt;
  const at::Tensor bad = at::logical_or(
      at::isfinite(x).logical_not(),
      at::logical_or(x.lt(graph::MinValue(to->dtype)), x.gt(graph::MaxFinite(to->dtype))));
  const int64_t n = bad.sum().item<int64_t>();
  if (n == 0) return std::nullopt;
  return RuleMatch{"float_to_int_casts",
                   absl::StrCat(n, " input element(s) are non-finite or outside the range of ",
                                std::string(graph::DTypeName(to->dtype)),
                                ": the cast is undefined behaviour in C++")};
}

// Factorizations (compared through their invariants) and spectra: a
// backward-stable algorithm computes the exact answer of A + E with
// ||E||_2 <= c n eps ||A||_2, which moves every invariant and singular or
// symmetric eigenvalue by at most that (Weyl): the error is normwise, not
// relative to each element.
std::optional<RuleMatch> NormwiseBackwardError(const Context& c) {
  const bool decomposition = c.spec.hints & ops::kDecomposition;
  const bool function = c.spec.hints & ops::kMatrixFunction;
  if ((!decomposition && !function && !(c.spec.hints & ops::kNormwiseSpectrum)) ||
      c.d.cls != DivergenceClass::kTolerance) {
    return std::nullopt;
  }
  const at::Tensor x = c.Input(0);
  if (!x.defined() || x.dim() < 2 || x.numel() == 0 || x.is_complex() ||
      !at::all(at::isfinite(x)).item<bool>()) {
    return std::nullopt;
  }
  const auto it = c.types.find(c.node.args[0].value.s);
  const DType dt = it == c.types.end() ? c.dtype : it->second.dtype;
  double norm2 = 0;
  try {
    norm2 = at::linalg_svdvals(x).max().item<double>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const double n = static_cast<double>(std::max(x.size(-1), x.size(-2)));
  double bound = 8 * n * graph::Epsilon(dt) * norm2;
  // A matrix function's forward error is its condition (>= ||A||) times eps
  // times ||f(A)||: the bound scales with the larger side's result.
  double result_norm = 0;
  if (function) {
    const at::Tensor ya = c.OutA(), yb = c.OutB();
    if (!ya.defined() || !yb.defined() || !at::all(at::isfinite(ya)).item<bool>() ||
        !at::all(at::isfinite(yb)).item<bool>()) {
      return std::nullopt;
    }
    try {
      result_norm = std::max(at::linalg_svdvals(ya).max().item<double>(),
                             at::linalg_svdvals(yb).max().item<double>());
    } catch (const std::exception&) {
      return std::nullopt;
    }
    bound = 8 * n * graph::Epsilon(dt) * std::max(norm2, 1.0) * result_norm;
  }
  const std::vector<at::Tensor> ia =
      Comparable(&c.spec, c.a.nodes[c.d.node_index].outputs);
  const std::vector<at::Tensor> ib =
      Comparable(&c.spec, c.b.nodes[c.d.node_index].outputs);
  // Every invariant (the divergence names only the first that differs).
  if (ia.size() != ib.size() || ia.empty()) return std::nullopt;
  double diff = 0;
  for (size_t o = 0; o < ia.size(); ++o) {
    if (!ia[o].defined() || !ib[o].defined() || ia[o].sizes() != ib[o].sizes() ||
        ia[o].is_complex() || ib[o].is_complex()) {
      return std::nullopt;
    }
    if (ia[o].numel() == 0) continue;
    diff = std::max(diff, F64(ia[o]).sub(F64(ib[o])).abs().max().item<double>());
  }
  if (!(diff <= bound)) return std::nullopt;
  if (function) {
    return RuleMatch{
        "normwise_backward_error",
        absl::StrCat("max |A - B| ", graph::FormatFloat(diff), " <= 8 n eps(",
                     std::string(graph::DTypeName(dt)), ") max(||X||_2, 1) ||f(X)||_2 = ",
                     graph::FormatFloat(bound), " (n = ", static_cast<int64_t>(n), ", ||X||_2 ",
                     graph::FormatFloat(norm2), ", ||f(X)||_2 ", graph::FormatFloat(result_norm),
                     "): a matrix function's forward error is normwise (Higham)")};
  }
  return RuleMatch{
      "normwise_backward_error",
      absl::StrCat("max |A - B| ", graph::FormatFloat(diff), " <= 8 n eps(",
                   std::string(graph::DTypeName(dt)), ") ||A||_2 = ", graph::FormatFloat(bound),
                   " (n = ", static_cast<int64_t>(n), ", ||A||_2 ", graph::FormatFloat(norm2),
                   "): both are backward-stable answers")};
}

std::optional<RuleMatch> IllConditioned(const Context& c) {
  if (!(c.spec.hints & ops::kConditioned)) return std::nullopt;
  // Elimination without any rounding (the exact witness checked every
  // intermediate): conditioning cannot excuse a difference.
  if (c.d.rounding_free) return std::nullopt;
  const ops::ConditionedMatrix& cm = c.spec.conditioned;
  const Literal& arg = c.node.args.size() > static_cast<size_t>(cm.arg)
                           ? c.node.args[static_cast<size_t>(cm.arg)].value
                           : c.node.args[0].value;
  // The matrix as each side had it: a side that inherited other values (a
  // float64 side's upstream ops) solved another, maybe worse, problem.
  auto matrix_of = [&](const exec::RunResult& run) {
    at::Tensor x;
    if (arg.kind != Literal::Kind::kValue) return x;
    const std::map<std::string, at::Tensor> in = NodeInputs(c.program, c.d.node_index, run);
    auto found = in.find(arg.s);
    if (found == in.end() || !found->second.defined()) return x;
    x = F64(found->second);
    if (x.dim() < 2) return at::Tensor();
    if (cm.as != ops::ConditionedAs::kWhole) {
      // The op reads one triangle (and cholesky_solve solves with L L^T).
      const Literal* u = ops::FindArg(c.node, cm.upper_pos < 0 ? 1000 : cm.upper_pos, "upper");
      const bool upper = u != nullptr && u->kind == Literal::Kind::kBool ? u->b : cm.upper_default;
      x = upper ? at::triu(x) : at::tril(x);
      if (cm.as == ops::ConditionedAs::kCholeskyFactor) {
        x = upper ? at::matmul(x.mT(), x) : at::matmul(x, x.mT());
      }
    }
    return x;
  };
  const at::Tensor x = matrix_of(c.a);
  if (!x.defined()) return std::nullopt;
  const at::Tensor xb = matrix_of(c.b);
  for (const at::Tensor& m : {x, xb}) {
    if (m.defined() && !at::all(at::isfinite(m)).item<bool>()) {
      return RuleMatch{"ill_conditioned", "the matrix has non-finite entries: no condition number"};
    }
  }
  const auto it = c.types.find(c.node.args[0].value.s);
  const DType dt = it == c.types.end() ? c.dtype : it->second.dtype;
  double worst = 0;
  try {
    for (const at::Tensor& m : {x, xb}) {
      if (!m.defined() || m.sizes() != x.sizes()) continue;
      const at::Tensor s = at::linalg_svdvals(m);  // descending along the last dim
      const at::Tensor smax = s.select(-1, 0), smin = s.select(-1, s.size(-1) - 1);
      worst = std::max(worst, smax.div(smin).max().item<double>());
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const double limit = 1.0 / graph::Epsilon(dt);
  if (worst > limit || !std::isfinite(worst)) {
    return RuleMatch{"ill_conditioned", absl::StrCat("condition number ", graph::FormatFloat(worst),
                                                     " > 1/eps(", std::string(graph::DTypeName(dt)),
                                                     ") = ", graph::FormatFloat(limit))};
  }
  // Below 1/eps a backward-stable algorithm still loses up to about
  // n * cond * eps of relative accuracy (log|det| loses that much absolutely):
  // two correct results may differ by twice that.
  // A factorization is compared through its invariants, not output 0:
  // normwise_backward_error bounds those.
  if (c.d.cls != DivergenceClass::kTolerance || (c.spec.hints & ops::kDecomposition)) {
    return std::nullopt;
  }
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || ya.numel() == 0) {
    return std::nullopt;
  }
  const double n = static_cast<double>(x.size(-1));
  const double bound = 2 * n * worst * graph::Epsilon(dt);
  const double diff = at::linalg_vector_norm(ya.sub(yb)).item<double>();
  const double scale = at::linalg_vector_norm(yb).item<double>();
  const bool log_scale = absl::StrContains(c.node.op, "logdet");
  const double error = log_scale ? at::abs(ya.sub(yb)).max().item<double>()
                                 : diff / std::max(scale, std::numeric_limits<double>::min());
  if (!(error <= bound)) {
    // The sides' difference also carries what they inherited; what each
    // blamed side owes is its own error against the witness from its own
    // inputs, which is as bounded (half of it: n * cond * eps each).
    const bool blames_a = c.d.wrong_side == "both" || c.d.wrong_side == exec::TargetName(c.a.target);
    const bool blames_b = c.d.wrong_side == "both" || c.d.wrong_side == exec::TargetName(c.b.target);
    const double own = std::max(blames_a ? c.d.rel_a : 0.0, blames_b ? c.d.rel_b : 0.0);
    if (log_scale || (!blames_a && !blames_b) || !(own <= bound / 2)) return std::nullopt;
    return RuleMatch{
        "ill_conditioned",
        absl::StrCat("the blamed side's relative error against the witness from its own inputs, ",
                     graph::FormatFloat(own), ", is within n * cond * eps(",
                     std::string(graph::DTypeName(dt)), ") = ", graph::FormatFloat(bound / 2),
                     " (n = ", static_cast<int64_t>(n), ", cond ", graph::FormatFloat(worst),
                     "); the rest of the difference is inherited")};
  }
  return RuleMatch{
      "ill_conditioned",
      absl::StrCat(log_scale ? "absolute" : "normwise relative", " difference ",
                   graph::FormatFloat(error), " <= 2 * n * cond * eps(",
                   std::string(graph::DTypeName(dt)), ") = ", graph::FormatFloat(bound),
                   " (n = ", static_cast<int64_t>(n), ", cond ", graph::FormatFloat(worst), ")")};
}

// Sums and dot products: any summation order is correct, and orders differ
// by up to n * eps * sum|terms| per result element (the standard bound).
std::optional<RuleMatch> CancellingReduction(const Context& c) {
  const bool reduction = c.spec.hints & ops::kCancellingReduction;
  const bool matmul = c.spec.hints & ops::kCancellingMatmul;
  // Any other op that sums inside (convolution, pooling, norms, trapezoid,
  // losses ...): its terms are not its inputs one for one, so n is bounded by
  // the largest input's size and sum|terms| by the op on |inputs| or |result|.
  const bool inside = !reduction && !matmul && (c.spec.hints & ops::kSumsInside);
  const bool split = c.d.cls == DivergenceClass::kClassSplit;
  if ((!reduction && !matmul && !inside) || (c.d.cls != DivergenceClass::kTolerance && !split)) {
    return std::nullopt;
  }
  const size_t out = inside ? static_cast<size_t>(c.d.output_index) : 0;
  const at::Tensor ya = F64(Context::Output(c.a, c.d.node_index, out));
  const at::Tensor yb = F64(Context::Output(c.b, c.d.node_index, out));
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes()) return std::nullopt;
  if (ya.is_complex() || yb.is_complex()) return std::nullopt;
  // The same op over |inputs| gives sum|terms| for each output element.
  at::Tensor sum_abs = exec::AbsTermsWitness(c.node, c.inputs, c.types, out);
  if (sum_abs.defined() && sum_abs.sizes() != yb.sizes()) sum_abs = at::Tensor();
  if (inside) {
    at::Tensor seen = at::maximum(ya.abs(), yb.abs());
    // Output k of a prefix sum sums every term up to k, so sum|terms| there
    // is at least the largest partial sum so far.
    if ((c.spec.hints & ops::kPrefixSums) && seen.dim() > 0) {
      int64_t dim = IntArgOr(c.node, ArgPos(c.spec.dim_pos), "dim", -1);
      if (dim < 0) dim += seen.dim();
      if (dim >= 0 && dim < seen.dim()) seen = std::get<0>(seen.cummax(dim));
    }
    sum_abs = sum_abs.defined() ? at::maximum(sum_abs, seen) : seen;
  }
  if (!sum_abs.defined()) return std::nullopt;
  const at::Tensor x0 = c.Input(0);
  int64_t terms = 1;
  if (inside) {
    for (const auto& [name, t] : c.inputs) {
      if (t.defined()) terms = std::max<int64_t>(terms, t.numel());
    }
  } else if (matmul && x0.defined()) {
    terms = x0.dim() == 0 ? 1 : x0.size(-1) + (c.spec.rule == ops::Rule::kLinear ? 1 : 0);
  } else if (matmul) {
    // A tensor list (chain_matmul, multi_dot): at most the largest input's size.
    for (const auto& [name, t] : c.inputs) {
      if (t.defined()) terms = std::max<int64_t>(terms, t.numel());
    }
  } else if (c.spec.rule == ops::Rule::kDimwise) {
    const int64_t dim = IntArgOr(c.node, 1, "dim", 0);
    terms = x0.dim() == 0 ? 1 : x0.size(dim < 0 ? dim + x0.dim() : dim);
  } else {
    terms = std::max<int64_t>(1, x0.numel() / std::max<int64_t>(1, ya.numel()));
  }
  // A variance accumulated in the dtype (CUDA's float Welford) is off by up
  // to about 2 n eps kappa var, kappa = sqrt(sum x^2 / S) (Chan, Golub and
  // LeVeque): large where the mean dwarfs the spread. With sum x^2 <= n
  // max|x|^2 that is the bound below with sum|terms| = sqrt(n) max|x| sigma
  // for the variance and sqrt(n) max|x| / 2 for the standard deviation.
  // (Judged on the H100: var_mean of three values near 1e15, CUDA 75% off
  // within n kappa eps, had been filed as a CUDA bug.)
  if (c.d.output_index == 0 && (c.spec.hints & ops::kSquaresInside) && x0.defined() &&
      at::isFloatingType(x0.scalar_type()) && x0.numel() > 0) {
    absl::string_view base = c.spec.name;
    absl::ConsumePrefix(&base, "aten::");
    const bool std_dev = absl::StartsWith(base, "std");
    if (std_dev || absl::StartsWith(base, "var")) {
      const double largest = FiniteAbsMax(x0);
      const double root_n = std::sqrt(static_cast<double>(terms));
      const at::Tensor kappa_terms =
          std_dev ? at::full_like(sum_abs, root_n * largest / 2)
                  : at::maximum(ya.abs(), yb.abs()).sqrt().mul(root_n * largest);
      sum_abs = at::maximum(sum_abs, kappa_terms);
    }
  }
  if (split) {
    // Where sum|terms| exceeds the dtype's range, whether a partial sum
    // overflows (inf, or inf - inf = nan) depends on the order of summation.
    // (A NaN term makes every order NaN: that is no excuse.)
    bool overflow_possible =
        at::logical_or(sum_abs.gt(graph::MaxFinite(c.dtype)), at::isinf(sum_abs)).any().item<bool>();
    // A mean, an average or a trapezoid sums its raw inputs before it scales
    // them: their sum|x| bounds that intermediate, though sum|terms| (terms
    // already scaled) fits.
    for (const auto& [name, t] : c.inputs) {
      if (overflow_possible || !t.defined() || !at::isFloatingType(t.scalar_type())) continue;
      const at::Tensor a = t.abs();
      overflow_possible = a.masked_select(at::isfinite(a)).sum().item<double>() > graph::MaxFinite(c.dtype);
    }
    if (!overflow_possible) return std::nullopt;
    return RuleMatch{
        "cancelling_reductions",
        absl::StrCat("sum|terms| exceeds the range of ", std::string(graph::DTypeName(c.dtype)),
                     ": partial sums overflow or not depending on summation order")};
  }
  const double eps = graph::Epsilon(c.dtype);
  const at::Tensor bound = sum_abs.mul(2.0 * terms * eps);
  const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
  const at::Tensor diff = ya.sub(yb).abs();
  const at::Tensor ok =
      at::logical_or(diff.le(bound.add(tol.atol)), at::isfinite(diff).logical_not());
  if (!at::all(ok).item<bool>()) return std::nullopt;
  return RuleMatch{"cancelling_reductions",
                   absl::StrCat("|A - B| is within 2 n eps sum|terms| (n = ", terms,
                                inside ? ", at most the largest input's size" : "",
                                "), the rounding bound of any summation order")};
}

// Products (prod, cumprod): any multiplication order is correct. Where the
// factors above 1 multiply past the dtype's range, or those below 1 past its
// smallest subnormal, an intermediate over- or underflows in some orders and
// not in others; otherwise orders differ by up to about n * eps relatively.
std::optional<RuleMatch> ProductOrder(const Context& c) {
  if (!(c.spec.hints & ops::kProductReduction) || !graph::IsFloating(c.dtype)) {
    return std::nullopt;
  }
  const bool split = c.d.cls == DivergenceClass::kClassSplit;
  if (c.d.cls != DivergenceClass::kTolerance && !split) return std::nullopt;
  const at::Tensor x = c.Input(0);
  if (!x.defined() || x.numel() == 0) return std::nullopt;
  // log2 of every factor's magnitude; zeros and non-finite factors count as 1
  // here (a zero makes the exact product 0; nan and inf are classes of their own).
  at::Tensor lg = at::abs(x).log2();
  lg = at::where(at::isfinite(lg), lg, at::zeros_like(lg));
  at::Tensor up = lg.clamp_min(0), down = lg.clamp_max(0);
  int64_t terms = x.numel();
  const int64_t dims = std::max<int64_t>(1, x.dim());
  if (c.spec.rule == ops::Rule::kReduceAll) {
    up = up.sum(), down = down.sum();
  } else {
    int64_t dim = IntArgOr(c.node, 1, "dim", 0);
    dim = dim < 0 ? dim + dims : dim;
    if (x.dim() > 0) {
      terms = x.size(dim);
      if (c.spec.rule == ops::Rule::kDimwise) {
        up = up.cumsum(dim), down = down.cumsum(dim);  // every prefix is an output
      } else {
        const bool keepdim =
            ops::FindArg(c.node, 2, "keepdim") != nullptr && ops::FindArg(c.node, 2, "keepdim")->b;
        up = up.sum(dim, keepdim), down = down.sum(dim, keepdim);
      }
    }
  }
  const double top = std::log2(graph::MaxFinite(c.dtype));
  const double bottom = std::log2(graph::DenormMin(c.dtype));
  const at::Tensor risky = at::logical_or(up.gt(top), down.lt(bottom)).reshape(-1);
  const int64_t element = c.d.element;
  const bool at_element = element >= 0 && element < risky.numel() ? risky[element].item<bool>()
                                                                  : risky.any().item<bool>();
  if (at_element) {
    return RuleMatch{"cancelling_reductions",
                     absl::StrCat("the factors' magnitudes span past the range of ",
                                  std::string(graph::DTypeName(c.dtype)),
                                  ": partial products over- or underflow depending on the "
                                  "order of multiplication")};
  }
  if (split) return std::nullopt;
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes()) return std::nullopt;
  const double eps = graph::Epsilon(c.dtype);
  const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
  const at::Tensor bound = yb.abs().mul(2.0 * terms * eps).add(tol.atol);
  const at::Tensor ok =
      at::logical_or(ya.sub(yb).abs().le(bound), at::isfinite(ya.sub(yb)).logical_not());
  if (!at::all(ok).item<bool>()) return std::nullopt;
  return RuleMatch{"cancelling_reductions",
                   absl::StrCat("|A - B| <= 2 n eps |B| (n = ", terms,
                                "), the rounding bound of any multiplication order")};
}

// Floating inputs of the root, as side A had them: which non-finite kinds.
struct NonFinite {
  bool nan = false, pos_inf = false, neg_inf = false;
  bool Any() const { return nan || pos_inf || neg_inf; }
};
NonFinite ScanNonFinite(const Context& c) {
  NonFinite n;
  for (const auto& [name, t] : c.inputs) {
    if (!t.defined() || t.numel() == 0) continue;
    at::Tensor v = t;
    if (v.is_complex()) v = at::view_as_real(v.contiguous());
    if (!at::isFloatingType(v.scalar_type())) continue;
    n.nan = n.nan || at::isnan(v).any().item<bool>();
    n.pos_inf = n.pos_inf || v.eq(std::numeric_limits<double>::infinity()).any().item<bool>();
    n.neg_inf = n.neg_inf || v.eq(-std::numeric_limits<double>::infinity()).any().item<bool>();
  }
  return n;
}

// PyTorch's notes: the libraries behind linear algebra, FFTs and matrix
// products give no guarantee for non-finite inputs, in any failure class; an
// exponential normalizer subtracts its max (inf - inf). Plain sums only
// depend on the order with infinities of both signs (NaN must propagate).
// Whether a blamed side returned a finite value at the diverging element
// where the witness computed from its own inputs is NaN.
bool BlamedFiniteWhereWitnessIsNan(const Context& c) {
  auto parse = [](const std::string& text) -> std::optional<double> {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str()) return std::nullopt;
    return v;
  };
  bool any = false;
  for (int side = 0; side < 2; ++side) {
    const exec::RunResult& run = side == 0 ? c.a : c.b;
    if (c.d.wrong_side != "both" && c.d.wrong_side != exec::TargetName(run.target)) continue;
    const std::optional<double> value = parse(side == 0 ? c.d.value_a : c.d.value_b);
    const std::optional<double> ref = parse(side == 0 ? c.d.reference_a : c.d.reference_b);
    if (!value || !ref || !std::isfinite(*value) || !std::isnan(*ref)) return false;
    any = true;
  }
  return any;
}

std::optional<RuleMatch> NonFiniteInputs(const Context& c) {
  if (!(c.spec.hints & ops::kNoNonFiniteGuarantee)) return std::nullopt;
  const NonFinite n = ScanNonFinite(c);
  if (!n.Any()) return std::nullopt;
  const uint32_t backend = ops::kConditioned | ops::kDecomposition | ops::kInfoGated |
                           ops::kTransform | ops::kCancellingMatmul | ops::kTf32Sensitive;
  const bool library = (c.spec.hints & backend) || c.spec.family == "linalg" ||
                       c.spec.family == "decomposition" || c.spec.family == "fft" ||
                       c.spec.family == "matmul" || c.spec.family == "conv";
  const std::string what =
      absl::StrCat(n.nan ? "NaN" : "", n.nan && (n.pos_inf || n.neg_inf) ? " and " : "",
                   n.pos_inf && n.neg_inf ? "+-inf" : n.pos_inf ? "+inf" : n.neg_inf ? "-inf" : "");
  // A NaN term makes a sum, a dot product or a normalizer NaN in every
  // order: outside linear algebra and transforms, a side that returns a
  // finite value where the agreeing witnesses say NaN is not excused (CPU
  // flash attention zero-filling a NaN row).
  const bool linalg = (c.spec.hints & (ops::kConditioned | ops::kDecomposition | ops::kInfoGated |
                                       ops::kTransform)) ||
                      c.spec.family == "linalg" || c.spec.family == "decomposition" ||
                      c.spec.family == "fft";
  if (!linalg && n.nan && !n.pos_inf && !n.neg_inf && BlamedFiniteWhereWitnessIsNan(c)) {
    return std::nullopt;
  }
  if (library) {
    return RuleMatch{"nonfinite_inputs",
                     absl::StrCat("the input holds ", what, ": PyTorch gives no guarantee for "
                                  "non-finite inputs to linear algebra, FFTs and matrix products")};
  }
  const bool plain_sum = c.spec.hints & (ops::kCancellingReduction | ops::kProductReduction);
  if (plain_sum ? (n.pos_inf && n.neg_inf) : (n.pos_inf || n.neg_inf)) {
    return RuleMatch{"nonfinite_inputs",
                     absl::StrCat("the input holds ", what, ": ",
                                  plain_sum ? "inf - inf appears or not depending on the order"
                                            : "the op's intermediate (a max subtracted, a mean "
                                              "removed) turns inf into inf - inf or not "
                                              "depending on the algorithm")};
  }
  return std::nullopt;
}

// "Extremal values" (PyTorch's numerical-accuracy notes): a square, product
// or quotient inside the op overflows (or all squares underflow) in the
// accumulate dtype (float for f16/bf16/f32, double for f64) though the
// result fits; linear algebra scales by values near the maximum.
std::optional<RuleMatch> ExtremalValues(const Context& c) {
  if (c.d.cls != DivergenceClass::kTolerance && c.d.cls != DivergenceClass::kClassSplit) {
    return std::nullopt;
  }
  // The result sits at the overflow threshold: within 2 eps of the largest
  // finite value, so an accurate kernel (CUDA's hypot is within 2 ulp) may
  // round it to inf. Not for IEEE's correctly rounded operations, nor for
  // sums, products and scans, whose rounding has its own bound.
  const uint32_t own_bound = ops::kCorrectlyRounded | ops::kSumsInside | ops::kCancellingReduction |
                             ops::kCancellingMatmul | ops::kProductReduction | ops::kScanCarry;
  if (c.d.cls == DivergenceClass::kClassSplit && graph::IsFloating(c.dtype) &&
      !(c.spec.hints & own_bound)) {
    for (const std::string* ref : {&c.d.reference_a, &c.d.reference_b}) {
      char* end = nullptr;
      const double r = std::strtod(ref->c_str(), &end);
      const double top = graph::MaxFinite(c.dtype);
      if (end != ref->c_str() && std::isfinite(r) && std::fabs(r) >= top * (1 - 2 * graph::Epsilon(c.dtype)) &&
          (std::isinf(std::strtod(c.d.value_a.c_str(), nullptr)) ||
           std::isinf(std::strtod(c.d.value_b.c_str(), nullptr)))) {
        return RuleMatch{"extremal_values",
                         absl::StrCat("the exact result ", *ref, " lies within 2 eps of ",
                                      std::string(graph::DTypeName(c.dtype)),
                                      "'s largest value: a kernel within its documented ulp error "
                                      "may round it to inf")};
      }
    }
  }
  const bool squares = (c.spec.hints & ops::kSquaresInside) ||
                       ((c.spec.hints & ops::kComplexSquares) && graph::IsComplex(c.dtype));
  const bool linalg = (c.spec.hints & (ops::kConditioned | ops::kDecomposition)) ||
                      c.spec.family == "linalg" || c.spec.family == "decomposition";
  // Ops that multiply two of their inputs inside (matrix products,
  // convolutions, attention's q·k, an RNN cell's x·W): two or more floating
  // tensor arguments.
  int floating_args = 0;
  for (DType d : c.ArgDTypes()) floating_args += graph::IsFloating(d) || graph::IsComplex(d);
  const bool products =
      (c.spec.hints & (ops::kSumsInside | ops::kCancellingMatmul | ops::kMultipliesInputs)) &&
      floating_args >= 2;
  double scale = c.spec.inside_scale;
  if (c.spec.inside_scale_pow10_arg >= 0) {
    const Literal* d = ops::FindArg(c.node, c.spec.inside_scale_pow10_arg, "decimals");
    scale = d != nullptr && d->kind == Literal::Kind::kInt ? std::pow(10.0, std::abs(static_cast<double>(d->i)))
                                                           : 0;
  }
  if (!squares && !linalg && !products && scale <= 0) return std::nullopt;
  double big = 0, second = 0;  // the two largest inputs' largest finite |x|
  int64_t n = 1;
  for (const auto& [name, t] : c.inputs) {
    if (!t.defined() || t.numel() == 0) continue;
    at::Tensor v = t.is_complex() ? at::view_as_real(t.contiguous()) : t;
    if (!at::isFloatingType(v.scalar_type())) continue;
    const at::Tensor a = v.abs();
    const at::Tensor finite = a.masked_select(at::isfinite(a));
    if (finite.numel() == 0) continue;
    const double m = finite.max().item<double>();
    second = std::max(second, std::min(big, m));
    big = std::max(big, m);
    n = std::max<int64_t>(n, t.dim() > 0 ? t.size(-1) : 1);
  }
  // One tensor passed twice (matmul(x, x)) multiplies by itself.
  if (products && second == 0) second = big;
  const bool f64 = c.dtype == DType::kF64 || c.dtype == DType::kC128;
  const double acc_max = f64 ? std::numeric_limits<double>::max() : std::numeric_limits<float>::max();
  const char* acc = f64 ? "float64" : "float32";
  if (scale > 0 && c.d.cls == DivergenceClass::kClassSplit && big * scale > acc_max) {
    return RuleMatch{"extremal_values",
                     absl::StrCat("max|x| = ", graph::FormatFloat(big), ": the kernel's ",
                                  graph::FormatFloat(scale), "·x overflows ", acc,
                                  " inside the op though the result may fit")};
  }
  if (products && big * second > acc_max) {
    return RuleMatch{"extremal_values",
                     absl::StrCat("max|x| = ", graph::FormatFloat(big), " and ",
                                  graph::FormatFloat(second), " in two inputs: their product "
                                  "overflows ", acc, " inside the op though the result may fit")};
  }
  // A p-norm (renorm, norm(p=3)) raises |x| to p, not 2.
  double power = 2;
  if (squares) {
    for (const char* name : {"p", "ord"}) {
      const Literal* l = ops::FindArg(c.node, 1, name);
      const double v = l == nullptr ? 0
                       : l->kind == Literal::Kind::kFloat ? l->f
                       : l->kind == Literal::Kind::kInt   ? static_cast<double>(l->i)
                                                          : 0;
      if (std::isfinite(v) && v > power) power = v;
    }
  }
  if (squares && big > 0 && power * std::log(big) > std::log(acc_max)) {
    return RuleMatch{"extremal_values",
                     absl::StrCat("max|x| = ", graph::FormatFloat(big), ": its ",
                                  power == 2 ? std::string("square") : absl::StrCat("power ", power),
                                  " overflows ", acc, " inside the op though the result may fit")};
  }
  if (squares && big > 0 && big * big < graph::SmallestNormal(f64 ? DType::kF64 : DType::kF32)) {
    return RuleMatch{"extremal_values",
                     absl::StrCat("max|x| = ", graph::FormatFloat(big), ": every square underflows ",
                                  acc, " inside the op")};
  }
  if (linalg && big > acc_max / (4.0 * static_cast<double>(n))) {
    return RuleMatch{"extremal_values",
                     absl::StrCat("max|x| = ", graph::FormatFloat(big), " is within a factor 4n of ",
                                  acc, "'s maximum: elimination and scaling overflow or not "
                                  "depending on the algorithm")};
  }
  return std::nullopt;
}

// A float argument an op casts to int64 inside (the orthogonal polynomials'
// n): undefined for non-finite values and beyond 2^63 (x86 gives INT64_MIN,
// CUDA saturates).
std::optional<RuleMatch> InternalIntCast(const Context& c) {
  if (!(c.spec.hints & ops::kInternalIntCast) || c.spec.int_cast_arg < 0) return std::nullopt;
  const size_t pos = static_cast<size_t>(c.spec.int_cast_arg);
  if (pos >= c.node.args.size()) return std::nullopt;
  const Literal& l = c.node.args[pos].value;
  at::Tensor n;
  if (l.kind == Literal::Kind::kValue) {
    n = c.Input(pos);
  } else if (l.kind == Literal::Kind::kFloat) {
    n = at::scalar_tensor(l.f, at::kDouble);
  }
  if (!n.defined() || !at::isFloatingType(n.scalar_type())) return std::nullopt;
  const at::Tensor bad =
      at::logical_or(at::isfinite(n).logical_not(), n.abs().ge(9223372036854775808.0));
  const int64_t count = bad.sum().item<int64_t>();
  if (count == 0) return std::nullopt;
  return RuleMatch{"float_to_int_casts",
                   absl::StrCat(count, " value(s) of the argument ", c.node.op,
                                " casts to int64 inside are non-finite or beyond 2^63: the cast is "
                                "undefined behaviour in C++")};
}

// FFTs: the error is normwise, about c log2(N) eps ||X||_2 (Higham 24.1),
// so one element may be far off relatively where the output is small.
std::optional<RuleMatch> TransformNormwise(const Context& c) {
  if (!(c.spec.hints & ops::kTransform) || (c.d.cls != DivergenceClass::kTolerance &&
                                            c.d.cls != DivergenceClass::kClassSplit)) {
    return std::nullopt;
  }
  auto real = [](at::Tensor t) {
    if (!t.defined()) return t;
    if (t.is_complex()) t = at::view_as_real(t.contiguous());
    return F64(t);
  };
  if (c.d.cls == DivergenceClass::kClassSplit) {
    // An output's terms may add up past the dtype's range inside the
    // butterflies (then inf - inf is NaN) whenever sum|x| does, although the
    // exact output fits: PyTorch's "extremal values" note.
    const at::Tensor x = real(c.Input(0));
    const DType part = c.dtype == DType::kC64    ? DType::kF32
                       : c.dtype == DType::kC128 ? DType::kF64
                                                 : c.dtype;
    if (!x.defined() || !at::all(at::isfinite(x)).item<bool>()) return std::nullopt;
    // A butterfly's complex products and sums reach up to about
    // sqrt(2)·sum|x|, so within a factor of 2 of the range is enough (on the
    // H100 cuFFT gave NaN for an ifft holding -DBL_MAX beside values near 1,
    // whose sum|x| rounds to DBL_MAX itself).
    const double l1 = x.abs().sum().item<double>();
    if (!(2 * l1 > graph::MaxFinite(part))) return std::nullopt;
    return RuleMatch{"transform_normwise",
                     absl::StrCat("sum|x| = ", graph::FormatFloat(l1), " is within a factor of 2 "
                                  "of ", std::string(graph::DTypeName(part)),
                                  "'s largest value: a transform's intermediate sums and twiddle "
                                  "products may overflow (then inf - inf is NaN) though the exact "
                                  "output fits")};
  }
  const at::Tensor ya = real(Context::Output(c.a, c.d.node_index, c.d.output_index));
  const at::Tensor yb = real(Context::Output(c.b, c.d.node_index, c.d.output_index));
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || ya.numel() == 0) {
    return std::nullopt;
  }
  int64_t n = 2;
  for (const auto& [name, t] : c.inputs) {
    if (t.defined()) n = std::max<int64_t>(n, t.numel());
  }
  const DType real_dtype = c.dtype == DType::kC64 ? DType::kF32
                           : c.dtype == DType::kC128 ? DType::kF64
                                                     : c.dtype;
  const double norm = std::max(at::linalg_vector_norm(ya).item<double>(),
                               at::linalg_vector_norm(yb).item<double>());
  const double bound = 8.0 * std::log2(static_cast<double>(n)) * graph::Epsilon(real_dtype) * norm +
                       c.policy.For(c.node.QualifiedName(), c.dtype).atol;
  const double diff = ya.sub(yb).abs().max().item<double>();
  if (!(diff <= bound)) return std::nullopt;
  return RuleMatch{"transform_normwise",
                   absl::StrCat("max|A - B| = ", graph::FormatFloat(diff),
                                " <= 8 log2(N) eps ||X||_2 = ", graph::FormatFloat(bound),
                                " (N = ", n, "): an FFT's error bound is normwise")};
}

// A scan that carries its running value in the dtype: position k may be off
// by about k eps relative to |y| + 1 where the other side carries it wider.
std::optional<RuleMatch> ScanCarry(const Context& c) {
  if (!(c.spec.hints & ops::kScanCarry) || (c.d.cls != DivergenceClass::kTolerance &&
                                            c.d.cls != DivergenceClass::kClassSplit)) {
    return std::nullopt;
  }
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  const at::Tensor x = c.Input(0);
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || !x.defined()) {
    return std::nullopt;
  }
  // The scan's length: at most the output's largest dim (vander's N columns
  // are not a dim argument of its input).
  int64_t n = 1;
  for (int64_t s : ya.sizes()) n = std::max(n, s);
  const at::Tensor bound = yb.abs().add(1).mul(2.0 * n * graph::Epsilon(c.dtype));
  const at::Tensor both_finite = at::logical_and(at::isfinite(ya), at::isfinite(yb));
  at::Tensor ok = at::logical_or(ya.sub(yb).abs().le(bound), both_finite.logical_not());
  if (c.d.cls == DivergenceClass::kClassSplit) {
    // inf on one side, finite on the other: expected only where the finite
    // value is within the carry's bound of the dtype's largest value (the
    // exact result sits at the overflow threshold; rounding decides the side).
    const at::Tensor fa = at::isfinite(ya), fb = at::isfinite(yb);
    const at::Tensor one_inf = at::logical_xor(fa, fb).logical_and(
        at::logical_or(at::isinf(ya), at::isinf(yb)));
    const at::Tensor finite = at::where(fa, ya, yb).abs();
    const at::Tensor near_max =
        finite.add(finite.add(1).mul(2.0 * n * graph::Epsilon(c.dtype))).ge(graph::MaxFinite(c.dtype));
    const at::Tensor nan_split = at::logical_xor(at::isnan(ya), at::isnan(yb));
    if (at::any(nan_split).item<bool>() ||
        !at::all(at::logical_or(one_inf.logical_not(), near_max)).item<bool>()) {
      return std::nullopt;
    }
    ok = at::logical_or(ok, one_inf);
  }
  if (!at::all(ok).item<bool>()) return std::nullopt;
  if (c.d.cls == DivergenceClass::kClassSplit) {
    return RuleMatch{"scan_carry",
                     absl::StrCat("inf against a finite value within 2 n eps (|y| + 1) of ",
                                  std::string(graph::DTypeName(c.dtype)), "'s largest value (n = ",
                                  n, "): a running value carried in the dtype decides which side "
                                  "of the overflow threshold it lands")};
  }
  return RuleMatch{"scan_carry", absl::StrCat("|A - B| <= 2 n eps (|B| + 1) (n = ", n,
                                              "): one side carries the running value in ",
                                              std::string(graph::DTypeName(c.dtype)))};
}

std::optional<RuleMatch> ScalarRounding(const Context& c) {
  if (!c.d.scalar_rounding) return std::nullopt;
  return RuleMatch{"scalar_rounding",
                   absl::StrCat("a side matches the reference once the number literal is rounded "
                                "to ", c.d.dtype, " first: eager PyTorch rounds Python scalars to "
                                "the tensor's dtype on some paths")};
}

// PyTorch does not specify the strides of most ops' outputs (an FFT's differ
// per device), so a view() of them may work on one device only.
std::optional<RuleMatch> UnspecifiedStrides(const Context& c) {
  if (c.d.cls != DivergenceClass::kErrorSplit) return std::nullopt;
  auto says = [&](const exec::RunResult& r) {
    if (c.d.node_index < 0 || static_cast<size_t>(c.d.node_index) >= r.nodes.size()) return false;
    const auto& e = r.nodes[c.d.node_index].error;
    return e && absl::StrContains(e->message, "view size is not compatible with input tensor's size and stride");
  };
  if (!says(c.a) && !says(c.b)) return std::nullopt;
  return RuleMatch{"unspecified_strides",
                   "view() needs strides PyTorch does not specify for this input (they differ per "
                   "device); reshape() is the portable spelling"};
}

// An argument value documented as unsupported on the raising side's device
// (ops/kernel_classes.cc: lstsq's driver on CUDA, svd's driver on the CPU).
std::optional<RuleMatch> DeviceArgumentRule(const Context& c) {
  if (c.d.cls != DivergenceClass::kErrorSplit || c.spec.device_argument == nullptr ||
      c.d.node_index < 0) {
    return std::nullopt;
  }
  const ops::DeviceArgument& da = *c.spec.device_argument;
  const Literal* value = ops::FindArg(c.node, 1000, da.name);
  if (value == nullptr || value->kind != Literal::Kind::kString) return std::nullopt;
  auto raised = [&](const exec::RunResult& r) {
    return static_cast<size_t>(c.d.node_index) < r.nodes.size() &&
           r.nodes[c.d.node_index].error.has_value();
  };
  const exec::RunResult* side = raised(c.a) ? &c.a : raised(c.b) ? &c.b : nullptr;
  if (side == nullptr) return std::nullopt;
  const bool cuda = side->target == exec::Target::kCuda || side->target == exec::Target::kCudaF64;
  const std::vector<absl::string_view> takes = absl::StrSplit(cuda ? da.cuda : da.cpu, ',',
                                                              absl::SkipEmpty());
  if (std::find(takes.begin(), takes.end(), value->s) != takes.end()) return std::nullopt;
  return RuleMatch{"device_argument",
                   absl::StrCat(da.name, "='", value->s, "' is not supported on ",
                                exec::TargetName(side->target), ": ", da.why)};
}

// Outside its documented domain an op's behaviour is undefined by PyTorch's
// own documentation (torch.mvlgamma: "otherwise the behavior is undefined").
std::optional<RuleMatch> DocumentedDomain(const Context& c) {
  const ops::OpSpec::DocumentedDomain& dom = c.spec.documented_domain;
  if (dom.arg < 0) return std::nullopt;
  const Literal* p = ops::FindArg(c.node, static_cast<size_t>(dom.arg), "p");
  const at::Tensor x = c.Input(0);
  if (p == nullptr || p->kind != Literal::Kind::kInt || !x.defined()) return std::nullopt;
  const double bound = dom.scale * static_cast<double>(p->i) + dom.offset;
  const int64_t outside = F64(x).gt(bound).logical_not().sum().item<int64_t>();
  if (outside == 0) return std::nullopt;
  return RuleMatch{"documented_domain",
                   absl::StrCat(outside, " input value(s) are not greater than ",
                                graph::FormatFloat(bound), ", outside the domain PyTorch documents "
                                "for ", c.node.op, ": the behaviour is undefined there")};
}

// An oscillatory kernel forms its phase in the dtype: a relative rounding
// of eps there is an absolute error of eps·phase in the argument of its
// cos/sin, which the result carries times its amplitude.
std::optional<RuleMatch> PhaseRounding(const Context& c) {
  if ((c.d.cls != DivergenceClass::kTolerance && c.d.cls != DivergenceClass::kClassSplit) ||
      !graph::IsFloating(c.dtype)) {
    return std::nullopt;
  }
  const std::optional<PhaseBound> ph = PhaseBoundOf(c.spec, c.node, c.inputs, c.dtype);
  if (!ph) return std::nullopt;
  const double phase = ph->phase;
  const bool f64 = c.dtype == DType::kF64;
  const double acc_max = f64 ? std::numeric_limits<double>::max() : std::numeric_limits<float>::max();
  if (c.d.cls == DivergenceClass::kClassSplit) {
    if (!(phase > acc_max)) return std::nullopt;
    return RuleMatch{"phase_rounding",
                     absl::StrCat("the kernel's phase ", graph::FormatFloat(phase),
                                  " exceeds the dtype's range: its cos/sin is NaN")};
  }
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || ya.is_complex()) {
    return std::nullopt;
  }
  const at::Tensor amplitude = at::maximum(ya.abs(), yb.abs()).clamp_min(ph->floor);
  const at::Tensor bound = amplitude.mul(2 * ph->eps * phase);
  const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
  const at::Tensor diff = ya.sub(yb).abs();
  if (!at::all(at::logical_or(diff.le(bound.add(tol.atol)), at::isfinite(diff).logical_not()))
           .item<bool>()) {
    return std::nullopt;
  }
  return RuleMatch{"phase_rounding",
                   absl::StrCat("|A - B| is within 2 eps·phase·amplitude: the kernel forms a phase "
                                "up to ", graph::FormatFloat(phase),
                                " in the dtype, and its rounding moves the result that much")};
}

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

// The float64 reference target is a side here, and its upcast changed the
// call (exec::UpcastChangesCall), or the reference is blamed for an input
// past its dtype's range (InputBeyondItsDType): the sides did not run the
// same call.
std::optional<RuleMatch> ReferenceUpcast(const Context& c) {
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

// Normalizations divide by statistics they compute: an error d in the mean
// (at most 2 n eps max|x| in any summation order) moves the output by
// d |w| / sigma, and sigma >= sqrt(eps_arg).
std::optional<RuleMatch> NormalizationStatistics(const Context& c) {
  if (!(c.spec.hints & ops::kNormalizes) || c.d.cls != DivergenceClass::kTolerance) {
    return std::nullopt;
  }
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  const at::Tensor x = c.Input(0);
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || !x.defined() ||
      !at::isFloatingType(x.scalar_type())) {
    return std::nullopt;
  }
  // Over finite values: a NaN in one channel (its outputs NaN on both sides)
  // made every bound NaN, and a CPU rounding in another channel a bug (H100).
  double w = 1;
  int64_t n = 1;
  for (const auto& [name, t] : c.inputs) {
    if (!t.defined() || t.numel() == 0) continue;
    n = std::max<int64_t>(n, t.numel());
    if (name != c.node.args[0].value.s && at::isFloatingType(t.scalar_type())) {
      w = std::max(w, FiniteAbsMax(t));
    }
  }
  const Literal* eps_arg = ops::FindArg(c.node, 1000, "eps");
  const double eps_value =
      eps_arg != nullptr && eps_arg->kind == Literal::Kind::kFloat && eps_arg->f > 0 ? eps_arg->f
                                                                                    : 1e-5;
  const double big = FiniteAbsMax(x);
  const double bound = 4.0 * n * graph::Epsilon(c.dtype) * big * w / std::sqrt(eps_value) +
                       c.policy.For(c.node.QualifiedName(), c.dtype).atol;
  // A tolerance divergence: where one side is not finite the other is the
  // same class, so the finite differences are all there is to bound.
  const double diff = FiniteAbsMax(ya.to(at::kDouble).sub(yb.to(at::kDouble)));
  if (!(diff <= bound)) return std::nullopt;
  return RuleMatch{"normalization_statistics",
                   absl::StrCat("max|A - B| = ", graph::FormatFloat(diff),
                                " <= 4 n eps max|x| max(|w|, 1) / sqrt(eps) = ",
                                graph::FormatFloat(bound), " (n = ", n,
                                "): the statistics' rounding, amplified by 1/sigma")};
}

// An elementwise op at an ill-conditioned point: the blamed side's value is
// the op's float64 value at inputs within one eps of its own (its rounding
// is what any backward-stable kernel may do; cancellation amplifies it).
std::optional<RuleMatch> BackwardStable(const Context& c) {
  if (c.d.cls != DivergenceClass::kTolerance) return std::nullopt;
  const uint32_t not_elementwise = ops::kSumsInside | ops::kTransform | ops::kConditioned |
                                   ops::kDecomposition | ops::kScanCarry | ops::kProductReduction |
                                   ops::kCancellingReduction | ops::kCancellingMatmul |
                                   ops::kIndicesOutput | ops::kNormalizes | ops::kInfoGated;
  const bool elementwise = c.spec.rule == ops::Rule::kUnary || c.spec.rule == ops::Rule::kBinary ||
                           c.spec.rule == ops::Rule::kUnaryScalar ||
                           (c.spec.rule == ops::Rule::kGeneric && !(c.spec.hints & not_elementwise));
  // Ops with an exact witness are judged against it: IEEE arithmetic must be
  // correctly rounded, and the library functions are accurate to a few ulps
  // of the result whatever their conditioning.
  // (Where the exact witness decided: some, like polygamma's, know only a few points.)
  if (!elementwise || c.d.wrong_side == "undecided" || c.d.witness == "exact") return std::nullopt;
  std::vector<const exec::RunResult*> blamed;
  if (c.d.wrong_side == "both" || c.d.wrong_side == exec::TargetName(c.a.target)) blamed.push_back(&c.a);
  if (c.d.wrong_side == "both" || c.d.wrong_side == exec::TargetName(c.b.target)) blamed.push_back(&c.b);
  if (blamed.empty()) return std::nullopt;
  for (const exec::RunResult* run : blamed) {
    const at::Tensor got = F64(Context::Output(*run, c.d.node_index, c.d.output_index));
    const exec::RunResult& other = run == &c.a ? c.b : c.a;
    const at::Tensor theirs = F64(Context::Output(other, c.d.node_index, c.d.output_index));
    if (!got.defined() || !theirs.defined() || got.sizes() != theirs.sizes() || got.is_complex()) {
      return std::nullopt;
    }
    // Every corner of the box x (1 +- 4 eps): a few roundings inside the
    // kernel (pi x, a reflection) move its argument by a few eps, the
    // backward error allowed.
    const auto box = exec::InputBoxWitness(
        c.node, NodeInputs(c.program, c.d.node_index, *run), c.types,
        static_cast<size_t>(c.d.output_index), [](DType dt) { return 4 * graph::Epsilon(dt); });
    if (!box || box->first.sizes() != got.sizes()) return std::nullopt;
    const at::Tensor& lo = box->first;
    const at::Tensor& hi = box->second;
    const Tolerance tol = c.policy.For(c.node.QualifiedName(), c.dtype);
    const at::Tensor differs = got.sub(theirs).abs().gt(theirs.abs().mul(tol.rtol).add(tol.atol));
    const at::Tensor slack = got.abs().mul(tol.rtol).add(tol.atol);
    const at::Tensor inside = at::logical_and(got.ge(lo.sub(slack)), got.le(hi.add(slack)));
    if (!at::all(at::logical_or(differs.logical_not(), inside)).item<bool>()) return std::nullopt;
  }
  return RuleMatch{"backward_stable",
                   "the blamed value is the op's float64 value at inputs within 4 eps of its "
                   "own: an ill-conditioned point amplifies the kernel's own rounding"};
}

std::optional<RuleMatch> DocumentedInexact(const Context& c) {
  if (!(c.spec.hints & ops::kInexactInLowPrecision) ||
      (c.dtype != DType::kF16 && c.dtype != DType::kBF16)) {
    return std::nullopt;
  }
  return RuleMatch{"documented_inexact",
                   absl::StrCat(c.node.QualifiedName(), " is documented as inexact in ",
                                c.d.dtype, " (torch.round: \"fast but inexact and it can easily "
                                "overflow for low precision dtypes\")")};
}

// f16/bf16: one intermediate rounded to the dtype (log_softmax's CPU
// last-dim path keeps its sum in Half) moves the result by about eps
// relative to |B| + 1, where the other side carries it in float32.
std::optional<RuleMatch> ReducedPrecisionIntermediate(const Context& c) {
  // The narrowest floating dtype the op meets: a composite computes some
  // intermediates in an input's dtype before promoting (kl_div's
  // target·log(target), trapezoid's dx = diff(x) in a bf16 x).
  DType narrow = c.dtype;
  for (DType d : c.ArgDTypes()) {
    if ((d == DType::kF16 || d == DType::kBF16) && graph::IsFloating(c.dtype) &&
        graph::Epsilon(d) > graph::Epsilon(narrow)) {
      narrow = d;
    }
  }
  if (!(c.spec.hints & (ops::kSumsInside | ops::kNormalizes)) ||
      (narrow != DType::kF16 && narrow != DType::kBF16) ||
      c.d.cls != DivergenceClass::kTolerance) {
    return std::nullopt;
  }
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  if (!ya.defined() || !yb.defined() || ya.sizes() != yb.sizes() || ya.is_complex()) {
    return std::nullopt;
  }
  const at::Tensor bound = yb.abs().add(1).mul(2.0 * graph::Epsilon(narrow));
  const at::Tensor ok =
      at::logical_or(ya.sub(yb).abs().le(bound), at::isfinite(ya.sub(yb)).logical_not());
  if (!at::all(ok).item<bool>()) return std::nullopt;
  const std::string in(graph::DTypeName(narrow));
  return RuleMatch{"reduced_precision_intermediate",
                   absl::StrCat("|A - B| <= 2 eps (|B| + 1) in ", in,
                                narrow == c.dtype ? "" : " (an input's dtype)",
                                ": one intermediate rounded to ", in, " on one side")};
}

// histc computes an element's bin position (x - min)·bins/(max - min) in
// the dtype (HistogramKernel.cpp): a few roundings there move an element that
// sits within a few eps of an edge into the neighbouring bin. Expected when
// the counts differ by no more than twice the number of such elements.
std::optional<RuleMatch> BinEdges(const Context& c) {
  if (!(c.spec.hints & ops::kBinning) || c.d.cls != DivergenceClass::kTolerance) {
    return std::nullopt;
  }
  const at::Tensor x = c.Input(0);
  const at::Tensor ya = c.OutA(), yb = c.OutB();
  if (!x.defined() || !ya.defined() || !yb.defined() || ya.sizes() != yb.sizes()) {
    return std::nullopt;
  }
  const at::Tensor finite = x.masked_select(at::isfinite(x));
  if (finite.numel() == 0) return std::nullopt;
  auto float_arg = [&](size_t pos, const char* name, double fallback) {
    const Literal* l = ops::FindArg(c.node, pos, name);
    if (l == nullptr) return fallback;
    if (l->kind == Literal::Kind::kFloat) return l->f;
    if (l->kind == Literal::Kind::kInt) return static_cast<double>(l->i);
    return fallback;
  };
  const double bins = static_cast<double>(IntArgOr(c.node, 1, "bins", 100));
  double lo = float_arg(2, "min", 0), hi = float_arg(3, "max", 0);
  if (lo == 0 && hi == 0) {
    lo = finite.min().item<double>();
    hi = finite.max().item<double>();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  if (!(hi > lo) || bins <= 0) return std::nullopt;
  const at::Tensor pos = finite.sub(lo).mul(bins / (hi - lo));
  // A few roundings in the dtype: of pos (relative eps) and of the edges
  // min and max (up to eps·bins in position). In f16/bf16 a position near 100
  // has an ulp of 1/16 or 1/2 itself: the kernel cannot place finer.
  const double eps = graph::Epsilon(c.dtype);
  const at::Tensor edge_distance = pos.sub(pos.round()).abs();
  const int64_t near = edge_distance.le(pos.abs().add(bins).mul(2 * eps)).sum().item<int64_t>();
  const double moved = ya.sub(yb).abs().sum().item<double>();
  // Elements moved between bins, none lost or gained.
  if (near == 0 || moved > 2.0 * static_cast<double>(near) ||
      ya.sum().item<double>() != yb.sum().item<double>()) {
    return std::nullopt;
  }
  return RuleMatch{"reduced_precision_intermediate",
                   absl::StrCat(near, " element(s) lie within a few eps of a bin edge: histc "
                                      "computes the bin position in ",
                                c.d.dtype, ", and its rounding puts them on either side")};
}

std::optional<RuleMatch> Tf32(const Context& c) {
  if (!c.policy.cuda_tf32 || !(c.spec.hints & ops::kTf32Sensitive)) return std::nullopt;
  if (c.a.target != exec::Target::kCuda && c.b.target != exec::Target::kCuda) return std::nullopt;
  return RuleMatch{"tf32", "CUDA ran with TF32 / reduced-precision reductions enabled"};
}

}  // namespace

// Each side matches a witness (exact or float64) computed from its own
// inputs: the op is right on both, and what differs came in from upstream
// within tolerance (a 1-ulp log1p of a subnormal, a scalar rounded by an
// earlier op), amplified here by the op's condition (a pole, 0/0, tan near
// pi/2). Judged by hand on the H200 and H100, 19 of 19 such buckets were
// expected; the ops upstream keep their own verdicts.
std::optional<RuleMatch> InheritedDifference(const Context& c) {
  if (!c.d.inherited) return std::nullopt;
  return RuleMatch{"inherited_difference",
                   "each side is right for its own inputs: the difference is inherited from "
                   "upstream values within tolerance, amplified by this op"};
}

std::optional<PhaseBound> PhaseBoundOf(const ops::OpSpec& spec, const graph::Node& node,
                                       const std::map<std::string, at::Tensor>& inputs,
                                       DType dtype) {
  const ops::OpSpec::Phase& ph = spec.phase;
  if (ph.arg < 0 || static_cast<size_t>(ph.arg) >= node.args.size()) return std::nullopt;
  const Literal& l = node.args[static_cast<size_t>(ph.arg)].value;
  double v = -1;
  if (l.kind == Literal::Kind::kValue) {
    auto it = inputs.find(l.s);
    if (it == inputs.end() || !it->second.defined() || it->second.numel() == 0) return std::nullopt;
    v = FiniteAbsMax(it->second);
  } else if (l.kind == Literal::Kind::kFloat) {
    v = std::fabs(l.f);
  } else if (l.kind == Literal::Kind::kInt) {
    v = std::fabs(static_cast<double>(l.i));
  }
  if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
  // The kernels compute f16/bf16 in float32.
  return PhaseBound{ph.scale * std::pow(v, ph.power),
                    graph::Epsilon(dtype == DType::kF64 ? DType::kF64 : DType::kF32),
                    ph.amplitude * std::pow(v, ph.amplitude_power)};
}

std::optional<RuleMatch> MatchExpectedRule(const graph::Program& program, const ops::TypeEnv& types,
                                           const exec::RunResult& a, const exec::RunResult& b,
                                           const Policy& policy, const Divergence& d) {
  if (d.node_index < 0 || static_cast<size_t>(d.node_index) >= program.nodes.size()) {
    return std::nullopt;
  }
  const graph::Node& node = program.nodes[d.node_index];
  const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
  if (spec == nullptr) return std::nullopt;
  Context c{program, types, a, b, policy, d, node, *spec, {}, graph::DType::kF32};
  c.dtype = graph::ParseDType(d.dtype).value_or(graph::DType::kF32);
  for (auto& [name, t] : NodeInputs(program, d.node_index, a)) {
    c.inputs[name] = t.defined() && (at::isFloatingType(t.scalar_type())) ? F64(t) : t;
  }
  try {
    const Policy::Rules& r = policy.rules;
    if (r.info_gated) {
      if (auto m = InfoGated(c)) return m;
    }
    if (r.index_ties) {
      if (auto m = IndexTies(c)) return m;
      if (auto m = DuplicateWrites(c)) return m;
    }
    if (r.float_to_int_casts) {
      if (auto m = FloatToIntCast(c)) return m;
      if (auto m = InternalIntCast(c)) return m;
    }
    if (r.nonfinite_inputs) {
      if (auto m = NonFiniteInputs(c)) return m;
    }
    if (r.normwise_backward_error) {
      if (auto m = NormwiseBackwardError(c)) return m;
    }
    if (r.ill_conditioned) {
      if (auto m = IllConditioned(c)) return m;
    }
    if (r.extremal_values) {
      if (auto m = ExtremalValues(c)) return m;
    }
    if (r.cancelling_reductions) {
      if (auto m = CancellingReduction(c)) return m;
      if (auto m = ProductOrder(c)) return m;
    }
    if (r.documented_inexact) {
      if (auto m = DocumentedInexact(c)) return m;
    }
    if (r.normalization_statistics) {
      if (auto m = NormalizationStatistics(c)) return m;
    }
    if (r.backward_stable) {
      if (auto m = BackwardStable(c)) return m;
    }
    if (r.reduced_precision_intermediate) {
      if (auto m = ReducedPrecisionIntermediate(c)) return m;
      if (auto m = BinEdges(c)) return m;
    }
    if (r.transform_normwise) {
      if (auto m = TransformNormwise(c)) return m;
    }
    if (r.scan_carry) {
      if (auto m = ScanCarry(c)) return m;
    }
    if (r.scalar_rounding) {
      if (auto m = ScalarRounding(c)) return m;
    }
    if (r.unspecified_strides) {
      if (auto m = UnspecifiedStrides(c)) return m;
    }
    if (r.device_argument) {
      if (auto m = DeviceArgumentRule(c)) return m;
    }
    if (r.documented_domain) {
      if (auto m = DocumentedDomain(c)) return m;
    }
    if (r.phase_rounding) {
      if (auto m = PhaseRounding(c)) return m;
    }
    if (r.reference_upcast) {
      if (auto m = ReferenceUpcast(c)) return m;
    }
    if (r.tf32) {
      if (auto m = Tf32(c)) return m;
    }
    if (r.inherited_difference) {
      if (auto m = InheritedDifference(c)) return m;
    }
  } catch (const std::exception&) {
    // A rule that cannot be evaluated does not apply.
  }
  return std::nullopt;
}

std::optional<RuleMatch> DocumentedNondeterminism(const graph::Node& node, exec::Target target,
                                                  const Policy& policy) {
  if (!policy.rules.documented_nondeterminism || target != exec::Target::kCuda) {
    return std::nullopt;
  }
  if (!DocumentedNondeterministicOnCuda(node)) return std::nullopt;
  return RuleMatch{"documented_nondeterminism",
                   absl::StrCat(node.op,
                                " on CUDA is documented as nondeterministic "
                                "(torch.use_deterministic_algorithms)")};
}

bool MayVaryBetweenRuns(const graph::Node& node) {
  if (DocumentedNondeterministicOnCuda(node)) return true;
  static const std::set<std::string> kIndexedWrites = {
      "put",     "index_put",    "_index_put_impl", "index_copy",
      "scatter", "max_unpool2d", "max_unpool3d"};
  // Seen varying between identical runs on the CPU: linalg_lstsq's last bits
  // and its rank (its gelsy driver reads its pivot buffer uninitialized,
  // pytorch#187411; exec/malloc_perturb.h).
  static const std::set<std::string> kSeenToVary = {"linalg_lstsq"};
  const std::string base = BaseName(node.op);
  return kIndexedWrites.count(base) > 0 || kSeenToVary.count(base) > 0;
}

void MarkNondeterminism(Divergence& d, const graph::Node& node, exec::Target target,
                        const Policy& policy, const std::string& note) {
  d.cls = DivergenceClass::kNondeterminism;
  d.wrong_side = std::string(exec::TargetName(target));
  d.tier = "divergence";
  d.expected_rule.clear();
  d.reason =
      absl::StrCat(d.wrong_side, " gives different results for the same program twice", note);
  if (std::optional<RuleMatch> m = DocumentedNondeterminism(node, target, policy)) {
    d.tier = "expected";
    d.expected_rule = m->rule;
    absl::StrAppend(&d.reason, ": ", m->reason);
  }
}

}  // namespace divfuzz::oracles
