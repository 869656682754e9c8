// Turns a verdict's root divergences into argued findings: the wrong side
// (attribution.h), an expected-by-policy rule if one applies
// (expected_rules.h), the tier and the severity.
#pragma once

#include "exec/run_result.h"
#include "exec/witnesses.h"
#include "graph/program.h"
#include "ops/infer.h"
#include "oracles/policy.h"
#include "oracles/verdict.h"

namespace divfuzz::oracles {

void Triage(const graph::Program& program, const ops::TypeEnv& types, const exec::RunResult& a,
            const exec::RunResult& b, const Policy& policy, Verdict& verdict,
            const exec::WitnessPlan* plan = nullptr);

}  // namespace divfuzz::oracles
