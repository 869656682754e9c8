// The tolerance policy: per-dtype defaults (torch.testing.assert_close's
// table), per-op overrides, and which expected-by-policy rules apply. Ships as
// oracles/default_policy.json; `--policy FILE` replaces it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "graph/dtype.h"
#include "oracles/tolerance.h"

namespace divfuzz::oracles {

struct Policy {
  std::map<graph::DType, Tolerance> defaults;
  // op ("aten::logdet") -> dtype -> tolerance
  std::map<std::string, std::map<graph::DType, Tolerance>> overrides;
  // One switch per rule of oracles/rules.def, all on by default.
  struct Rules {
#define DIVFUZZ_RULE(name, meaning) bool name = true;
#include "oracles/rules.def"
  } rules;
  // Set by the campaign when the CUDA target runs with TF32 and
  // reduced-precision reductions on (off by default).
  bool cuda_tf32 = false;

  Tolerance For(const std::string& op, graph::DType dtype) const;
};

Policy DefaultPolicy();

// The rules of oracles/rules.def in order, with what each covers.
struct RuleInfo {
  const char* name;
  const char* meaning;
};
const std::vector<RuleInfo>& AllRules();
// The switch of a rule by name; nullptr for an unknown name.
bool* RuleSwitch(Policy::Rules& rules, absl::string_view name);
const bool* RuleSwitch(const Policy::Rules& rules, absl::string_view name);

// Parses a policy file; errors name the file and what was expected.
absl::StatusOr<Policy> ParsePolicy(const std::string& json_text, const std::string& filename);
absl::StatusOr<Policy> LoadPolicy(const std::string& path);

}  // namespace divfuzz::oracles
