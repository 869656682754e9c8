// The tolerance policy: per-dtype defaults (torch.testing.assert_close's
// table), per-op overrides, and which expected-by-policy rules apply. Ships as
// oracles/default_policy.json; `--policy FILE` replaces it.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "graph/dtype.h"
#include "oracles/tolerance.h"

namespace divfuzz::oracles {

struct Policy {
  std::map<graph::DType, Tolerance> defaults;
  // op ("aten::logdet") -> dtype -> tolerance
  std::map<std::string, std::map<graph::DType, Tolerance>> overrides;
  struct Rules {
    bool info_gated = true;             // *_ex outputs where info != 0
    bool index_ties = true;             // indices that select equal values or one destination twice
    bool float_to_int_casts = true;     // casts of non-finite or out-of-range values
    bool ill_conditioned = true;        // condition number beyond 1/eps of the dtype
    bool cancelling_reductions = true;  // error within the summation-order bound
    bool tf32 = true;                   // CUDA ran with TF32 / reduced-precision reductions
    bool documented_nondeterminism = true;  // CUDA kernels PyTorch documents as nondeterministic
  } rules;
  // Set by the campaign when the CUDA target runs with TF32 and
  // reduced-precision reductions on (off by default).
  bool cuda_tf32 = false;

  Tolerance For(const std::string& op, graph::DType dtype) const;
};

Policy DefaultPolicy();

// Parses a policy file; errors name the file and what was expected.
absl::StatusOr<Policy> ParsePolicy(const std::string& json_text, const std::string& filename);
absl::StatusOr<Policy> LoadPolicy(const std::string& path);

}  // namespace divfuzz::oracles
