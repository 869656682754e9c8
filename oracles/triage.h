// Turns a verdict's root divergences into argued findings: the wrong side
// (attribution.h), an expected-by-policy rule if one applies
// (expected_rules.h), the tier and the severity.
#pragma once

#include <string>

#include "exec/run_result.h"
#include "exec/witnesses.h"
#include "graph/program.h"
#include "ops/infer.h"
#include "oracles/policy.h"
#include "oracles/triage_memo.h"
#include "oracles/verdict.h"

namespace divfuzz::oracles {

// With a memo, a root it has judged before (oracles/triage_memo.h) takes
// that judgement instead of being judged again.
void Triage(const graph::Program& program, const ops::TypeEnv& types, const exec::RunResult& a,
            const exec::RunResult& b, const Policy& policy, Verdict& verdict,
            const exec::WitnessPlan* plan = nullptr, TriageMemo* memo = nullptr);

// d.wrong_side without the CUDA switches that do not change the root op's
// kernels ("cuda+cublaslt" blamed for embedding_renorm is "cuda"): Triage
// files every root under it, so a campaign rotating --cuda_variants makes one
// bucket per root cause and names a library only where it computed the op.
std::string RelevantVariantSide(const Divergence& d);

}  // namespace divfuzz::oracles
