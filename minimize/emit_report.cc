#include "minimize/emit_report.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "exec/exact_reference.h"
#include "exec/format.h"
#include "graph/gradient.h"
#include "graph/printer.h"
#include "minimize/emit_common.h"
#include "ops/catalogue.h"
#include "oracles/attribution.h"
#include "oracles/expected_rules.h"
#include "oracles/invariants.h"

namespace divfuzz::minimize {
namespace {

// "divfuzz found it in a 13-op program and reduced it to 1 op on 5 input
// elements." (empty when the program was not reduced).
std::string ReductionSentence(const ReduceResult* r) {
  if (r == nullptr) return "";
  return absl::StrCat("divfuzz found it in a ", r->nodes_before, "-op program and reduced it to ",
                      r->nodes_after, " op", r->nodes_after == 1 ? "" : "s", " on ",
                      r->elements_after, " input element", r->elements_after == 1 ? "" : "s", ".");
}

using oracles::Divergence;
using oracles::DivergenceClass;

// What each rule covers, for readers who do not know the policy (oracles/rules.def).
std::string RuleMeaning(const std::string& rule) {
  for (const oracles::RuleInfo& r : oracles::AllRules()) {
    if (rule == r.name) return r.meaning;
  }
  return rule;
}

oracles::Policy OnlyRule(const oracles::Policy& policy, const std::string& rule) {
  oracles::Policy p = policy;
  for (const oracles::RuleInfo& r : oracles::AllRules()) {
    *oracles::RuleSwitch(p.rules, r.name) = rule == r.name;
  }
  return p;
}

bool RuleEnabled(const oracles::Policy& policy, const std::string& rule) {
  const bool* on = oracles::RuleSwitch(policy.rules, rule);
  return on != nullptr && *on;
}

// The node whose kernel a finding is about: a gradient finding's forward
// node (the backward kernel's), else the diverging node.
int KernelNode(const graph::Program& program, const Divergence& d) {
  if (d.backward_of >= 0 && static_cast<size_t>(d.backward_of) < program.nodes.size()) {
    return d.backward_of;
  }
  return d.node_index;
}

std::string ConditionEvidence(const graph::Program& program, const Evaluation& e,
                              const Divergence& d) {
  const int at = KernelNode(program, d);
  const graph::Node& node = program.nodes[at];
  if (node.args.empty() || node.args[0].value.kind != graph::Literal::Kind::kValue) return "";
  const auto inputs = oracles::NodeInputs(program, at, e.a);
  auto it = inputs.find(node.args[0].value.s);
  if (it == inputs.end() || !it->second.defined() || it->second.dim() < 2) return "";
  try {
    const at::Tensor x = it->second.to(at::kDouble);
    if (!at::isfinite(x).all().item<bool>()) return "";
    const at::Tensor s = at::linalg_svdvals(x);
    const double cond = s.select(-1, 0).div(s.select(-1, s.size(-1) - 1)).max().item<double>();
    const auto t = e.types.find(node.args[0].value.s);
    const graph::DType dt = t == e.types.end() ? graph::DType::kF32 : t->second.dtype;
    const double limit = 1.0 / graph::Epsilon(dt);
    if (cond > limit || std::isnan(cond)) {
      // The rule does not apply though the matrix is ill-conditioned: its
      // elimination is exact in the dtype (the exact witness's finding).
      return absl::StrCat("condition number ", graph::FormatFloat(cond), " > 1/eps(",
                          std::string(graph::DTypeName(dt)), ") = ", graph::FormatFloat(limit),
                          d.rounding_free ? ", but Gaussian elimination is exact in this dtype "
                                            "(no intermediate rounds or is subnormal), so "
                                            "conditioning cannot excuse a difference"
                                          : "");
    }
    return absl::StrCat("condition number ", graph::FormatFloat(cond), " <= 1/eps(",
                        std::string(graph::DTypeName(dt)), ") = ", graph::FormatFloat(limit));
  } catch (const std::exception&) {
    return "";
  }
}

RuleCheck CheckRule(const std::string& rule, const graph::Program& program, const Evaluation& e,
                    const EvalOptions& options, const Divergence& d) {
  RuleCheck c{rule, "", ""};
  if (!RuleEnabled(options.policy, rule)) {
    c.status = "disabled";
    c.evidence = "switched off in the tolerance policy";
    return c;
  }
  const std::optional<oracles::RuleMatch> m =
      oracles::MatchExpectedRule(program, e.types, e.a, e.b, OnlyRule(options.policy, rule), d);
  if (m) {
    c.status = "applies";
    c.evidence = m->reason;
    return c;
  }
  const graph::Node& node = program.nodes[KernelNode(program, d)];
  const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
  const uint64_t hints = spec == nullptr ? 0 : spec->hints;
  const std::string op = node.QualifiedName();
  c.status = "not applicable";
  if (rule == "info_gated") {
    if (hints & ops::kInfoGated) {
      c.status = "does not apply";
      c.evidence = "the factorization reports success (info == 0) on both sides";
    } else {
      c.evidence = absl::StrCat(op, " has no info output");
    }
  } else if (rule == "index_ties") {
    if (hints & (ops::kIndicesOutput | ops::kValueTies)) {
      c.status = "does not apply";
      c.evidence = d.output_index == 0 && !(hints & ops::kValueTies)
                       ? "the divergence is in the values, not the indices"
                       : "the two sides' indices select different values: not a tie";
    } else {
      c.evidence = absl::StrCat(op, " returns no indices");
    }
  } else if (rule == "float_to_int_casts") {
    if (spec != nullptr && spec->rule == ops::Rule::kCast) {
      c.status = "does not apply";
      c.evidence = "not a cast of non-finite or out-of-range floats to an integer type";
    } else {
      c.evidence = absl::StrCat(op, " is not a cast");
    }
  } else if (rule == "ill_conditioned") {
    if (hints & ops::kConditioned) {
      c.status = "does not apply";
      const std::string cond = ConditionEvidence(program, e, d);
      c.evidence = cond.empty() ? "the input is not ill-conditioned" : cond;
    } else {
      c.evidence = absl::StrCat(op, "'s accuracy does not hinge on a condition number");
    }
  } else if (rule == "cancelling_reductions") {
    if (hints & (ops::kCancellingReduction | ops::kCancellingMatmul)) {
      c.status = "does not apply";
      c.evidence = d.cls == DivergenceClass::kTolerance
                       ? "|A - B| exceeds 2·n·eps·sum|terms|, the rounding bound of any "
                         "summation order"
                       : "sum|terms| is within the dtype's range: no order-dependent overflow";
    } else {
      c.evidence = absl::StrCat(op, " is not a sum or dot product");
    }
  } else if (rule == "tf32") {
    const bool cuda =
        options.target_a == exec::Target::kCuda || options.target_b == exec::Target::kCuda;
    if (cuda && (hints & ops::kTf32Sensitive)) {
      c.status = "does not apply";
      c.evidence = "CUDA ran with TF32 and reduced-precision reductions off";
    } else {
      c.evidence = cuda ? absl::StrCat(op, " does not use TF32") : "no CUDA target";
    }
  }
  return c;
}

std::string Md(const std::string& s) {  // inline text in a table cell
  return absl::StrReplaceAll(s, {{"|", "\\|"}, {"\n", " "}});
}

std::string Code(const std::string& s) {
  if (s.empty()) return "";
  return absl::StrCat("`", absl::StrReplaceAll(s, {{"`", "'"}, {"\n", " "}}), "`");
}

bool IsReference(const std::string& target) { return target == "cpu-f64"; }

std::string SideValue(const Divergence& d, bool a) { return a ? d.value_a : d.value_b; }

std::string Ulps(double ulp, double rel, const std::string& value, const std::string& ref) {
  if (ref.empty()) return "";
  if (ulp == 0 && rel == 0) {
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    const double r = std::strtod(ref.c_str(), nullptr);
    if (end != value.c_str() && (std::isfinite(v) != std::isfinite(r) || std::isnan(v))) {
      return "not finite vs finite (class differs)";
    }
    if (end == value.c_str()) return "";
    return "0 ULPs";
  }
  return absl::StrFormat("%.4g ULPs (relative %.3g)", ulp, rel);
}

// "## Minimal repro": the snippet to paste, then what the attached repro.py
// and repro_cpp/ do (`they_run`, "run ... and exit 1 when ...").
std::string ReproSection(const std::string& snippet, const std::string& they_run) {
  return absl::StrCat("## Minimal repro\n\n```python\n", snippet,
                      "```\n\nEvery input is given exactly (hex floats). The attached `repro.py` "
                      "(torch only) and `repro_cpp/` (libtorch, `cmake "
                      "-DCMAKE_PREFIX_PATH=<torch cmake folder>`) ",
                      they_run, ", so they can drive `git bisect run`.\n\n");
}

std::string EnvironmentSection(const Environment& environment) {
  std::string out = "## Environment\n\n";
  for (const auto& [label, value] : environment.Items()) {
    absl::StrAppend(&out, "- ", label, ": ", Md(value), "\n");
  }
  return out;
}

// The same target twice: no expected value, no rules; what differs between
// the runs, and the usual repro, environment and program.
std::string NondeterminismReport(const ReportInput& in) {
  const Divergence& d = in.root;
  const std::string& side = d.wrong_side;
  std::string out = absl::StrCat("# ", ReportTitle(d, in.spec.target_a, in.spec.target_b), "\n\n");
  std::string summary =
      absl::StrCat("Running `", d.op, "` on ",
                   in.input_summary.empty() ? "its input" : in.input_summary, " again on **", side,
                   "**, with the same inputs in the same process, gives a different result (",
                   Md(d.detail), "). ");
  // Only worth saying when the node inherits the difference.
  if (absl::StrContains(d.reason, "upstream")) absl::StrAppend(&summary, Md(d.reason), ". ");
  absl::StrAppend(&summary,
                  "Rounding cannot explain a difference between identical runs, so no tolerance "
                  "or expected-variance rule applies; it matters unless `",
                  d.op,
                  "` is documented as nondeterministic (see "
                  "`torch.use_deterministic_algorithms`). ");
  if (side != "cuda") {
    absl::StrAppend(&summary,
                    "The runs alternate glibc's malloc perturb byte (fresh memory zeroed, then "
                    "0xa5 bytes), so a kernel that reads memory it never wrote differs as a "
                    "racing one does. ");
  }
  absl::StrAppend(&summary, ReductionSentence(in.reduction));
  absl::StrAppend(&out, "## Summary\n\n", summary, "\n\n");
  absl::StrAppend(&out, ReproSection(in.python_snippet,
                                     absl::StrCat("run ", side, " up to ", kNondeterminismRuns,
                                                  " times (", kNondeterminismSeconds,
                                                  " s at most) on the same inputs and exit 1 when "
                                                  "two runs differ bit for bit (0 when not)")));
  if (!in.output_a.empty() || !in.output_b.empty()) {
    absl::StrAppend(&out, "## Two runs of ", side, "\n\n```\nfirst: ", in.output_a,
                    "\nagain: ", in.output_b, "\n```\n\n");
  }
  absl::StrAppend(&out, EnvironmentSection(in.environment),
                  "\n<details><summary>The program (divfuzz .dfz",
                  in.finding_id.empty() ? "" : ", finding ", in.finding_id, ")</summary>\n\n```\n",
                  graph::PrintProgram(in.program), "```\n\nTier `", d.tier, "`, signature `",
                  oracles::Signature(d), "`.\n</details>\n");
  return out;
}

}  // namespace

std::string ReportTitle(const Divergence& d, const std::string& target_a,
                        const std::string& target_b) {
  const std::string head = absl::StrCat(d.op, " (", d.dtype, ")");
  if (d.cls == DivergenceClass::kNondeterminism) {
    return absl::StrCat(head, ": ", d.wrong_side, " gives different results for the same inputs");
  }
  const bool a_wrong = d.wrong_side == target_a;
  const bool b_wrong = d.wrong_side == target_b;
  switch (d.cls) {
    case DivergenceClass::kClassSplit:
      if (a_wrong || b_wrong) {
        const std::string& side = a_wrong ? target_a : target_b;
        const std::string& value = a_wrong ? d.value_a : d.value_b;
        const std::string& ref = a_wrong ? d.reference_a : d.reference_b;
        return absl::StrCat(
            head, ": ", side, " returns ", value,
            ref.empty() ? "" : absl::StrCat(d.witness == "exact" ? " where the exact value is "
                                                                  : " where the float64 reference is ",
                                            ref));
      }
      return absl::StrCat(head, ": ", target_a, " returns ", d.value_a, ", ", target_b, " ",
                          d.value_b);
    case DivergenceClass::kTolerance:
      if (a_wrong || b_wrong) {
        const std::string in = oracles::InvariantName(ops::FindOp(d.op), d.invariant);
        return absl::StrFormat("%s: %s is off by %.3g ULPs %sfrom the %s", head,
                               a_wrong ? target_a : target_b, a_wrong ? d.ulp_a : d.ulp_b,
                               in.empty() ? "" : absl::StrCat("in ", in, " "),
                               d.witness == "exact" ? "exact value" : "float64 reference");
      }
      return absl::StrCat(head, ": ", target_a, " and ", target_b, " differ beyond tolerance");
    case DivergenceClass::kErrorSplit:
    case DivergenceClass::kDtypeGap: {
      const bool a_raises = d.value_a != "ok";
      return absl::StrCat(head, ": raises on ", a_raises ? target_a : target_b, " but not on ",
                          a_raises ? target_b : target_a);
    }
    default:
      return absl::StrCat(head, ": ", oracles::ClassName(d.cls), " between ", target_a, " and ",
                          target_b);
  }
}

// The witness that decided (exec/witnesses.h), as a report names it.
std::string WitnessPhrase(const Divergence& d) {
  if (d.witness == "exact") {
    return absl::StrCat("the exact value (MPFR at ", exec::kExactBits,
                        " bits or exact rational arithmetic, rounded once)");
  }
  if (absl::StartsWith(d.witness, "cpu-f64+")) {
    return absl::StrCat("the float64 reference (", d.witness.substr(8),
                        ", a second float64 implementation, agrees)");
  }
  if (d.witness == "meta") return "the shape and dtype the meta kernel infers";
  return "the float64 reference";
}

std::string DerivativeFormula(const Divergence& d) {
  if (d.backward_of < 0 || d.forward_op.empty()) return "";
  // derivatives.yaml names aten ops without the namespace: `sinh`, `add.Tensor`.
  const std::string entry =
      absl::StartsWith(d.forward_op, "aten::") ? d.forward_op.substr(6) : d.forward_op;
  return absl::StrCat("PyTorch's tools/autograd/derivatives.yaml, entry `", entry, "`");
}

std::string BackwardLine(const Divergence& d) {
  if (d.backward_of < 0) return "";
  return absl::StrCat(d.op, ", the backward of node ", d.backward_of, " (", d.forward_op,
                      "); derivative formula: ", DerivativeFormula(d));
}

namespace {

// A finding at a gradient statement: what was compared, and where the
// backward kernel that parts the sides is (or that none was singled out).
std::string GradientSection(const ReportInput& in) {
  const Divergence& d = in.root;
  const graph::Program& p = in.program;
  if (d.node_index < 0 || static_cast<size_t>(d.node_index) >= p.nodes.size() ||
      !graph::IsGradNode(p.nodes[d.node_index])) {
    return "";
  }
  const graph::Node& g = p.nodes[d.node_index];
  std::string out = "## Backward kernel\n\n";
  const std::string grad = static_cast<size_t>(d.output_index) < g.results.size()
                               ? absl::StrCat("`%", g.results[d.output_index], "`")
                               : "a gradient";
  absl::StrAppend(&out, "The two sides' gradients differ at ", grad, ", result ", d.output_index,
                  " of the gradient statement (node ", d.node_index,
                  ", `torch.autograd.grad`): `", Md(NodeText(g)), "`.\n\n");
  if (d.backward_of < 0) {
    absl::StrAppend(&out,
                    "divfuzz reran each backward kernel alone from each side's own forward "
                    "inputs and incoming gradients, and none differs on its own: ",
                    Md(d.reason), ".\n\n");
    return out;
  }
  absl::StrAppend(
      &out, "The first backward kernel (in backward order) whose incoming gradients agree on "
            "both sides and whose outgoing gradients differ:\n\n"
            "| backward kernel | forward op | forward node | derivative formula |\n"
            "|---|---|---|---|\n| `", Md(d.op), "` | `", Md(d.forward_op), "` | ",
      d.backward_of, ": `",
      static_cast<size_t>(d.backward_of) < p.nodes.size() ? Md(NodeText(p.nodes[d.backward_of]))
                                                          : "",
      "` | ", DerivativeFormula(d), " |\n\n",
      "The derivative of `", d.forward_op, "` is defined in PyTorch's "
      "[tools/autograd/derivatives.yaml](https://github.com/pytorch/pytorch/blob/main/tools/"
      "autograd/derivatives.yaml) under its forward op's name (`",
      absl::StartsWith(d.forward_op, "aten::") ? d.forward_op.substr(6) : d.forward_op,
      "`); `", d.op, "` is the autograd node generated from that formula (or the backward "
      "kernel it calls). The values above are that kernel's outputs on each side, from the same "
      "incoming gradients.\n\n");
  return out;
}

}  // namespace

std::string EmitReport(const ReportInput& in) {
  if (in.root.cls == DivergenceClass::kNondeterminism) return NondeterminismReport(in);
  const Divergence& d = in.root;
  const std::string& ta = in.spec.target_a;
  const std::string& tb = in.spec.target_b;
  std::string out;
  absl::StrAppend(&out, "# ", ReportTitle(d, ta, tb), "\n\n");

  // Summary.
  int applied = 0;
  std::vector<std::string> checked;
  for (const RuleCheck& r : in.rules) {
    if (r.status == "applies") ++applied;
    if (r.status != "disabled") checked.push_back(r.rule);
  }
  std::string summary = absl::StrCat(
      "Running `", d.op, "` on ", in.input_summary.empty() ? "its input" : in.input_summary, ", ",
      ta, " and ", tb, " disagree (", oracles::ClassName(d.cls), ")");
  // A decomposition's raw factors are free up to sign or phase: every value
  // below (each side's and the reference's) is of the same invariant.
  const bool invariant = d.invariant >= 0 && !in.invariant.empty();
  if (d.element >= 0) absl::StrAppend(&summary, " at element ", d.element);
  if (invariant) absl::StrAppend(&summary, d.element >= 0 ? " of " : " in ", in.invariant);
  absl::StrAppend(&summary, ": ", ta, " gives ", Code(d.value_a), ", ", tb, " gives ",
                  Code(d.value_b), ". ");
  if (invariant) {
    absl::StrAppend(&summary, "`", d.op, "`'s outputs are unique only up to sign, phase or "
                    "order, so divfuzz compares ", in.invariant, " computed from each one's "
                    "outputs (the reference's too), never the raw outputs. ");
  }
  if (!d.reference_a.empty() && !d.reference_b.empty() && d.reference_a != d.reference_b) {
    absl::StrAppend(&summary, "Judged against ", WitnessPhrase(d), ", the op gives ",
                    Code(d.reference_a), " from ", ta, "'s inputs and ", Code(d.reference_b),
                    " from ", tb, "'s. ");
  } else if (!d.reference_a.empty() || !d.reference_b.empty()) {
    absl::StrAppend(&summary, "Judged against ", WitnessPhrase(d),
                    ", computed from each side's own inputs, the op gives ",
                    Code(!d.reference_a.empty() ? d.reference_a : d.reference_b), ". ");
  }
  if (d.wrong_side == "undecided") {
    absl::StrAppend(&summary,
                    "No independent witness singles out a wrong side (", Md(d.reason),
                    "), so this is a divergence, not a proven bug. ");
  } else {
    absl::StrAppend(&summary, "This shows that **", d.wrong_side, "** is wrong. ");
  }
  if (d.tier == "expected") {
    absl::StrAppend(&summary, "The divergence matches the documented expected-variance rule `",
                    d.expected_rule, "`, so it may well be expected behaviour. ");
  } else if (!checked.empty() && d.wrong_side != "undecided") {
    absl::StrAppend(&summary,
                    "None of PyTorch's documented reasons for expected variance applies (",
                    checked.size(),
                    " rules checked on this op's own inputs, below), and the "
                    "difference exceeds `torch.testing.assert_close`'s default tolerance. ");
  }
  if (d.backward_of >= 0) {
    absl::StrAppend(&summary, "`", d.op, "` is the backward of `", d.forward_op,
                    "` (node ", d.backward_of, "); its derivative formula is in ",
                    DerivativeFormula(d), ". ");
  }
  absl::StrAppend(&summary, ReductionSentence(in.reduction));
  absl::StrAppend(&out, "## Summary\n\n", summary, "\n\n");
  absl::StrAppend(&out, GradientSection(in));

  // Repro.
  absl::StrAppend(&out, ReproSection(in.python_snippet,
                                     absl::StrCat("run the same program on ", ta, ", ", tb,
                                                  " and the float64 reference, print the verdict, "
                                                  "and exit 1 when the divergence reproduces (0 "
                                                  "when not)")));

  // Expected vs actual.
  absl::StrAppend(&out, "## Expected vs actual\n\nThe expected value is ", WitnessPhrase(d),
                  ".\n\n");
  if (d.element >= 0 && d.backward_of >= 0) {
    absl::StrAppend(&out, "At element ", d.element, " of the gradient `", d.op,
                    "` passes back (from the same incoming gradients on both sides):\n\n");
  } else if (d.element >= 0 && invariant) {
    absl::StrAppend(&out, "At element ", d.element, " of ", in.invariant, " of `%", d.value,
                    "`'s decomposition, on each side and in the reference:\n\n");
  } else if (d.element >= 0) {
    absl::StrAppend(&out, "At element ", d.element, " of `%", d.value, "`:\n\n");
  }
  absl::StrAppend(&out, "| side | value | float64 reference",
                  invariant ? absl::StrCat(" (", in.invariant, ")") : "",
                  " from this side's inputs | error |\n|---|---|---|---|\n");
  for (bool a : {true, false}) {
    const std::string& side = a ? ta : tb;
    const std::string& ref = a ? d.reference_a : d.reference_b;
    const std::string err = IsReference(side) ? "(this side is the reference)"
                                              : Ulps(a ? d.ulp_a : d.ulp_b, a ? d.rel_a : d.rel_b,
                                                     SideValue(d, a), ref);
    absl::StrAppend(&out, "| ", side, " | ", Md(Code(SideValue(d, a))), " | ", Md(Code(ref)), " | ",
                    Md(err), " |\n");
  }
  absl::StrAppend(&out, "\n", Md(d.detail), "\n\n");
  if (!in.output_a.empty() || !in.output_b.empty()) {
    absl::StrAppend(&out, invariant ? absl::StrCat("Whole of ", in.invariant) : "Whole output",
                    ":\n\n```\n", ta, ": ", in.output_a, "\n", tb, ": ",
                    in.output_b, "\n```\n\n");
  }

  if (!in.largest_difference.empty()) absl::StrAppend(&out, in.largest_difference, "\n\n");

  // Why not expected variance.
  absl::StrAppend(&out, "## Why this is not expected variance\n\n");
  absl::StrAppend(&out, "- Attribution: ", Md(d.reason), "\n");
  if (d.cls == DivergenceClass::kTolerance) {
    absl::StrAppend(&out, "- Tolerance: `torch.testing.assert_close`'s default for ", d.dtype,
                    " (rtol ", in.tolerance.rtol, ", atol ", in.tolerance.atol,
                    "): |a - b| <= atol + rtol·|b|, with ", tb, " as the expected side.\n");
  } else if (d.cls == DivergenceClass::kClassSplit) {
    absl::StrAppend(&out,
                    "- The sides differ in kind (finite / inf / NaN), not in rounding: no "
                    "tolerance covers that.\n");
  }
  absl::StrAppend(&out,
                  "- Documented expected-variance rules, each checked on the op's own "
                  "inputs:\n\n| rule | covers | verdict | evidence |\n|---|---|---|---|\n");
  for (const RuleCheck& r : in.rules) {
    absl::StrAppend(&out, "| `", r.rule, "` | ", Md(RuleMeaning(r.rule)), " | ", r.status, " | ",
                    Md(r.evidence), " |\n");
  }
  if (applied > 0) {
    absl::StrAppend(&out,
                    "\nA rule applies: divfuzz files this under tier `expected`; report it "
                    "only with an argument beyond the numbers above.\n");
  }
  absl::StrAppend(&out, "\n");

  // Which CUDA library (minimize/ablation.h).
  if (!in.ablation.empty()) absl::StrAppend(&out, in.ablation, "\n");

  // Environment.
  absl::StrAppend(&out, EnvironmentSection(in.environment), "\n");

  // The program.
  absl::StrAppend(&out, "<details><summary>The program (divfuzz .dfz",
                  in.finding_id.empty() ? "" : ", finding ", in.finding_id, ")</summary>\n\n```\n",
                  graph::PrintProgram(in.program), "```\n\nTier `", d.tier, "`, severity `",
                  oracles::SeverityName(oracles::SeverityRank(d)), "`, signature `",
                  oracles::Signature(d), "`.");
  if (in.reduction != nullptr) {
    absl::StrAppendFormat(&out,
                          " Reduced from %d to %d ops and %d to %d input elements in %.1f s "
                          "(%d candidates tried).",
                          in.reduction->nodes_before, in.reduction->nodes_after,
                          in.reduction->elements_before, in.reduction->elements_after,
                          in.reduction->seconds, in.reduction->tests);
    if (in.reduction->skipped > 0) {
      absl::StrAppend(&out, " ", in.reduction->skipped,
                      " candidate(s) hung or crashed a kernel and were left out (divfuzz saves "
                      "them as findings of their own).");
    }
  }
  absl::StrAppend(&out, "\n</details>\n");
  return out;
}

std::string LargestDifference(const at::Tensor& a, const at::Tensor& b,
                              const oracles::Tolerance& tolerance, long long headline,
                              const std::string& headline_a, const std::string& name_a,
                              const std::string& name_b) {
  if (!a.defined() || !b.defined() || a.sizes() != b.sizes() || a.numel() < 2 || a.is_complex() ||
      b.is_complex() || !a.is_floating_point() || !b.is_floating_point() || headline < 0 ||
      headline >= a.numel()) {
    return "";
  }
  const at::Tensor x = a.detach().cpu().to(at::kDouble).reshape(-1);
  const at::Tensor y = b.detach().cpu().to(at::kDouble).reshape(-1);
  at::Tensor ratio = (x - y).abs() / (tolerance.atol + tolerance.rtol * y.abs());
  ratio = at::where(at::isfinite(x) & at::isfinite(y), ratio, at::zeros_like(ratio));
  const int64_t worst = ratio.argmax().item<int64_t>();
  // A backward kernel inside a gradient statement is headed by its own
  // outgoing gradient: only where that is this output (the same value at
  // the headline element) do the two name the same elements.
  if (graph::FormatFloat(x[headline].item<double>()) != headline_a) return "";
  const double worst_ratio = ratio[worst].item<double>();
  const double headline_ratio = ratio[headline].item<double>();
  if (worst == headline || !(worst_ratio > 1) || !(worst_ratio >= 2 * headline_ratio)) return "";
  const double va = x[worst].item<double>(), vb = y[worst].item<double>();
  return absl::StrCat("In the whole output, the sides differ most at element ", worst, ": ",
                      name_a, " gives `", graph::FormatFloat(va), "`, ", name_b, " gives `",
                      graph::FormatFloat(vb),
                      "` (|diff| ", graph::FormatFloat(std::fabs(va - vb)), ", ",
                      absl::StrFormat("%.3g", worst_ratio),
                      " times what the tolerance allows there; at element ", headline, ", ",
                      absl::StrFormat("%.3g", headline_ratio), " times).");
}

ReportInput BuildReport(const graph::Program& program, const Evaluation& evaluation,
                        const EvalOptions& options, const ReproSpec& spec) {
  ReportInput in;
  in.program = program;
  in.spec = spec;
  in.root = evaluation.root;
  in.environment = CurrentEnvironment();
  const Divergence& d = evaluation.root;
  in.spec.node_index = d.node_index;
  in.spec.output_index = d.output_index;
  if (in.spec.title.empty()) in.spec.title = ReportTitle(d, spec.target_a, spec.target_b);
  if (d.node_index < 0 || static_cast<size_t>(d.node_index) >= program.nodes.size()) return in;
  const graph::Node& node = program.nodes[d.node_index];
  in.tolerance = options.policy.For(node.QualifiedName(),
                                    graph::ParseDType(d.dtype).value_or(graph::DType::kF32));
  // Rules explain differences between targets, not between runs of one.
  const bool nondeterminism = d.cls == DivergenceClass::kNondeterminism;
  if (nondeterminism) in.spec.rerun_target = d.wrong_side;
  for (const oracles::RuleInfo& info : oracles::AllRules()) {
    const std::string rule = info.name;
    if (!nondeterminism) in.rules.push_back(CheckRule(rule, program, evaluation, options, d));
  }
  // The root's tensor inputs, as the program states them (a backward
  // kernel's: its forward node's).
  std::vector<std::string> parts;
  for (const graph::Argument& a : program.nodes[KernelNode(program, d)].args) {
    if (a.value.kind != graph::Literal::Kind::kValue) continue;
    const graph::Input* input = nullptr;
    for (const graph::Input& i : program.inputs) {
      if (i.name == a.value.s) input = &i;
    }
    if (input != nullptr) {
      const std::string layout =
          input->layout == graph::Layout::kContiguous
              ? ""
              : absl::StrCat(" layout=", std::string(graph::LayoutName(input->layout)));
      parts.push_back(absl::StrCat("`", graph::PrintType(input->type), layout, " = ",
                                   input->payload.kind == graph::Payload::Kind::kValues
                                       ? "values(...)"
                                       : graph::PrintPayload(input->payload, input->type.dtype),
                                   "`"));
    } else if (auto t = evaluation.types.find(a.value.s); t != evaluation.types.end()) {
      parts.push_back(absl::StrCat("a computed `", graph::PrintType(t->second), "`"));
    }
  }
  in.input_summary = absl::StrJoin(parts, " and ");
  const ops::OpSpec* op_spec = ops::FindOp(node.QualifiedName());
  const auto output = [&](const exec::RunResult& r) -> std::string {
    if (static_cast<size_t>(d.node_index) >= r.nodes.size()) return "not run";
    const exec::NodeResult& n = r.nodes[d.node_index];
    if (n.error) return absl::StrCat("raised: ", n.error->message);
    if (d.invariant >= 0) {
      const std::vector<at::Tensor> inv = oracles::Comparable(op_spec, n.outputs);
      if (static_cast<size_t>(d.invariant) >= inv.size()) return "";
      return exec::FormatTensor(inv[d.invariant], 32);
    }
    if (static_cast<size_t>(d.output_index) >= n.outputs.size()) return "";
    return exec::FormatTensor(n.outputs[d.output_index], 32);
  };
  in.invariant = oracles::InvariantName(op_spec, d.invariant);
  in.output_a = output(evaluation.a);
  in.output_b = output(evaluation.b);
  if (d.cls == DivergenceClass::kTolerance && d.invariant < 0) {
    const auto tensor = [&](const exec::RunResult& r) -> at::Tensor {
      if (static_cast<size_t>(d.node_index) >= r.nodes.size()) return {};
      const exec::NodeResult& n = r.nodes[d.node_index];
      if (n.error || static_cast<size_t>(d.output_index) >= n.outputs.size()) return {};
      return n.outputs[d.output_index];
    };
    in.largest_difference = LargestDifference(tensor(evaluation.a), tensor(evaluation.b),
                                              in.tolerance, d.element, d.value_a,
                                              in.spec.target_a, in.spec.target_b);
  }
  in.python_snippet = EmitPythonSnippet(program, in.spec);
  return in;
}

}  // namespace divfuzz::minimize
