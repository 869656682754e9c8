// Expected-by-policy rules. Each is judged on the root node's own inputs (not
// the program's) and, when it explains a divergence, moves it to the
// `expected` tier with the evidence; nothing is dropped. The rules are the
// table oracles/rules.def, one file each in oracles/rules/ (rule.h).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "exec/run_result.h"
#include "exec/target.h"
#include "graph/program.h"
#include "ops/infer.h"
#include "oracles/policy.h"
#include "oracles/verdict.h"

namespace divfuzz::oracles {

struct RuleMatch {
  std::string rule;    // a rule of oracles/rules.def
  std::string reason;  // the evidence, one line
};

// An oscillatory kernel's phase (the catalogue fact OpSpec::phase) on these
// inputs: at the largest finite argument, with the eps the kernel works in
// (f16/bf16 in float32) and the amplitude floor. The phase_rounding rule
// allows 2·eps·phase·max(|y|, floor) between the sides; the side check
// (attribution.cc) allows the same between a side and its witness.
// Defined with the rule, in oracles/rules/phase_rounding.cc.
struct PhaseBound {
  double phase = 0, eps = 0, floor = 0;
};
std::optional<PhaseBound> PhaseBoundOf(const ops::OpSpec& spec, const graph::Node& node,
                                       const std::map<std::string, at::Tensor>& inputs,
                                       graph::DType dtype);

// Whether a side ran with TF32: a CUDA side under the policy's --tf32, or
// one carrying its own +tf32 switch (a campaign rotating --cuda_variants).
// The forward's tf32 rule and the gradient rules' ProductEps read it.
bool RanTf32(exec::Target t, const Policy& policy);

std::optional<RuleMatch> MatchExpectedRule(const graph::Program& program, const ops::TypeEnv& types,
                                           const exec::RunResult& a, const exec::RunResult& b,
                                           const Policy& policy, const Divergence& d);

// The nondeterminism rule between two runs of one target; defined in
// oracles/rules/documented_nondeterminism.cc.

// For a node that gave two results for one program on `target`: whether
// PyTorch documents its kernel there as nondeterministic (rule
// documented_nondeterminism; nullopt when the rule is off or does not apply).
std::optional<RuleMatch> DocumentedNondeterminism(const graph::Node& node, exec::Target target,
                                                  const Policy& policy);

// Whether `node`'s results may change from one run to the next on some
// target, for one program: a kernel DocumentedNondeterminism lists, or one
// that writes its destinations by index where two indices may name one
// destination (put, index_put, index_copy, scatter, max_unpool), or one seen
// to vary on the GPU host's CPU (linalg_lstsq). A divergence
// at such a node need not show on every run: the reducer and the repros try
// it more than once.
bool MayVaryBetweenRuns(const graph::Node& node);

// Makes `d` a nondeterminism root: `target` gave two results for one program
// at d's node. Its tier is divergence, or expected under
// DocumentedNondeterminism (reason and rule say which). What the fuzzing
// harness and the reducer both call, so both classify alike.
void MarkNondeterminism(Divergence& d, const graph::Node& node, exec::Target target,
                        const Policy& policy, const std::string& note = "");

// The same for node `index` of `program`, where a gradient statement
// (graph/gradient.h) counts the backward kernels of the forward nodes before
// it: embedding, index_select, gather, interpolation, grid_sample, adaptive
// and 3-d pooling, padding, ctc_loss, ... add with atomics on CUDA
// (torch.use_deterministic_algorithms' list of backward kernels).
bool MayVaryBetweenRuns(const graph::Program& program, int index);
void MarkNondeterminism(Divergence& d, const graph::Program& program, int index,
                        exec::Target target, const Policy& policy, const std::string& note = "");

}  // namespace divfuzz::oracles
