#include "oracles/invariants.h"

#include <ATen/ops/imag.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/real.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "ops/infer.h"

namespace divfuzz::oracles {

std::vector<at::Tensor> Comparable(const ops::OpSpec* spec,
                                   const std::vector<at::Tensor>& outputs) {
  if (spec == nullptr || !(spec->hints & ops::kDecomposition)) return outputs;
  for (const at::Tensor& t : outputs) {
    if (!t.defined()) return outputs;
  }
  const at::ScalarType dtype = outputs[0].scalar_type();
  auto f64 = [](const at::Tensor& t) {
    return t.to(t.is_complex() ? at::kComplexDouble : at::kDouble);
  };
  std::vector<at::Tensor> inv;
  switch (spec->decomposition) {
    case ops::Decomposition::kQr: {  // Q R = A, and |diag(R)| is unique
      const at::Tensor q = f64(outputs[0]), r = f64(outputs[1]);
      inv = {r.diagonal(0, -2, -1).abs(), q.matmul(r)};
      break;
    }
    case ops::Decomposition::kSvd: {  // U diag(S) Vh = A, and S is unique
      const at::Tensor u = f64(outputs[0]), s = f64(outputs[1]), vh = f64(outputs[2]);
      inv = {s, u.mul(s.unsqueeze(-2)).matmul(vh)};
      break;
    }
    case ops::Decomposition::kSvdV: {  // torch.svd: V, and U and V may be complete
      const int64_t k = outputs[1].size(-1);
      const at::Tensor u = f64(outputs[0]).narrow(-1, 0, k), s = f64(outputs[1]);
      const at::Tensor v = f64(outputs[2]).narrow(-1, 0, k);
      inv = {s, u.mul(s.unsqueeze(-2)).matmul(v.mH())};
      break;
    }
    case ops::Decomposition::kEigh: {  // V diag(w) V^T = sym(A), and w is unique
      const at::Tensor w = f64(outputs[0]), v = f64(outputs[1]);
      inv = {w, v.mul(w.unsqueeze(-2)).matmul(v.mT())};
      break;
    }
    case ops::Decomposition::kLu: {  // P L U = A; pivots may be chosen differently among ties
      inv = {f64(outputs[0]).matmul(f64(outputs[1])).matmul(f64(outputs[2]))};
      break;
    }
    case ops::Decomposition::kEig: {  // the spectrum as a multiset: sorted real and imaginary parts
      const at::Tensor w = outputs[0].to(at::kComplexDouble);
      inv = {std::get<0>(at::real(w).sort(-1)), std::get<0>(at::imag(w).sort(-1))};
      for (at::Tensor& t : inv) {
        t = t.to(dtype == at::kComplexFloat ? at::kFloat : at::kDouble).contiguous();
      }
      return inv;
    }
    default:
      return outputs;
  }
  for (at::Tensor& t : inv) t = t.to(dtype).contiguous();
  return inv;
}

std::string InvariantName(const ops::OpSpec* spec, int i) {
  if (spec == nullptr || !(spec->hints & ops::kDecomposition) || i < 0) return "";
  // In Comparable's order, case by case.
  std::vector<const char*> names;
  switch (spec->decomposition) {
    case ops::Decomposition::kQr:
      names = {"|diag(R)|", "the reconstruction Q·R"};
      break;
    case ops::Decomposition::kSvd:
      names = {"the singular values S", "the reconstruction U·diag(S)·Vh"};
      break;
    case ops::Decomposition::kSvdV:
      names = {"the singular values S", "the reconstruction U·diag(S)·V^H"};
      break;
    case ops::Decomposition::kEigh:
      names = {"the eigenvalues w", "the reconstruction V·diag(w)·V^T"};
      break;
    case ops::Decomposition::kLu:
      names = {"the reconstruction P·L·U"};
      break;
    case ops::Decomposition::kEig:
      names = {"the eigenvalues' real parts, sorted", "the eigenvalues' imaginary parts, sorted"};
      break;
    default:
      break;
  }
  return static_cast<size_t>(i) < names.size() ? names[i] : "";
}

namespace {

// The op's reduced dim, wrapped for x (nullopt when out of range), and
// whether keepdim is set, by the catalogue's positions or by name.
std::optional<std::pair<int64_t, bool>> DimAndKeepdim(const ops::OpSpec& spec,
                                                      const graph::Node& node,
                                                      const at::Tensor& x) {
  auto pos = [](int p) {
    return p < 0 ? std::numeric_limits<size_t>::max() : static_cast<size_t>(p);
  };
  const graph::Literal* d = ops::FindArg(node, pos(spec.dim_pos), "dim");
  int64_t dim = d != nullptr && d->kind == graph::Literal::Kind::kInt ? d->i : -1;
  if (dim < -x.dim() || dim >= x.dim()) return std::nullopt;
  if (dim < 0) dim += x.dim();
  const graph::Literal* keep = ops::FindArg(node, pos(spec.keepdim_pos), "keepdim");
  return std::make_pair(dim, keep != nullptr && keep->kind == graph::Literal::Kind::kBool && keep->b);
}

}  // namespace

size_t IndicesOutput(const ops::OpSpec& spec) {
  return spec.rule == ops::Rule::kArgReduce || (spec.hints & ops::kIndicesFirst) ? 0 : 1;
}

at::Tensor SelectedValues(const ops::OpSpec& spec, const graph::Node& node, const at::Tensor& x,
                          const at::Tensor& indices) {
  if (!x.defined() || !indices.defined() || indices.scalar_type() != at::kLong) return {};
  if (x.dim() == 0) return x;  // one element: every index selects it
  const std::optional<std::pair<int64_t, bool>> dk = DimAndKeepdim(spec, node, x);
  if (!dk) return {};
  const auto [dim, keepdim] = *dk;
  const bool reduces = spec.rule == ops::Rule::kArgReduce ||
                       spec.rule == ops::Rule::kValuesIndices || (spec.hints & ops::kReducesDim);
  at::Tensor i = indices.to(x.device());
  if (reduces && !keepdim) i = i.unsqueeze(dim);
  if (i.dim() != x.dim()) return {};
  try {
    return at::gather(x, dim, i);
  } catch (const std::exception&) {
    return {};
  }
}

std::vector<bool> ModeValuesValid(const ops::OpSpec& spec, const graph::Node& node,
                                  const at::Tensor& x_in, const at::Tensor& values) {
  if (!x_in.defined() || !values.defined() || x_in.dim() == 0 || x_in.is_complex()) return {};
  const at::Tensor x = x_in.to(at::kDouble);
  at::Tensor v = values.to(at::kDouble);
  const std::optional<std::pair<int64_t, bool>> dk = DimAndKeepdim(spec, node, x);
  if (!dk) return {};
  const auto [dim, keepdim] = *dk;
  if (!keepdim) v = v.unsqueeze(dim);
  if (v.dim() != x.dim()) return {};
  const at::Tensor rows = x.movedim(dim, -1).reshape({-1, x.size(dim)}).contiguous();
  const at::Tensor vals = v.movedim(dim, -1).reshape({-1}).contiguous();
  if (vals.numel() != rows.size(0)) return {};
  std::vector<bool> valid;
  for (int64_t r = 0; r < rows.size(0); ++r) {
    const at::Tensor row = rows[r];
    const at::Tensor nan = at::isnan(row);
    const int64_t nans = nan.sum().item<int64_t>();
    int64_t max_grouped = nans, max_each = nans > 0 ? 1 : 0, max_left = 0;
    for (int64_t i = 0; i < row.numel(); ++i) {
      if (nan[i].item<bool>()) continue;
      const int64_t n = row.eq(row[i]).sum().item<int64_t>();
      max_grouped = std::max(max_grouped, n);
      max_each = std::max(max_each, n);
      max_left = std::max(max_left, n);
    }
    const at::Tensor mine = vals[r];
    if (at::isnan(mine).item<bool>()) {
      valid.push_back(nans > 0 && (nans == max_grouped || max_each == 1));
    } else {
      const int64_t n = row.eq(mine).sum().item<int64_t>();
      valid.push_back(n > 0 && (n == max_grouped || n == max_each || n == max_left));
    }
  }
  return valid;
}

}  // namespace divfuzz::oracles
