// Reference implementations for ops whose float64 run shares the suspect's
// algorithm (a float64 program's only other witness is itself; CUDA's
// float64 embedding_renorm has CUDA's bug): evaluated in MPFR from the op's
// documented definition, like OpInfo's `ref`, and declared on the op's
// catalogue entry (OpSpec::exact, ops/kernel_classes.cc). They are exact
// witnesses: one decides alone, for float64 programs too.
//   special_functions.cc  the orthogonal polynomials (three-term recurrence,
//                         closed forms for Chebyshev), Hurwitz zeta
//                         (Euler-Maclaurin), each to a Ziv loop's agreement
//   structured.cc         renorm and embedding_renorm (exact p-norms of |x|),
//                         softmax and log_softmax, avg_pool1d/2d/3d (exact sums),
//                         mode
//   normalization.cc      layer/group/batch/instance norm, their native_* forms
//                         with the statistics they return, and rms_norm
#pragma once

#include <ATen/core/Tensor.h>
#include <mpfr.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "exec/exact_internal.h"
#include "exec/exact_reference.h"
#include "graph/program.h"

namespace divfuzz::exec::exact_internal {

// special_functions.cc: elementwise f(x, y) (y is the degree n or zeta's q).
bool IsSpecialBinary(absl::string_view f);
// About how many MPFR operations evaluating f(x, y) takes (a recurrence's
// length), so a node's evaluation stays within a budget.
double SpecialCost(absl::string_view f, double x, double y);
// r = f(x, y), rounded at r's precision from a value on whose rounding to
// `dtype` two successive precisions agree; false where the reference
// declines (a point outside what it models: non-finite n, a degree past the
// kernel's documented range).
bool SpecialBinary(absl::string_view f, mpfr_srcptr x, mpfr_srcptr y, graph::DType dtype,
                   mpfr_t r);

// structured.cc: ops that are not elementwise.
bool IsStructuredName(absl::string_view f);
// `only`: output 0's elements to evaluate (ExactOptions::only): rows (a
// softmax's, a normalization's statistics, a renorm's slice) or windows that
// hold none are not evaluated (NaN there, never compared).
std::optional<ExactResult> RunStructured(absl::string_view f, const graph::Node& node,
                                         const std::map<std::string, at::Tensor>& values,
                                         graph::DType dtype, const at::Tensor& only);

// Which rows of x's layout as ToRows(x, dims) lays it out hold an element
// that `only` (a flat mask over an output of x's shape) wants: the rest are
// not evaluated (their outputs NaN, never compared). Empty: every row.
std::vector<bool> WantedRows(const at::Tensor& only, const at::Tensor& x,
                             const std::vector<int64_t>& dims);
bool Skipped(const std::vector<bool>& wanted, int64_t row);
void PutNans(int64_t n, Sink& sink);

// normalization.cc: the normalizations (RunStructured passes them on).
bool IsNormalizationName(absl::string_view f);
std::optional<ExactResult> RunNormalization(absl::string_view f, const graph::Node& node,
                                            const at::Tensor& x,
                                            const std::map<std::string, at::Tensor>& values,
                                            graph::DType dtype, const at::Tensor& only);
absl::string_view NormalizationMethod(absl::string_view f);

// scan_vjp.cc: logcumsumexp's exact backward along `dim` (float64, NaN on
// rows holding a non-finite x or g); nullopt for complex or mismatched input.
// With `saved` (the forward's result as saved), from those values instead.
std::optional<at::Tensor> LogcumsumexpVjp(const at::Tensor& x, const at::Tensor& g, int64_t dim,
                                          const at::Tensor& saved = at::Tensor());

// How the reference named `f` computes, for verdicts' reasons; empty for the
// exact witness's plain MPFR functions and exact rationals.
absl::string_view ReferenceMethod(absl::string_view f);

}  // namespace divfuzz::exec::exact_internal
