// A gradient rule (DIVFUZZ_GRADIENT_RULE in oracles/rules.def): judged at the
// backward kernel where two sides' gradients part (oracles/gradient.h), from
// that kernel's own inputs, it returns the evidence when it explains the
// divergence. Adding one: oracles/rules/<name>.cc defining
//   std::optional<RuleMatch> rules::<name>(const GradientContext& c);
// and one DIVFUZZ_GRADIENT_RULE line in rules.def.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exec/overflow_recorder.h"
#include "graph/program.h"
#include "ops/infer.h"
#include "oracles/expected_rules.h"
#include "oracles/policy.h"
#include "oracles/verdict.h"

namespace divfuzz::oracles::rules {

// One judged element's float64 derivative with respect to every value the
// side's backward reads: the forward's floating inputs by name, the incoming
// gradients by result (undefined where none), on the CPU. A backward is
// linear in its incoming gradients, so the nonzeros there are the terms the
// element sums.
struct ElementDerivative {
  int64_t element = -1;  // flat index into the gradient
  std::map<std::string, at::Tensor> inputs;
  std::vector<at::Tensor> incoming;
};
// One side of the backward kernel: what it took in and gave out.
struct GradientSide {
  std::map<std::string, at::Tensor> inputs;  // the forward node's inputs on this side
  std::vector<at::Tensor> incoming;          // dL/d(result j); undefined where none
  at::Tensor outgoing;                       // the diverging gradient (d/d `wrt`)
  at::Tensor witness;                        // its float64 backward from these inputs
  std::vector<at::Tensor> results;           // the forward node's results on this side
  // At an accumulation root (GradientContext::accumulation): the gradients
  // the engine summed into the value, one per use, float64 on a float64 side.
  std::vector<at::Tensor> contributions;
  // The side ran on CUDA: its kernels' documented algorithms (a scan carried
  // in the dtype) may differ from the CPU's.
  bool cuda = false;
  // The side computed in float64 (cpu-f64, cuda-f64): `results` are its
  // values rounded to the program's dtype for the record, not the ones its
  // backward read.
  bool upcast = false;
};

struct GradientContext {
  const graph::Node& node;  // the forward node whose backward kernel parts the sides
  const ops::TypeEnv& types;
  const Policy& policy;
  const Divergence& d;
  size_t out;               // which of the node's differentiable inputs (in Uses() order)
  std::string wrt;          // ... by name
  graph::DType dtype;       // its dtype
  bool pointwise;           // the op maps element i to element i (ops::kPointwise)
  GradientSide a, b;
  uint64_t hints = 0;       // the op's catalogue hints (ops::Hint), 0 when not catalogued
  // A CUDA side ran with TF32 (--tf32, or its +tf32 switch): its float32
  // products, the backward's matmuls included, read 10 mantissa bits.
  bool tf32 = false;
  // The sides part at the autograd engine's sum of one value's incoming
  // gradients (torch/csrc/autograd/input_buffer.cpp), not at a kernel: each
  // use's gradient agrees between the sides, their sums do not. Then `wrt`
  // names the value, each side's `outgoing` is its sum and `witness` the
  // float64 sum of its contributions. Only gradient_accumulation_overflow
  // judges such a root.
  bool accumulation = false;
  // JudgedElementDerivatives' memo, per side.
  mutable std::optional<std::vector<ElementDerivative>> derivatives_a, derivatives_b;

