// MatchExpectedRule: the rules of oracles/rules.def, one file each in
// oracles/rules/, tried in kTried's order.
#include "oracles/expected_rules.h"

#include <exception>
#include <iterator>
#include <string_view>

#include "exec/cuda_variants.h"
#include "ops/catalogue.h"
#include "oracles/attribution.h"
#include "oracles/rules/rule.h"

namespace divfuzz::oracles {

bool RanTf32(exec::Target t, const Policy& policy) {
  return t == exec::Target::kCuda && (policy.cuda_tf32 || exec::HasSwitch(t, "tf32"));
}

namespace {

struct TriedRule {
  std::string_view name;
  bool Policy::Rules::*on;  // the rule's policy switch
  std::optional<RuleMatch> (*match)(const rules::Context&);
};

#define DIVFUZZ_TRIED(name) TriedRule{#name, &Policy::Rules::name, &rules::name}
// The order the rules are tried in: the first that is on and explains the
// divergence names it, so a narrower rule comes before one that would also
// cover the case (inherited_difference, the catch-all, last). A list of its
// own: rules.def's order is the one reports and docs/ORACLE.md show.
constexpr TriedRule kTried[] = {
    DIVFUZZ_TRIED(info_gated),
    DIVFUZZ_TRIED(index_ties),
    DIVFUZZ_TRIED(float_to_int_casts),
    DIVFUZZ_TRIED(nonfinite_inputs),
    DIVFUZZ_TRIED(normwise_backward_error),
    DIVFUZZ_TRIED(ill_conditioned),
    DIVFUZZ_TRIED(extremal_values),
    DIVFUZZ_TRIED(cancelling_reductions),
    DIVFUZZ_TRIED(documented_inexact),
    DIVFUZZ_TRIED(normalization_statistics),
    DIVFUZZ_TRIED(backward_stable),
    DIVFUZZ_TRIED(reduced_precision_intermediate),
    DIVFUZZ_TRIED(transform_normwise),
    DIVFUZZ_TRIED(scan_carry),
    DIVFUZZ_TRIED(scalar_rounding),
    DIVFUZZ_TRIED(unspecified_strides),
    DIVFUZZ_TRIED(integer_division_by_zero),
    DIVFUZZ_TRIED(device_argument),
    DIVFUZZ_TRIED(documented_domain),
    DIVFUZZ_TRIED(phase_rounding),
    DIVFUZZ_TRIED(reference_upcast),
    DIVFUZZ_TRIED(tf32),
    DIVFUZZ_TRIED(forced_kernel_unsupported),
    DIVFUZZ_TRIED(documented_nondeterminism),  // matches nothing here: between runs only
    DIVFUZZ_TRIED(inherited_difference),
};
#undef DIVFUZZ_TRIED

// A rule added to rules.def but not to kTried would never be tried: the
// build fails instead.
constexpr std::string_view kDeclared[] = {
#define DIVFUZZ_GRADIENT_RULE(name, meaning)  // judged at gradients: oracles/gradient.cc
#define DIVFUZZ_RULE(name, meaning) #name,
#include "oracles/rules.def"
};

constexpr bool EachDeclaredRuleTriedOnce() {
  if (std::size(kTried) != std::size(kDeclared)) return false;
  for (std::string_view declared : kDeclared) {
    int found = 0;
    for (const TriedRule& t : kTried) found += t.name == declared ? 1 : 0;
    if (found != 1) return false;
  }
  return true;
}
static_assert(EachDeclaredRuleTriedOnce(),
              "every rule of oracles/rules.def needs its place in kTried, once");

}  // namespace

std::optional<RuleMatch> MatchExpectedRule(const graph::Program& program, const ops::TypeEnv& types,
                                           const exec::RunResult& a, const exec::RunResult& b,
                                           const Policy& policy, const Divergence& d) {
  if (d.node_index < 0 || static_cast<size_t>(d.node_index) >= program.nodes.size()) {
    return std::nullopt;
  }
  const graph::Node& node = program.nodes[d.node_index];
  const ops::OpSpec* spec = ops::FindOp(node.QualifiedName());
  if (spec == nullptr) return std::nullopt;
  // A side convicted by the documented meaning of its inputs (grid_sample's
  // NaN read as -1) is no matter of rounding, range or order.
  if (d.witness == "documented") return std::nullopt;
  rules::Context c{program, types, a, b, policy, d, node, *spec, {}, graph::DType::kF32};
  c.dtype = graph::ParseDType(d.dtype).value_or(graph::DType::kF32);
  for (auto& [name, t] : NodeInputs(program, d.node_index, a)) {
    c.inputs[name] = t.defined() && (at::isFloatingType(t.scalar_type())) ? rules::F64(t) : t;
  }
  for (const TriedRule& rule : kTried) {
    if (!(policy.rules.*rule.on)) continue;
    // A rule that cannot be evaluated does not apply; the later ones are
    // still asked (one rule's throw had hidden every rule after it).
    try {
      if (std::optional<RuleMatch> m = rule.match(c)) return m;
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

}  // namespace divfuzz::oracles
