// Shared by the exact witness's files (exact_reference.cc: elementwise math;
// exact_linear.cc: sums, products, norms, small solves and DFTs): MPFR
// numbers, operands as float64 tensors, and results rounded once.
#pragma once

#include <ATen/core/Tensor.h>
#include <gmp.h>
#include <mpfr.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "exec/exact_reference.h"
#include "graph/program.h"

namespace divfuzz::exec::exact_internal {

constexpr mpfr_prec_t kPrecision = kExactBits;
constexpr int64_t kMaxElements = 1 << 16;  // elements (or terms) a witness evaluates
constexpr int64_t kMaxMatrix = 8;          // exact rational linear algebra up to n x n

// One MPFR number with RAII.
struct Mp {
  mpfr_t v;
  Mp() {
    mpfr_init2(v, kPrecision);
    mpfr_set_zero(v, 1);
  }
  explicit Mp(double x) : Mp() { mpfr_set_d(v, x, MPFR_RNDN); }  // exact
  ~Mp() { mpfr_clear(v); }
  Mp(const Mp&) = delete;
  Mp& operator=(const Mp&) = delete;
  Mp(Mp&& o) noexcept : Mp() { mpfr_swap(v, o.v); }
};

// MPFR's exponent range as wide as it goes: no intermediate over- or underflows.
void WidenExponentRange();

// Argument `pos` (or `name`) as a float64 tensor: a value or a number literal
// (rounded to `round_to` first when set). nullopt when absent, complex or int64.
std::optional<at::Tensor> Operand(const graph::Node& node, size_t pos, absl::string_view name,
                                  const std::map<std::string, at::Tensor>& values,
                                  std::optional<graph::DType> round_to, bool* is_literal);

// The double values as a tensor of `dtype` (f32 rounded once from MPFR).
NodeResult Finish(const std::vector<int64_t>& shape, const std::vector<double>& exact,
                  const std::vector<float>& as_float, graph::DType dtype);

// Whether the rational is exactly a number of `dtype`.
bool Representable(mpq_srcptr q, graph::DType dtype);

// Values rounded once from MPFR: float64 (the witness's exact values) and,
// for f32 results, f32 straight from MPFR (no double rounding).
struct Sink {
  bool f32 = false;
  std::vector<double> exact;
  std::vector<float> as_float;
  void Put(const mpfr_t v);
  // The values in `shape` (row-major).
  NodeResult Result(const std::vector<int64_t>& shape, graph::DType dtype) const;
};

// A tensor argument (not a literal) as float64.
std::optional<at::Tensor> TensorArg(const graph::Node& node, size_t pos, absl::string_view name,
                                    const std::map<std::string, at::Tensor>& values);

// A number argument; `fallback` when absent or None; nullopt when not a number.
std::optional<double> NumberArg(const graph::Node& node, size_t pos, absl::string_view name,
                                double fallback);

// A dims argument: an empty vector means every dim (absent, None or []).
std::optional<std::vector<int64_t>> DimsArg(const graph::Node& node, size_t pos,
                                            absl::string_view name);

// x as rows: the reduced dims last, [outer, inner], plus what puts a result
// of the same layout back.
struct Rows {
  at::Tensor m;                   // [outer, inner] float64, contiguous
  std::vector<int64_t> reduced;   // the result's shape after reducing
  std::vector<int64_t> permuted;  // x's shape with the reduced dims last
  std::vector<int64_t> inverse;   // the permutation back to x's order
};
std::optional<Rows> ToRows(const at::Tensor& x, std::vector<int64_t> dims, bool keepdim);

// The values `sink` holds row by row (as `rows` laid x out) put back in x's
// dim order, reshaped to `shape` when it is given.
NodeResult FromRows(const Sink& sink, const Rows& rows, graph::DType dtype,
                    const std::vector<int64_t>* shape = nullptr);

// Correctly rounded sum of `terms`.
void Sum(std::vector<Mp>& terms, mpfr_t out);

// A row's mean and its sum of squared deviations from it, each a correctly
// rounded sum (var_mean's and the normalization layers' statistics).
void MeanAndSquaredDeviations(const double* row, int64_t n, mpfr_t mean, mpfr_t ssd);

// The p-norm of a row as linalg_vector_norm defines it: (sum |x|^p)^(1/p),
// max|x| for p = inf, min|x| for -inf, the count of nonzeros for 0.
bool PNorm(const double* row, int64_t n, double p, mpfr_t out);

// exact_linear.cc: the names it evaluates, and the evaluation.
bool IsLinearName(absl::string_view f);
std::optional<ExactResult> RunExactLinear(absl::string_view f, const graph::Node& node,
                                          const std::map<std::string, at::Tensor>& values,
                                          graph::DType dtype);

}  // namespace divfuzz::exec::exact_internal
