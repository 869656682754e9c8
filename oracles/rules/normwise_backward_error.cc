// normwise_backward_error: factorizations, spectra and matrix functions judged normwise.
//
// It rests on PyTorch's numerical-accuracy notes
// (https://pytorch.org/docs/stable/notes/numerical_accuracy.html),
// "Extremal values in linalg": "Spectral operations like ``svd``, ``eig``, and
// ``eigh`` may also return incorrect results (and their gradients may be
// infinite) when their inputs have singular values that are close to each
// other.", and on "In particular, CPU and GPU results can be different even for
// bitwise-identical inputs and even after controlling for the sources of
// randomness."
#include "oracles/rules/rule.h"

#include <ATen/ops/all.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/linalg_svdvals.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/printer.h"
#include "oracles/invariants.h"

namespace divfuzz::oracles::rules {

using graph::DType;

// Factorizations (compared through their invariants) and spectra: a
// backward-stable algorithm computes the exact answer of A + E with
// ||E||_2 <= c n eps ||A||_2, which moves every invariant and singular or
// symmetric eigenvalue by at most that (Weyl): the error is normwise, not
// relative to each element.
std::optional<RuleMatch> normwise_backward_error(const Context& c) {
  const bool decomposition = c.spec.hints & ops::kDecomposition;
  const bool function = c.spec.hints & ops::kMatrixFunction;
  if ((!decomposition && !function && !(c.spec.hints & ops::kNormwiseSpectrum)) ||
      c.d.cls != DivergenceClass::kTolerance) {
    return std::nullopt;
  }
  const at::Tensor x = c.Input(0);
  // Complex matrices too: the notes' clause is about the algorithm, and a
  // complex SVD's reconstruction moved within it (session 34, svd c64).
  if (!x.defined() || x.dim() < 2 || x.numel() == 0 ||
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
        ia[o].is_complex() != ib[o].is_complex()) {
      return std::nullopt;
    }
    if (ia[o].numel() == 0) continue;
    const at::ScalarType wide = ia[o].is_complex() ? at::kComplexDouble : at::kDouble;
    diff = std::max(diff, ia[o].to(wide).sub(ib[o].to(wide)).abs().max().item<double>());
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

}  // namespace divfuzz::oracles::rules
