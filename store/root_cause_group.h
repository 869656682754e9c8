// Root-cause groups: one mechanism files many buckets (the overloads, in-place
// variants and dtypes of one op: aten::add.Tensor f16, aten::add.Scalar bf16,
// aten::add_ f32 ...). A group is every bucket with the same key, computed
// from its index entry alone:
//
//   op base name   root_op without "aten::", the overload after '.', and the
//                  trailing '_' of an in-place variant (dtypes merge)
//   class, tier, wrong side
//   decided by     "rule:<detail.expected_rule>" when a policy rule applied,
//                  else "witness:<detail.witness>" (the reference that decided
//                  the blame: exact, cpu-f64, cuda-f64, cpu-scalar, none),
//                  else "" (stores written before the oracle named witnesses)
//   trigger        detail.trigger, the class of the root's inputs (nan, inf,
//                  near_max, subnormal, int64_range, ordinary); "ordinary"
//                  when missing
//
// The store writes the key's Id() into each index entry's "group" field.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace divfuzz::store {

struct RootCauseKey {
  std::string op;          // "add"
  std::string cls;         // "tolerance"
  std::string tier;        // "bug"
  std::string wrong_side;  // "cuda"
  std::string decided_by;  // "rule:ill_conditioned", "witness:cpu-f64" or ""
  std::string trigger;     // "ordinary"

  // Stable, one line, '|'-separated like a signature:
  // "add|tolerance|bug|cuda|witness:cpu-f64|ordinary".
  std::string Id() const;
  // For people: "add: tolerance (bug), cuda wrong, witness cpu-f64, ordinary inputs".
  std::string Label() const;
};

// "aten::add.Tensor" -> "add", "aten::add_" -> "add", "aten::__and__.Tensor"
// -> "__and__"; other namespaces are kept ("myops::op.x" -> "myops::op").
std::string OpBaseName(absl::string_view root_op);

// The key of an index entry (nlohmann::json or ordered_json); missing fields
// read as empty, a missing trigger as "ordinary".
template <typename Json>
RootCauseKey RootCauseKeyOf(const Json& entry);

extern template RootCauseKey RootCauseKeyOf(const nlohmann::json&);
extern template RootCauseKey RootCauseKeyOf(const nlohmann::ordered_json&);

}  // namespace divfuzz::store
