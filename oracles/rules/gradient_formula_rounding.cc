// gradient_formula_rounding: a backward formula built from ATen ops
// (FunctionsManual's i1e_backward, i0e(x) - r·(sgn x + 1/x), differentiated
// again) runs each op in the dtype,
// rounding every intermediate; where the formula cancels, those roundings
// are large against its result, and neither moving the op's inputs (the
// hull of gradient_backward_stable) nor moving each backward node's output
// (gradient_composite_rounding) reproduces them. Session 42's i1e double
// backward (terms of 74 leaving 3.14; CPU 114 ulps, CUDA 50 from the exact)
// was judged expected. Its softmax double backward (exactly 0, both sides
// 1e-3 from 1 - Σy rounded times an incoming 7e6), judged expected too, keeps
// no digit of an exact 0: the guard below lets it pass only where float64
// keeps none either (SpreadTest::float64_draw). So the float64
// backward is rerun with every intermediate moved by eps of the dtype
// (exec/intermediate_rounding.h; random signs per element, in mirrored
// pairs), and each side must lie within four times the largest move that
// makes of its own float64 backward, plus atol; not where that move is
// non-finite or reaches the result itself (no digit kept: a finding, as
// gradient_summation's vacuous bound). logcumsumexp's backward is
// gradient_scan_carry's, which models its formula (its bf16 exponent near
// 100 keeps no digit: judged real in sessions 35-42).
#include <ATen/ATen.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "exec/dtype_convert.h"
#include "exec/executor.h"
#include "exec/intermediate_rounding.h"
#include "ops/catalogue.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {

std::optional<RuleMatch> gradient_formula_rounding(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kTolerance || c.accumulation) return std::nullopt;
  if (c.ScanCarryKernel()) return std::nullopt;
  // An elementwise op's backward where the exact derivative (MPFR) is known
  // is judged by it: cancelling terms of its formula are the formula's own,
  // not a rounding the notes document, where the derivative itself is well
  // conditioned (sinc's cos(πz)/z - sin(πz)/(πz²) near 0: judged real in
  // sessions 42 to 50, and session 52's 36f5833f, a CPU 8.5% off that this
  // rule had cleared beside CUDA's 117%; the derivative's conditioning is
  // gradient_backward_stable's). Only an intermediate the dtype holds on
  // its subnormal grid is moved there (the floor below), as any formula in
  // the dtype rounds it: session 44's polygamma(2, 1602) in f16.
  const ops::OpSpec* spec = c.pointwise ? ops::FindOp(c.node.QualifiedName()) : nullptr;
  const bool exact_derivative = spec != nullptr && !spec->exact.empty();
  // As gradient_composite_rounding: three mirrored pairs, 4x. A draw that
  // moved no intermediate does not apply. A move that leaves the formula's
  // value undetermined (a non-finite spread: matrix_exp's squaring count read
  // off a moved norm) or keeps no digit of the result (session 37's CPU
  // matrix_exp backward, 5x off and judged real: moved intermediates reach
  // 8e26 against 5e8) bounds nothing, as gradient_summation's 2·n·eps >= 1.
  SpreadTest test{6, 4.0, /*nonfinite_passes=*/false, /*keeps_digit=*/true};
  auto draw_at = [&](double eps, double floor, std::optional<at::ScalarType> grid) {
    return [&c, eps, floor, grid](const GradientSide& s, int k) -> std::optional<at::Tensor> {
      exec::VjpResult w;
      int64_t moved = 0;
      {
        exec::IntermediateRounding rounding(eps, 29 + k / 2, k % 2 == 1, floor, grid);
        w = exec::RunNodeVjp(c.node, s.inputs, s.incoming, c.types, exec::Target::kCpuF64,
                             false);
        moved = rounding.moved();
      }
      if (w.result.error || c.out >= w.result.exact.size() || moved == 0) return std::nullopt;
      return w.result.exact[c.out];
    };
  };
  // An exact 0 (or 1) that terms of the data cancel to, which float64 keeps
  // no digit of either: softmax's double backward (Σp = 1: terms of 1e38
  // leaving 0) and logcumsumexp's over a size-1 dim (a self path and a result
  // path of ±1.5e19), session 43's four, judged expected. Not for an
  // elementwise op: there the large terms are the formula's own (sinc's
  // cos(πz)/z - sin(πz)/(πz²) near 0, judged real), and the exact
  // derivative judges.
  // float64's eps (graph::Epsilon), as the dtype's for the run's draws.
  if (!c.pointwise) test.float64_draw = draw_at(std::ldexp(1.0, -52), 0.0, std::nullopt);
  test.draw_eps = exact_derivative ? 0.0 : c.ProductEps();
  // The dtype the formula's ops round to (float32 for a half op computing in
  // opmath): values it holds exactly are not moved. Float64 is the reference's
  // own grid (every value on it) and complex values are not moved.
  const bool opmath = c.ComputeEps() != graph::Epsilon(c.dtype);
  std::optional<at::ScalarType> grid;
  if (c.dtype == graph::DType::kF32 || c.dtype == graph::DType::kF16 ||
      c.dtype == graph::DType::kBF16) {
    grid = exec::ToScalarType(opmath ? graph::DType::kF32 : c.dtype);
  }
  const std::optional<double> worst = WithinRoundingSpread(
      c, test, draw_at(test.draw_eps, graph::DenormMin(c.dtype) / 2, grid));
  if (!worst) return std::nullopt;
  return RuleMatch{
      "gradient_formula_rounding",
      absl::StrCat("the backward of ", c.node.QualifiedName(), " is a formula of ATen ops, each "
                   "rounding its result to ", std::string(graph::DTypeName(c.dtype)),
                   "; each side lies within ", test.factor, "x the spread of its own float64 "
                   "backward with every intermediate moved by eps (at most ",
                   std::round(*worst * 100) / 100, "x)")};
}

}  // namespace divfuzz::oracles::rules
