// Findings at a gradient statement (graph/gradient.h). The statement's
// gradients are compared like any node's outputs; where they part, this finds
// the backward kernel that parts them (the first, in backward order, whose
// incoming gradients agree and whose outgoing ones differ, each side's
// backward rerun alone from its own forward inputs and incoming gradients),
// names it as PyTorch does (SinhBackward0) beside its forward op, and judges
// it against the float64 backward of that node from each side's own inputs,
// with the gradient rules of oracles/rules.def.
#pragma once

#include "exec/run_result.h"
#include "exec/witnesses.h"
#include "graph/program.h"
#include "ops/infer.h"
#include "oracles/policy.h"
#include "oracles/rules/gradient_rule.h"
#include "oracles/verdict.h"

namespace divfuzz::oracles {

// Whether d is a divergence at a gradient statement.
bool AtGradient(const graph::Program& program, const Divergence& d);

// Localizes, attributes and tiers d (a root at a gradient statement).
void TriageGradient(const graph::Program& program, const ops::TypeEnv& types,
                    const exec::RunResult& a, const exec::RunResult& b, const Policy& policy,
                    Divergence& d, const exec::WitnessPlan* plan);

// The first gradient rule of oracles/rules.def, in its order, that explains
// the divergence in `c`.
// Whether the backward of elementwise `node` on `target`, from `inputs`
// moved by 1, 2 or 4 ulps either way (the incoming gradients kept), leaves
// the tolerance of the float64 backward from the same moved inputs at
// `element`: the first move that does, nullopt when none does. A side
// within tolerance at the run's inputs but not beside them is right by luck
// (its formula keeps fewer digits than the tolerance), and is blamed too.
std::optional<int> NearbyMiss(const graph::Node& node, const std::map<std::string, at::Tensor>& inputs,
                              const std::vector<at::Tensor>& incoming, bool create_graph,
                              exec::Target target, const ops::TypeEnv& types, size_t out,
                              long long element, graph::DType dt, const Policy& policy,
                              const std::string& op);

std::optional<RuleMatch> FirstGradientRule(const rules::GradientContext& c, const Policy& policy);

// An error split in the backward of linear algebra or an FFT whose raising
// side read inf or NaN (its forward inputs or incoming gradients): the
// forward's nonfinite_inputs for the backward, its reason; nullopt otherwise.
std::optional<std::string> NonFiniteIntoLinalgBackward(
    const graph::Node& node, const std::map<std::string, at::Tensor>& inputs,
    const std::vector<at::Tensor>& incoming, const Policy& policy);

// Whether `judged` (output `out` of `node`'s backward on one side, from
// `inputs` and `incoming`, dtype `dt`) misses the CPU's float32 backward
// from the same values rounded to `dt`: a half grid_sampler's opmath witness
// (coordinates formed in float32, as a correct half kernel forms them).
// nullopt where the float32 backward does not run or does not compare, and
// for the grid gradient (out 1), which CUDA accumulates in the dtype.
std::optional<bool> MissesOpmathBackward(const graph::Node& node, const ops::TypeEnv& types,
                                         const std::map<std::string, at::Tensor>& inputs,
                                         const std::vector<at::Tensor>& incoming,
                                         const at::Tensor& judged, size_t out, graph::DType dt,
                                         const Policy& policy, const std::string& opname);

// A tolerance divergence blamed on one side is shown where that side alone
// misses its reference: among the `differing` elements (flat mask; undefined:
// all) where the blamed side is off its reference by more than the tolerance
// and the other is within it, the one the blamed side misses most. Moves
// d.element, the values, abs_error, references and errors there; false
// where no such element exists or d is already there.
bool ShowWhereTheBlamedSideAloneMisses(Divergence& d, bool a_blamed, const at::Tensor& mine_a,
                                       const at::Tensor& mine_b, const at::Tensor& ref_a,
                                       const at::Tensor& ref_b, const at::Tensor& differing,
                                       const Tolerance& tol, graph::DType dt);

// Whether a rule explains side `s`'s distance from its own float64 backward
// (`s` against the witness rounded to the dtype): such a side is not the
// wrong one of a pair blamed on both. With `exact` (the exact gradient from
// the side's inputs, NaN where unknown) where the float64 backward misses
// it: that backward is wrong or the side's own kernel (a float64 program's),
// and the side is excused only within tolerance of the exact gradient.
bool SideExcused(const rules::GradientContext& c, const rules::GradientSide& s,
                 const Policy& policy, const at::Tensor& exact = at::Tensor());

}  // namespace divfuzz::oracles
