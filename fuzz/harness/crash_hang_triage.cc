#include "fuzz/harness/crash_hang_triage.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/gradient.h"
#include "ops/kernel_classes.h"
#include "graph/materialize.h"
#include "minimize/program_edit.h"
#include "ops/catalogue.h"

namespace divfuzz::fuzz {
namespace {

// The values of a program input that argument `l` names directly, or of
// those a list names (a gradient statement's cotangents); none for a
// computed value or a number.
std::vector<double> DirectInputValues(const graph::Program& program, const graph::Literal& l) {
  if (l.kind == graph::Literal::Kind::kList) {
    std::vector<double> all;
    for (const graph::Literal& item : l.list) {
      std::vector<double> v = DirectInputValues(program, item);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  }
  if (l.kind != graph::Literal::Kind::kValue) return {};
  for (const graph::Input& in : program.inputs) {
    if (in.name == l.s) return graph::MaterializePayload(in);
  }
  return {};
}

// "nan" or "inf" when node `node` reads a program input holding one directly.
std::string NonFiniteInput(const graph::Program& program, int node) {
  std::string found;
  if (node < 0 || static_cast<size_t>(node) >= program.nodes.size()) return found;
  for (const graph::Argument& a : program.nodes[node].args) {
    for (double v : DirectInputValues(program, a.value)) {
      if (std::isnan(v)) return "nan";
      if (std::isinf(v)) found = "inf";
    }
  }
  return found;
}

// Whether argument `pos` of node `node` (a program input or a number) holds
// a value a cast to int64 leaves undefined: non-finite or beyond 2^63.
bool CastsOutOfRange(const graph::Program& program, int node, size_t pos) {
  if (node < 0 || static_cast<size_t>(node) >= program.nodes.size()) return false;
  const graph::Node& n = program.nodes[node];
  if (pos >= n.args.size()) return false;
  const graph::Literal& l = n.args[pos].value;
  auto bad = [](double v) { return !std::isfinite(v) || std::fabs(v) >= 9223372036854775808.0; };
  if (l.kind == graph::Literal::Kind::kFloat) return bad(l.f);
  for (double v : DirectInputValues(program, l)) {
    if (bad(v)) return true;
  }
  return false;
}

// A gradient statement runs the backward kernels of the ops its outputs
// come from: the first of those (in program order) whose catalogue entry
// has `hint`, or null.
const ops::OpSpec* DifferentiatedOpWith(const graph::Program& program, int node, uint64_t hint) {
  const graph::GradCallOrError grad = graph::ParseGradCall(program.nodes[node]);
  if (!grad.call) return nullptr;
  std::set<int> differentiated;
  for (int i = 0; i < node; ++i) {
    for (const std::string& r : program.nodes[i].results) {
      if (std::find(grad.call->outputs.begin(), grad.call->outputs.end(), r) ==
          grad.call->outputs.end()) {
        continue;
      }
      differentiated.insert(i);
      const std::set<int> up = minimize::Ancestors(program, i);
      differentiated.insert(up.begin(), up.end());
    }
  }
  for (int i : differentiated) {  // ascending: program order
    const ops::OpSpec* spec = ops::FindOp(program.nodes[i].QualifiedName());
    if (spec != nullptr && (spec->hints & hint) &&
        (hint != ops::kNoNonFiniteGuarantee || ops::NonFiniteMayFailAnyway(*spec))) {
      return spec;
    }
  }
  return nullptr;
}

}  // namespace

store::FindingHit FailureHit(const graph::Program& program, const ops::TypeEnv* types, int node,
                             const std::string& op, const std::string& kind,
                             const std::string& target, bool cuda_fault, bool reproduced,
                             const std::string& input_trigger) {
  store::FindingHit hit;
  hit.divergence_class = kind;
  hit.root_op = op.empty() ? "<unknown>" : op;
  hit.wrong_side = target.empty() ? "undecided" : target;
  hit.tier = "bug";
  hit.severity = kind;
  // A backward node named inside a gradient statement (NativeGroupNormBackward0):
  // the statement's first result's dtype says nothing about the kernel that
  // died (session 39's G4: one segfault filed twice, as f16 and f32, by an
  // unrelated input), so the bucket carries none.
  const bool inside_backward = node >= 0 && static_cast<size_t>(node) < program.nodes.size() &&
                               graph::IsGradNode(program.nodes[node]) &&
                               hit.root_op != program.nodes[node].QualifiedName();
  if (types != nullptr && node >= 0 && static_cast<size_t>(node) < program.nodes.size() &&
      !program.nodes[node].results.empty() && !inside_backward) {
    if (auto t = types->find(program.nodes[node].results[0]); t != types->end()) {
      hit.dtype = std::string(graph::DTypeName(t->second.dtype));
    }
  }
  hit.signature =
      absl::StrCat(hit.root_op, "|", hit.dtype, "|", hit.divergence_class, "|", hit.wrong_side);
  // A failure that did not recur in a fresh process proves nothing on its
  // own; linear algebra and FFTs carry no guarantee for non-finite inputs in
  // any failure class (rule nonfinite_inputs); reductions only for values.
  std::string rule, trigger = NonFiniteInput(program, node);
  if (trigger.empty()) trigger = input_trigger;
  if (trigger.empty()) trigger = "ordinary";
  const bool nonfinite = trigger == "nan" || trigger == "inf";
  const ops::OpSpec* spec = ops::FindOp(hit.root_op);
  // A hang or crash in a gradient statement fed non-finite values (a
  // cotangent of inf, session 33's matrix_exp backward): judged by the ops it
  // differentiates. Only then: a finite cotangent whose norm overflows is
  // matrix_exp's own bug (an unchecked int64 cast), not the notes' exclusion.
  if (spec == nullptr && nonfinite && node >= 0 &&
      static_cast<size_t>(node) < program.nodes.size() && graph::IsGradNode(program.nodes[node])) {
    spec = DifferentiatedOpWith(program, node, ops::kNoNonFiniteGuarantee);
  }
  if (!reproduced) {
    hit.tier = "divergence";
  } else if (spec != nullptr && ops::NonFiniteMayFailAnyway(*spec) && nonfinite) {
    // Only linear algebra and FFTs may fail in any way: a statistic's missing
    // guarantee covers values (session 39's CPU group_norm segfault, with a
    // NaN in an unrelated input, had been excused by one).
    hit.tier = "expected";
    rule = "nonfinite_inputs";
  } else if (spec != nullptr && (spec->hints & ops::kInternalIntCast) && spec->int_cast_arg >= 0 &&
             // near_max is beyond sqrt(max) >= 2^63 in f32 and f64 alike
             (nonfinite || trigger == "near_max" ||
              CastsOutOfRange(program, node, static_cast<size_t>(spec->int_cast_arg)))) {
    // An orthogonal polynomial's n = inf saturates to INT64_MAX on CUDA: its
    // recurrence then runs 9.2e18 steps (a hang), undefined behaviour anyway.
    hit.tier = "expected";
    rule = "float_to_int_casts";
  } else if (spec != nullptr &&
             ((spec->hints & (ops::kConditioned | ops::kDecomposition)) ||
              spec->family == "linalg" || spec->family == "decomposition") &&
             trigger == "near_max") {
    // Linear algebra on values whose squares overflow: matrix_exp's norm is
    // inf and its squaring count an undefined cast (a CUDA hang, an identity
    // matrix on the CPU).
    hit.tier = "expected";
    rule = "extremal_values";
  }
  hit.detail = {{"node", node},
                {"cuda_fault", cuda_fault},
                {"expected_rule", rule},
                {"trigger", trigger},
                {"witness", "none"},
                {"summary", absl::StrCat(kind, " in ", hit.root_op, " on ", hit.wrong_side,
                                         cuda_fault ? " (a CUDA fault)" : "",
                                         reproduced    ? ""
                                         : cuda_fault ? " (where it surfaced; not yet replayed "
                                                        "with CUDA_LAUNCH_BLOCKING=1)"
                                                      : " (did not recur in a fresh process)")}};
  return hit;
}

bool ReproWaitsForTheEnd(const nlohmann::json& entry, bool workers_on_mps) {
  return workers_on_mps && entry.value("class", "") == "hang" &&
         entry.value("wrong_side", "") != "cpu";
}

std::string WhyNotAFinding(const std::string& path, bool hung, bool crashed, bool on_mps) {
  if (hung || crashed) return "";
  // libFuzzer writes slow-unit-* for an input that took long but returned:
  // only one that hangs or crashes on replay is a finding (on the H100 two
  // such inputs, slow while hanging kernels held the GPU, had been filed as
  // crashes that "did not recur").
  if (absl::StrContains(path, "/slow-unit-")) return "ran to its end on replay";
  // A fault on the MPS server reached every worker: only the input that
  // faults again alone is the finding.
  if (absl::StrContains(path, absl::StrCat("/", kMpsFaultPrefix))) {
    return "ran cleanly alone: its worker met another client's CUDA fault on the MPS server";
  }
  // On the MPS server a worker's kernels share the GPU with every other
  // client's: one that hangs there stalls the rest (8 such timeouts were
  // filed as hangs that did not recur in the H200's first 10-minute run).
  if (on_mps && absl::StrContains(path, "/timeout-")) {
    return "ran to its end alone: on the MPS server its worker waited on another client's "
           "kernels";
  }
  return "";
}

}  // namespace divfuzz::fuzz
