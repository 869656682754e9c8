#include "oracles/triage.h"

#include "oracles/attribution.h"
#include "oracles/expected_rules.h"
#include "oracles/gradient.h"
#include "oracles/trigger.h"

namespace divfuzz::oracles {
namespace {

bool CudaFaultAt(const exec::RunResult& r, const Divergence& d) {
  if (d.node_index < 0 || static_cast<size_t>(d.node_index) >= r.nodes.size()) return false;
  const auto& e = r.nodes[d.node_index].error;
  return e && e->kind == exec::NodeError::Kind::kCudaFatal;
}

}  // namespace

void Triage(const graph::Program& program, const ops::TypeEnv& types, const exec::RunResult& a,
            const exec::RunResult& b, const Policy& policy, Verdict& verdict,
            const exec::WitnessPlan* plan) {
  for (Divergence& d : verdict.divergences) {
    if (!d.root) continue;  // downstream divergences repeat their root's story
    d.trigger = TriggerClass(program, a, d);
    if (CudaFaultAt(a, d) || CudaFaultAt(b, d)) {
      // A CUDA fault surfaces at the next synchronizing node, not always the
      // one that launched it: only the campaign's replay with
      // CUDA_LAUNCH_BLOCKING=1 can say which node (it files that bucket).
      d.tier = "divergence";
      d.wrong_side = "undecided";
      d.reason = "a CUDA fault (an asynchronous error) surfaced here; the node that caused it "
                 "is known only from a replay with CUDA_LAUNCH_BLOCKING=1";
      continue;
    }
    if (AtGradient(program, d)) {
      TriageGradient(program, types, a, b, policy, d, plan);
      continue;
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
}

}  // namespace divfuzz::oracles
