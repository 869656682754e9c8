// What the oracle concludes about one program run on two targets. Torch-free
// so the findings store, emitters and reports can use it without libtorch.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace divfuzz::oracles {

enum class DivergenceClass {
  kCrash,
  kHang,
  kErrorSplit,     // one side raises
  kDtypeGap,       // an error split whose message says the dtype is not implemented
  kMetaSplit,      // shape or dtype differ
  kClassSplit,     // per element: finite, +inf, -inf, NaN differ
  kExactMismatch,  // integer or bool outputs differ
  kTolerance,      // both finite, beyond the tolerance policy
  kNondeterminism,
};

absl::string_view ClassName(DivergenceClass c);

struct Divergence {
  DivergenceClass cls = DivergenceClass::kTolerance;
  int node_index = -1;     // into Program::nodes; -1 when not tied to a node
  int output_index = 0;    // which result of that node
  // A decomposition compared through its invariants (oracles/invariants.h):
  // which invariant the sides differ in, and so what element, value_a/b and
  // reference_a/b index and show; -1 where the raw output was compared.
  int invariant = -1;
  std::string value;       // the SSA name of the diverging output
  std::string op;          // qualified op of the node ("aten::logdet")
  // dtype name of the output ("f32"); of the op's input where the output's
  // dtype is not the op's choice (compare.cc's LabelDType: a decomposition,
  // complex values made of real ones)
  std::string dtype;
  bool root = false;       // its inputs agree on both targets
  long long element = -1;  // flat index of the first differing element
  int component = -1;      // complex outputs: 0 real part, 1 imaginary part of that element
  std::string value_a;     // target A's element (or error message, or shape/dtype)
  std::string value_b;
  double abs_error = 0;  // |a - b| at that element (tolerance class)
  double allowed = 0;    // atol + rtol * |b| there
  std::string detail;    // one human-readable line

  // Triage (oracles/triage.h): who is wrong, how sure, how bad.
  std::string wrong_side = "undecided";  // cpu, cuda, both, undecided
  std::string tier = "divergence";       // bug, divergence, expected, dtype_gap
  std::string expected_rule;             // the policy rule that applied, if any
  std::string reason;                    // the evidence for wrong_side or the rule
  std::string reference_a;               // float64 reference at the element, from A's inputs
  std::string reference_b;               // ... and from B's inputs
  double ulp_a = 0, ulp_b = 0;           // each side's error against its reference, in ULPs
  double rel_a = 0, rel_b = 0;           // ... and relative
  // The witness that decided wrong_side (exec/witnesses.h): "exact", "cpu-f64",
  // "cpu-f64+cuda-f64" (two float64 implementations agree), "documented" (grid_sample's
  // documented meaning of a non-finite coordinate), or "none".
  std::string witness = "none";
  // The trigger class of the root's inputs: nan, inf, near_max, subnormal,
  // int64_range or ordinary (the most unusual one present).
  std::string trigger = "ordinary";
  bool scalar_rounding = false;  // a side matches only with scalars rounded to its dtype
  bool inherited = false;  // each side matches a witness from its own inputs: right on both
  bool rounding_free = false;    // the exact witness's elimination had no rounding at all
  // At a gradient statement (oracles/gradient.h): the forward node whose
  // backward kernel parts the sides (-1: not localized) and its op; `op` then
  // names the backward node as PyTorch does ("SinhBackward0").
  int backward_of = -1;
  std::string forward_op;
  // The CUDA context failed while the oracle reran kernels to judge this: the
  // fault predates the rerun (session 35: an elementwise LogsumexpBackward0
  // "raised" an illegal memory access), so nothing here is judged and the
  // worker restarts as after any CUDA fault.
  bool cuda_fault_in_triage = false;
};

// Severity ranks: crash > hang > bug-tier splits > bug-tier tolerance >
// divergence > dtype gaps > expected. Lower rank is more severe.
int SeverityRank(const Divergence& d);
absl::string_view SeverityName(int rank);

struct Verdict {
  std::string target_a;
  std::string target_b;
  std::vector<Divergence> divergences;  // in node order; roots flagged
  bool Diverged() const { return !divergences.empty(); }
  std::vector<const Divergence*> Roots() const;
};

// Bucket signature of a finding: root op, dtype, class, wrong side.
std::string Signature(const Divergence& d);

}  // namespace divfuzz::oracles