  // The epsilon the backward computes in: float32's for an f16/bf16 op that
  // computes in opmath (ops::kComputesInOpmath: rms_norm), else the dtype's.
  double ComputeEps() const;
  // The unit roundoff the backward's products carry: ComputeEps(), or TF32's
  // 2^-10 for float32 under tf32.
  double ProductEps() const;
  // The root is logcumsumexp's own backward kernel (LogcumsumexpBackward*),
  // whose formula gradient_scan_carry models: the generic bounds defer to it.
  bool ScanCarryKernel() const;
};

// The element of `t` the divergence names as float64 (NaN when out of range).
double ElementAt(const at::Tensor& t, long long element);

// The dims a reduction node reduces over `x` (its dim argument, an int or a
// list; none given: all), each in [0, x.dim()).
std::vector<int64_t> ReducedDims(const graph::Node& node, const at::Tensor& x);

// The values a node reads, in argument order and repeated where the call
// repeats them (Node::Uses() names each once): attention's q, k, v and mask
// by position, so that self-attention sdpa(x, x, x) is read as three
// operands (session 39's G4: the logits rule saw one and declined).
std::vector<std::string> OperandNames(const graph::Node& node);

// For up to 8 of the judged elements (those where the sides differ beyond
// tolerance, the most first), from the side's own inputs: the float64
// backward differentiated once more. Empty where it cannot be (no higher
// derivative) or nothing is judged. Computed once per side and kept on the
// context: gradient_backward_stable and gradient_summation both read it.
const std::vector<ElementDerivative>& JudgedElementDerivatives(const GradientContext& c,
                                                               const GradientSide& s);

// The step of a move by 4 eps of float64 `x`: 4 eps |x|, and the smallest
// normal float for an exact 0 (so a kink at 0 moves too: an upstream value
// that underflowed to 0 may have been anything below it). A subnormal was
// not flushed: it moves by 4 eps of itself (session 43's oneDNN bf16
// convolution backward reading a subnormal incoming gradient as 0, judged
// real: the floor had moved 2.94e-39 across 0 and hidden it).
at::Tensor FourEpsStep(const at::Tensor& x, double eps);

// `t` as float64 moved by 4 eps of its dtype (FourEpsStep): direction 0 up, 1 down, 4 and 5 by a
// factor from -1 to 1 along the flat index (up, down: ties break in index
// order or its reverse), others a random sign per element drawn from `seed`,
// 2k+1 the mirror of 2k. Non-finite elements stay.
at::Tensor MovedBy4Eps(const at::Tensor& t, double eps, int dir, uint64_t seed);

// A node that reads one value in several argument slots (x / x, atan2(g, g),
// mul(g, g)) with each use after the first renamed `name__useN`, so that its
// backward gives each use's partial apart: autograd sums them in the dtype,
// and their cancellation or overflow is that sum's, not a formula's.
struct SplitUses {
  graph::Node node;
  std::map<std::string, at::Tensor> inputs;
  ops::TypeEnv types;
  std::map<std::string, std::vector<std::string>> copies;  // name -> its renamed uses
};
std::optional<SplitUses> SplitRepeatedUses(const graph::Node& node,
                                           const std::map<std::string, at::Tensor>& inputs,
                                           const ops::TypeEnv& types);

// The rounding-spread test gradient_composite_rounding and
// gradient_formula_rounding share: for each side, the largest move of its
// float64 backward (its witness) over `draws` reruns (`draw(side, k)`, nullopt:
// the test does not apply), and each side within `factor` times that move
// plus atol at the elements the sides differ at. `nonfinite_passes`: a
// non-finite distance there passes; `keeps_digit`: the test does not apply
// where the move is non-finite or reaches the witness itself (but see
// `float64_draw`). Returns the
// largest distance in units of the move.
struct SpreadTest {
  int draws = 6;
  double factor = 4.0;
  bool nonfinite_passes = false;
  bool keeps_digit = false;
  // With keeps_digit, when given: the same draw with float64's eps. Where the
  // float64 backward keeps no digit either (its own spread reaches it), the
  // exact value is a cancellation to about 0 that no precision resolves,
  // and the side is judged against its spread all the same.
  std::function<std::optional<at::Tensor>(const GradientSide&, int)> float64_draw;
  double draw_eps = 0;  // the eps the test's own draws move by (float64_draw's is 2^-52)
};
std::optional<double> WithinRoundingSpread(
    const GradientContext& c, const SpreadTest& test,
    const std::function<std::optional<at::Tensor>(const GradientSide&, int)>& draw);

// A side's own backward rerun on its own device, in its dtype and in
// float64, each recorded op by op inside the autograd nodes
// (exec::OpRecorder): the intermediate-range rules' view of the formula.
// nullopt where a run raises, gives no gradient `c.out`, or the recording is
// cut short.
struct RecordedBackward {
  at::Tensor gradient;                 // the dtype run's gradient `c.out`, on the CPU
  std::vector<exec::OpCall> mine, wide;  // the dtype run's calls, the float64 run's
};
std::optional<RecordedBackward> RecordBackward(const GradientContext& c, const GradientSide& s);

#define DIVFUZZ_RULE(name, meaning)
#define DIVFUZZ_GRADIENT_RULE(name, meaning) \
  std::optional<RuleMatch> name(const GradientContext& c);
#include "oracles/rules.def"

}  // namespace divfuzz::oracles::rules
