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

// exact_linear.cc: the names it evaluates, and the evaluation.
bool IsLinearName(absl::string_view f);
std::optional<ExactResult> RunExactLinear(absl::string_view f, const graph::Node& node,
                                          const std::map<std::string, at::Tensor>& values,
                                          graph::DType dtype);

}  // namespace divfuzz::exec::exact_internal
