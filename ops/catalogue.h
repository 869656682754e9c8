// The op catalogue: every op divfuzz generates, described once.
#pragma once

#include <vector>

#include "absl/strings/string_view.h"
#include "ops/op_spec.h"

namespace divfuzz::ops {

const std::vector<OpSpec>& Catalogue();

// By qualified name ("aten::add.Scalar", "aten::exp"); nullptr when unknown.
const OpSpec* FindOp(absl::string_view qualified);

// For a decomposition (kDecomposition), the name of its invariants: "qr",
// "svd", "eigh", "lu" or "eig"; empty for any other op or an unknown one.
absl::string_view DecompositionName(absl::string_view qualified);

}  // namespace divfuzz::ops
