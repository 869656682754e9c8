#include "oracles/triage.h"

#include <ATen/ATen.h>

#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "exec/cuda_variants.h"
#include "exec/executor.h"
#include "exec/target.h"
#include "ops/catalogue.h"

#include "oracles/attribution.h"
#include "oracles/expected_rules.h"
#include "oracles/gradient.h"
#include "oracles/trigger.h"
#include "oracles/triage_memo.h"

namespace divfuzz::oracles {
namespace {

bool CudaFaultAt(const exec::RunResult& r, const Divergence& d) {
  if (d.node_index < 0 || static_cast<size_t>(d.node_index) >= r.nodes.size()) return false;
  const auto& e = r.nodes[d.node_index].error;
  return e && e->kind == exec::NodeError::Kind::kCudaFatal;
}

// Which sides wrote into an input their node's schema does not declare
// mutable (the executor restores it and fails the node with
// exec::kInputWritten): "both", a side's target, or "" for neither.
// Which sides raised with `marker` in their message at d's node: "both", a
// side's target, or "" for neither.
std::string RaisedWith(const exec::RunResult& a, const exec::RunResult& b, const Divergence& d,
                       absl::string_view marker) {
  auto raised = [&](const exec::RunResult& r) {
    if (d.node_index < 0 || static_cast<size_t>(d.node_index) >= r.nodes.size()) return false;
    const auto& e = r.nodes[d.node_index].error;
    return e && absl::StrContains(e->message, marker);
  };
  const bool wa = raised(a), wb = raised(b);
  if (wa && wb) return "both";
  if (wa || wb) return std::string(exec::TargetName(wa ? a.target : b.target));
  return "";
}

std::string InputWriter(const exec::RunResult& a, const exec::RunResult& b, const Divergence& d) {
  return RaisedWith(a, b, d, exec::kInputWritten);
}

// PyTorch's own internal assertion (TORCH_INTERNAL_ASSERT) failing: its
// message says "please report a bug to PyTorch". Session 34's
// linalg_ldl_factor of a zero pivot (pytorch#121683) stayed undecided as an
// error split whose float64 witnesses split alike.
constexpr absl::string_view kInternalAssert = "INTERNAL ASSERT FAILED";

}  // namespace

// (oracles/triage.h) The blamed side without the CUDA switches that do not change the root op's
// kernels (ops::OpSpec::cuda_kernels): a campaign rotating variants files one
// bucket per root cause, not one per variant, and cuda+magma stays in the
// name only where MAGMA computed the op.
std::string RelevantVariantSide(const Divergence& d) {
  const std::string& side = d.wrong_side;
  const size_t plus = side.find('+');
  if (plus == std::string::npos) return side;
  const ops::OpSpec* spec = ops::FindOp(d.forward_op.empty() ? d.op : d.forward_op);
  const uint32_t kernels = spec != nullptr ? spec->cuda_kernels : 0;
  std::string out = side.substr(0, plus);
  for (absl::string_view s : absl::StrSplit(absl::string_view(side).substr(plus + 1), '+')) {
    const exec::CudaVariant* v = exec::FindCudaVariant(s);
    if (v != nullptr && (v->kernels & kernels) != 0) absl::StrAppend(&out, "+", s);
  }
  return out;
}


namespace {

// One root divergence: the wrong side, the witness, the tier.
void TriageRoot(const graph::Program& program, const ops::TypeEnv& types,
                const exec::RunResult& a, const exec::RunResult& b, const Policy& policy,
                Divergence& d, const exec::WitnessPlan* plan) {
  d.trigger = TriggerClass(program, a, d);
  if (CudaFaultAt(a, d) || CudaFaultAt(b, d)) {
    // A CUDA fault surfaces at the next synchronizing node, not always the
    // one that launched it: only the campaign's replay with
    // CUDA_LAUNCH_BLOCKING=1 can say which node (it files that bucket).
    d.tier = "divergence";
    d.wrong_side = "undecided";
    const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
    if (blocking == nullptr || std::string(blocking) != "1") {
      d.reason = "a CUDA fault (an asynchronous error) surfaced here; the node that caused it "
                 "is known only from a replay with CUDA_LAUNCH_BLOCKING=1";
      return;
    }
    d.reason = "a CUDA fault, raised with CUDA_LAUNCH_BLOCKING=1 and so at the node that "
               "launched it; the context is lost, so nothing after it is judged";
    // Raised at its launch where the other side ran the node: that side's
    // crash, as the campaign files it (session 47's bb491aab, CUDA's
    // embedding_dense_backward on a zero-width weight: a campaign crash on
    // CUDA, an undecided error split in replay).
    auto ran = [&](const exec::RunResult& r) {
      return d.node_index >= 0 && static_cast<size_t>(d.node_index) < r.nodes.size() &&
             !r.nodes[d.node_index].error;
    };
    const bool fa = CudaFaultAt(a, d), fb = CudaFaultAt(b, d);
    if ((fa && fb) || (fa && ran(b)) || (fb && ran(a))) {
      d.tier = "bug";
      d.wrong_side = fa && fb ? "both" : std::string(exec::TargetName(fa ? a.target : b.target));
      absl::StrAppend(&d.reason, "; ", fa && fb ? "both sides" : "the other side ran it",
                      ": a crash of this node, as a campaign files it");
    } else {
      absl::StrAppend(&d.reason, " (a campaign files it as a crash of this node)");
    }
    return;
  }
  if (AtGradient(program, d)) {
    TriageGradient(program, types, a, b, policy, d, plan);
    return;
  }
  // Writing into an input the schema does not declare mutable is a bug in
  // its own right, whatever the values: the writer is wrong, and no rule
  // about the numbers excuses it (CUDA linalg_eigvals overwrote QR's Q).
  if (const std::string writer = InputWriter(a, b, d); !writer.empty()) {
    d.tier = "bug";
    d.wrong_side = writer;
    d.witness = "schema";
    const exec::RunResult& w = writer == std::string(exec::TargetName(a.target)) ? a : b;
    const std::string message =
        writer == "both" ? a.nodes[d.node_index].error->message
                         : w.nodes[d.node_index].error->message;
    d.reason = absl::StrCat(writer == "both" ? "both sides" : writer, " ", message, " (",
                            d.op, "): the schema says the op leaves that input as it was, so "
                            "writing into it is a bug whatever the values",
                            writer == "both" ? "" : "; the other side left it as it was");
    return;
  }
  // An internal assertion is a bug of the side that raised it, whatever
  // the values: PyTorch's message itself says so.
  // Not where the node read inf or NaN: the notes let linear algebra "raise
  // an exception, or even segfault" there, whatever the message (session
  // 34: lstsq of a NaN, MKL's argument check as an internal assertion,
  // pytorch#132693).
  auto nonfinite_input = [&](const exec::RunResult& r) {
    for (const auto& [name, t] : NodeInputs(program, d.node_index, r)) {
      if (t.defined() && (t.is_floating_point() || t.is_complex()) &&
          !at::isfinite(t).all().item<bool>()) {
        return true;
      }
    }
    return false;
  };
  if (const std::string asserted = RaisedWith(a, b, d, kInternalAssert);
      !asserted.empty() && !nonfinite_input(a) && !nonfinite_input(b)) {
    d.tier = "bug";
    d.wrong_side = asserted;
    d.witness = "internal-assert";
    const exec::RunResult& w = asserted == std::string(exec::TargetName(b.target)) ? b : a;
    d.reason = absl::StrCat(asserted == "both" ? "both sides" : asserted, " failed an internal "
                            "assertion of PyTorch's (", d.op, "): '",
                            w.nodes[d.node_index].error->message.substr(0, 200),
                            "'; PyTorch's own message calls that a bug to report");
    return;
  }
  Attribute(program, types, a, b, policy, d, plan);
  if (d.cls == DivergenceClass::kDtypeGap) {
    d.tier = "dtype_gap";
  } else if (std::optional<RuleMatch> m = MatchExpectedRule(program, types, a, b, policy, d)) {
    d.tier = "expected";
    d.expected_rule = m->rule;
    d.reason = m->reason + "; " + d.reason;
  } else if (d.wrong_side == "undecided") {
    d.tier = "divergence";
  } else {
    d.tier = "bug";
  }
}

}  // namespace

void Triage(const graph::Program& program, const ops::TypeEnv& types, const exec::RunResult& a,
            const exec::RunResult& b, const Policy& policy, Verdict& verdict,
            const exec::WitnessPlan* plan, TriageMemo* memo) {
  for (Divergence& d : verdict.divergences) {
    if (!d.root) continue;  // downstream divergences repeat their root's story
    std::optional<std::string> key;
    if (memo != nullptr && plan == nullptr) {
      // A gradient statement has a root per diverging input's gradient.
      key = TriageMemo::KeyOf(program, d.node_index,
                              absl::StrCat(verdict.target_a, " vs ", verdict.target_b, " #",
                                           d.output_index),
                              a, b);
    }
    if (key) {
      if (const Divergence* judged = memo->Find(*key)) {
        d = *judged;
        continue;
      }
    }
    TriageRoot(program, types, a, b, policy, d, plan);
    // A CUDA fault ends the worker: nothing of such a run is kept.
    if (key && !d.cuda_fault_in_triage && !CudaFaultAt(a, d) && !CudaFaultAt(b, d)) {
      memo->Put(*key, d);
    }
  }
  for (Divergence& d : verdict.divergences) {
    if (d.root) d.wrong_side = RelevantVariantSide(d);
  }
}

}  // namespace divfuzz::oracles
