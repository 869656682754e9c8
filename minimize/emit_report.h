// report.md: a bug report ready to paste into a PyTorch issue. Title, a
// one-paragraph summary, the minimal Python repro inline, expected (float64)
// vs actual on each side with errors in ULPs, why this is not expected
// variance (every expected-by-policy rule, checked on the root's own inputs,
// and the tolerance used), and the environment.
#pragma once

#include <string>
#include <vector>

#include "graph/program.h"
#include "minimize/emit_python.h"
#include "minimize/environment.h"
#include "minimize/reducer.h"
#include "oracles/tolerance.h"
#include "oracles/verdict.h"

namespace divfuzz::minimize {

// One expected-by-policy rule as judged for the report.
struct RuleCheck {
  std::string rule;      // info_gated, index_ties, float_to_int_casts, ill_conditioned,
                         // cancelling_reductions, tf32
  std::string status;    // "applies", "does not apply", "not applicable", "disabled"
  std::string evidence;  // one line
};

// Everything the report says; EmitReport only formats it.
struct ReportInput {
  graph::Program program;  // the (minimal) program
  ReproSpec spec;          // targets, diverging node and output, title
  oracles::Divergence root;
  oracles::Tolerance tolerance;  // the policy's tolerance at the root
  std::vector<RuleCheck> rules;
  std::string input_summary;  // "f32[2,2] = fill(1.0)" of the root's tensor inputs
  std::string output_a;       // the root output on each side (exec::FormatTensor): the
  std::string output_b;       // compared invariant's where root.invariant >= 0
  // A tolerance finding whose first differing element (the headline) is not
  // where the sides differ most against the tolerance: that element, one
  // sentence (LargestDifference); empty when the headline is it.
  std::string largest_difference;
  // A decomposition compared through invariants (root.invariant >= 0): which
  // one, as oracles::InvariantName names it ("the singular values S").
  std::string invariant;
  std::string python_snippet;  // EmitPythonSnippet
  Environment environment;
  // Provenance (optional): reduction statistics, the finding's id.
  const ReduceResult* reduction = nullptr;
  std::string finding_id;
  // "## Which CUDA library": the ablation's section (RenderAblation); empty: none.
  std::string ablation;
};

// A one-line issue title, e.g. "aten::logdet (f32): cpu returns -inf where
// the float64 reference is -4.605170249938965".
std::string ReportTitle(const oracles::Divergence& d, const std::string& target_a,
                        const std::string& target_b);

std::string EmitReport(const ReportInput& input);

// The element where a and b differ most against the tolerance
// (|a - b| / (atol + rtol·|b|), finite on both sides), as a sentence naming
// both values, when that element is not `headline` and differs at least twice
// as much as it: a report headed by its first differing element (1.7% off)
// should still show the one that is off by half. Empty otherwise (shapes
// differ, complex, nothing finite, or a's value at `headline` is not
// `headline_a`, the report's headline value: another tensor's element).
std::string LargestDifference(const at::Tensor& a, const at::Tensor& b,
                              const oracles::Tolerance& tolerance, long long headline,
                              const std::string& headline_a, const std::string& name_a,
                              const std::string& name_b);

// A gradient finding (Divergence::backward_of >= 0): where its forward op's
// derivative formula lives in PyTorch, "tools/autograd/derivatives.yaml,
// entry `sinh`", and one line naming the backward kernel and its forward
// node, "SinhBackward0, the backward of node 0 (aten::sinh); derivative
// formula: ...". Empty for other findings.
std::string DerivativeFormula(const oracles::Divergence& d);
std::string BackwardLine(const oracles::Divergence& d);

// Fills a ReportInput for the evaluation's root: rule checks (each rule alone
// against the root's own inputs, with evidence where it does not apply), the
// outputs, the snippet and this process's environment. The spec's node and
// output are set from the root.
ReportInput BuildReport(const graph::Program& program, const Evaluation& evaluation,
                        const EvalOptions& options, const ReproSpec& spec);

}  // namespace divfuzz::minimize
