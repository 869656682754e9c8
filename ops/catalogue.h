// The op catalogue: every op divfuzz generates, described once.
#pragma once

#include <vector>

#include "absl/strings/string_view.h"
#include "ops/op_spec.h"

namespace divfuzz::ops {

const std::vector<OpSpec>& Catalogue();

// By qualified name ("aten::add.Scalar", "aten::exp"); nullptr when unknown.
const OpSpec* FindOp(absl::string_view qualified);
// The first catalogue entry of any overload of `name` ("aten::ctc_loss"), for
// facts every overload shares; nullptr when none.
const OpSpec* FindAnyOverload(absl::string_view name);

// For a decomposition (kDecomposition), the name of its invariants: "qr",
// "svd", "eigh", "lu" or "eig"; empty for any other op or an unknown one.
absl::string_view DecompositionName(absl::string_view qualified);

}  // namespace divfuzz::ops
