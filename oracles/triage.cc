#include "oracles/triage.h"

#include "oracles/attribution.h"
#include "oracles/expected_rules.h"
#include "oracles/trigger.h"

namespace divfuzz::oracles {

void Triage(const graph::Program& program, const ops::TypeEnv& types, const exec::RunResult& a,
            const exec::RunResult& b, const Policy& policy, Verdict& verdict,
            const exec::WitnessPlan* plan) {
  for (Divergence& d : verdict.divergences) {
    if (!d.root) continue;  // downstream divergences repeat their root's story
    d.trigger = TriggerClass(program, a, d);
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
